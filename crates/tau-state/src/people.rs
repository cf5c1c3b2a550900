//! What `state.db` keeps of the household's people: each person's own TauBar token and
//! (only as SHA-256, so a copy of the file signs nobody in; an invite is a passkey
//! enrollment, `passkeys.rs`), and
//! whose each conversation is (a grant names its person in its own row). The people themselves are `tau.toml`'s
//! `[[people]]`; these tables only name them, keyed by the ids the other tables use.

use jiff::Timestamp;
use rusqlite::params;
use tau_protocol::{PersonName, SessionId};

use crate::error::StateError;
use crate::handles::People;

/// Step 13 of the schema: people's tokens, and the person of a conversation
/// (beside its table, so a home from before keeps every row as it was: a conversation
/// without a person here is the first person's).
pub(crate) const PEOPLE: &str = "
CREATE TABLE person_tokens (
    person TEXT PRIMARY KEY,
    sha256 TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL
);
CREATE TABLE conversation_people (
    session TEXT PRIMARY KEY,
    person TEXT NOT NULL
);
";

fn stored_person(text: &str, what: &str) -> Result<PersonName, StateError> {
    PersonName::parse(text).map_err(|e| StateError::unreadable(what.to_owned(), e))
}

impl People {
    /// Keeps `sha256` as `person`'s TauBar token, replacing the one before.
    pub fn set_token(
        &self,
        person: &PersonName,
        sha256: &str,
        now: Timestamp,
    ) -> Result<(), StateError> {
        self.db.write(|tx| {
            tx.execute(
                "INSERT INTO person_tokens (person, sha256, created_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT (person) DO UPDATE SET sha256 = excluded.sha256,
                 created_at = excluded.created_at",
                params![person.as_str(), sha256, now.to_string()],
            )?;
            Ok(())
        })
    }

    /// Ends `person`'s token; false when they had none.
    pub fn revoke_token(&self, person: &PersonName) -> Result<bool, StateError> {
        self.db.write(|tx| {
            Ok(tx.execute(
                "DELETE FROM person_tokens WHERE person = ?1",
                params![person.as_str()],
            )? > 0)
        })
    }

    /// Whether `person` holds a token of their own now.
    pub fn has_token(&self, person: &PersonName) -> Result<bool, StateError> {
        self.db.read(|c| {
            c.exists(
                "SELECT 1 FROM person_tokens WHERE person = ?1",
                params![person.as_str()],
            )
        })
    }

    /// Whose token hashes to `sha256`, if anyone's.
    pub fn person_of_token(&self, sha256: &str) -> Result<Option<PersonName>, StateError> {
        let name = self.db.read(|c| {
            c.query_optional(
                "SELECT person FROM person_tokens WHERE sha256 = ?1",
                params![sha256],
                |row| row.get::<_, String>(0),
            )
        })?;
        name.map(|n| stored_person(&n, "a person's token"))
            .transpose()
    }

    /// Records `person` as whose conversation `session` is. The first one stays: a
    /// conversation never changes hands.
    pub fn claim_conversation(
        &self,
        session: &SessionId,
        person: &PersonName,
    ) -> Result<PersonName, StateError> {
        let name = self.db.write(|tx| {
            tx.execute(
                "INSERT INTO conversation_people (session, person) VALUES (?1, ?2)
                 ON CONFLICT (session) DO NOTHING",
                params![session.as_str(), person.as_str()],
            )?;
            tx.query_row(
                "SELECT person FROM conversation_people WHERE session = ?1",
                params![session.as_str()],
                |row| row.get::<_, String>(0),
            )
        })?;
        stored_person(&name, "a conversation's person")
    }

    /// Whose conversation `session` is, when it was recorded.
    pub fn conversation_person(
        &self,
        session: &SessionId,
    ) -> Result<Option<PersonName>, StateError> {
        let name = self.db.read(|c| {
            c.query_optional(
                "SELECT person FROM conversation_people WHERE session = ?1",
                params![session.as_str()],
                |row| row.get::<_, String>(0),
            )
        })?;
        name.map(|n| stored_person(&n, "a conversation's person"))
            .transpose()
    }

    /// Forgets whose a deleted conversation was.
    pub fn forget_conversation(&self, session: &SessionId) -> Result<(), StateError> {
        self.db.write(|tx| {
            tx.execute(
                "DELETE FROM conversation_people WHERE session = ?1",
                params![session.as_str()],
            )?;
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::StateDb;
    use pretty_assertions::assert_eq;

    fn people() -> (tempfile::TempDir, People) {
        let dir = tempfile::tempdir().unwrap();
        let db = StateDb::open(&dir.path().join("state.db")).unwrap();
        (dir, db.people())
    }

    fn name(text: &str) -> PersonName {
        PersonName::parse(text).unwrap()
    }

    #[test]
    fn a_new_token_replaces_the_old_and_a_revoke_ends_it() {
        let (_dir, people) = people();
        let now = Timestamp::UNIX_EPOCH;
        people.set_token(&name("ana"), "h1", now).unwrap();
        people.set_token(&name("bob"), "h2", now).unwrap();
        assert_eq!(people.person_of_token("h1").unwrap(), Some(name("ana")));
        people.set_token(&name("ana"), "h3", now).unwrap();
        assert_eq!(people.person_of_token("h1").unwrap(), None);
        assert_eq!(people.person_of_token("h3").unwrap(), Some(name("ana")));
        assert!(people.revoke_token(&name("ana")).unwrap());
        assert!(!people.revoke_token(&name("ana")).unwrap());
        assert_eq!(people.person_of_token("h3").unwrap(), None);
        assert_eq!(people.person_of_token("h2").unwrap(), Some(name("bob")));
    }

    #[test]
    fn a_conversation_keeps_its_first_person() {
        let (_dir, people) = people();
        let session = SessionId::parse("web-1").unwrap();
        assert_eq!(people.conversation_person(&session).unwrap(), None);
        assert_eq!(
            people.claim_conversation(&session, &name("ana")).unwrap(),
            name("ana")
        );
        assert_eq!(
            people.claim_conversation(&session, &name("bob")).unwrap(),
            name("ana")
        );
        assert_eq!(
            people.conversation_person(&session).unwrap(),
            Some(name("ana"))
        );
        people.forget_conversation(&session).unwrap();
        assert_eq!(people.conversation_person(&session).unwrap(), None);
    }
}
