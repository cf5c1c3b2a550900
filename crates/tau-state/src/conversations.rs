//! Conversations: which session a channel's conversation (a web page's tab, a Telegram
//! chat, a routine's questions) talks to, so a restart finds them again.

use jiff::Timestamp;
use rusqlite::params;

use crate::sql::Row;
use tau_protocol::{PersonName, SessionId};

use crate::error::StateError;
use crate::handles::Conversations;

/// One conversation of a channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conversation {
    pub channel: String,
    /// What the channel calls it (a chat id, the web session's own id).
    pub key: String,
    pub session: SessionId,
    pub created_at: Timestamp,
}

/// What the key of a routine's conversation on its `ask` channel starts with:
/// `routine:NAME`, and `routine:NAME@OWNER` for a routine a person of `[[people]]` owns.
const ROUTINE_KEY: &str = "routine:";

/// The key of routine `name`'s conversation on the channel it asks on. An owned routine's
/// names its owner: a conversation never changes hands, so a routine given to another
/// person gets a conversation of theirs, and the one before stays its person's.
pub fn routine_key(name: &str, owner: Option<&PersonName>) -> String {
    match owner {
        Some(owner) => format!("{ROUTINE_KEY}{name}@{owner}"),
        None => format!("{ROUTINE_KEY}{name}"),
    }
}

/// The routine whose conversation has `key`, if it is one's (a routine name has no `@`).
pub fn routine_of_key(key: &str) -> Option<&str> {
    let rest = key.strip_prefix(ROUTINE_KEY)?;
    Some(rest.split_once('@').map_or(rest, |(name, _)| name))
}

/// What the session a routine's prompt action runs in when it asks nowhere starts with:
/// `routine-NAME`.
pub const ROUTINE_SESSION_PREFIX: &str = "routine-";

impl Conversation {
    /// The routine whose conversation this is: a routine's, never one of a person's chats.
    pub fn routine(&self) -> Option<&str> {
        routine_of_key(&self.key)
    }
}

const COLUMNS: &str = "channel, key, session, created_at";

fn read_row(row: &Row<'_>) -> rusqlite::Result<(String, String, String, String)> {
    Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
}

fn parse(
    (channel, key, session, created_at): (String, String, String, String),
) -> Result<Conversation, StateError> {
    let bad = |why: String| StateError::unreadable(format!("conversation {channel}/{key}"), why);
    Ok(Conversation {
        session: SessionId::parse(&session).map_err(|e| bad(e.to_string()))?,
        created_at: created_at.parse().map_err(|e| bad(format!("{e}")))?,
        channel: channel.clone(),
        key: key.clone(),
    })
}

impl Conversations {
    /// A new conversation `(channel, key)` talking to the new session `session`; `None`
    /// (nothing written) when the key or the session is taken already: by a conversation,
    /// or by a stored session that belongs to none (`tau chat --session`). An `INSERT` that
    /// writes nothing on a collision with any key, so a collision is never read back as
    /// the new conversation.
    pub fn create_conversation(
        &self,
        channel: &str,
        key: &str,
        session: &SessionId,
    ) -> Result<Option<Conversation>, StateError> {
        let created_at = Timestamp::now();
        let created = self.db.write(|tx| {
            let stored = tx
                .query_optional(
                    "SELECT 1 FROM sessions WHERE id = ?1",
                    params![session.as_str()],
                    |_| Ok(()),
                )?
                .is_some();
            if stored {
                return Ok(false);
            }
            let inserted = tx.execute(
                "INSERT INTO conversations (channel, key, session, created_at) \
                 VALUES (?1, ?2, ?3, ?4) ON CONFLICT DO NOTHING",
                params![channel, key, session.as_str(), created_at.to_string()],
            )?;
            Ok(inserted == 1)
        })?;
        Ok(created.then(|| Conversation {
            channel: channel.to_owned(),
            key: key.to_owned(),
            session: session.clone(),
            created_at,
        }))
    }

    /// The conversation `(channel, key)`, created with `session` when it is new. A session
    /// belongs to one conversation: giving one that another conversation has is an error.
    pub fn find_or_create_conversation(
        &self,
        channel: &str,
        key: &str,
        session: &SessionId,
    ) -> Result<Conversation, StateError> {
        let row = self.db.write(|tx| {
            tx.execute(
                "INSERT INTO conversations (channel, key, session, created_at) \
                 VALUES (?1, ?2, ?3, ?4) ON CONFLICT (channel, key) DO NOTHING",
                params![channel, key, session.as_str(), Timestamp::now().to_string()],
            )?;
            tx.query_optional(
                &format!("SELECT {COLUMNS} FROM conversations WHERE channel = ?1 AND key = ?2"),
                params![channel, key],
                read_row,
            )
        })?;
        parse(row.ok_or_else(|| StateError::Vanished {
            channel: channel.to_owned(),
            key: key.to_owned(),
        })?)
    }

    /// The conversation a session belongs to, if it is one.
    pub fn conversation_of(&self, session: &SessionId) -> Result<Option<Conversation>, StateError> {
        self.db
            .read(|c| {
                c.query_optional(
                    &format!("SELECT {COLUMNS} FROM conversations WHERE session = ?1"),
                    params![session.as_str()],
                    read_row,
                )
            })?
            .map(parse)
            .transpose()
    }

    /// Deletes the conversation that talks to `session`, the session and all it holds
    /// (messages, agent state), in one transaction; false when there was no such
    /// conversation. Its questions are not touched: the caller refuses while one waits.
    pub fn delete_conversation(&self, session: &SessionId) -> Result<bool, StateError> {
        self.db.write(|tx| {
            let deleted = tx.execute(
                "DELETE FROM conversations WHERE session = ?1",
                params![session.as_str()],
            )?;
            tx.execute(
                "DELETE FROM sessions WHERE id = ?1",
                params![session.as_str()],
            )?;
            Ok(deleted == 1)
        })
    }

    /// Every conversation of `channel`, oldest first.
    pub fn conversations_of(&self, channel: &str) -> Result<Vec<Conversation>, StateError> {
        let rows = self.db.read(|c| {
            c.query_map(&format!(
                "SELECT {COLUMNS} FROM conversations WHERE channel = ?1 ORDER BY created_at, key"
            ), params![channel], read_row)
        })?;
        rows.into_iter().map(parse).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn an_owned_routine_s_key_names_its_owner_and_reads_back_its_routine() {
        let ana = PersonName::parse("ana").unwrap();
        assert_eq!(routine_key("porch", None), "routine:porch");
        assert_eq!(routine_key("porch", Some(&ana)), "routine:porch@ana");
        assert_eq!(routine_of_key("routine:porch"), Some("porch"));
        assert_eq!(routine_of_key("routine:porch@ana"), Some("porch"));
        assert_eq!(routine_of_key("porch@ana"), None);
    }

    #[test]
    fn a_conversation_keeps_its_session() {
        for dir in crate::test_stores::stores() {
            let store = dir.open();
            let first = SessionId::parse("web-a").unwrap();
            let made = store
                .conversations()
                .find_or_create_conversation("web", "a", &first)
                .unwrap();
            let other = SessionId::parse("web-b").unwrap();
            let again = store
                .conversations()
                .find_or_create_conversation("web", "a", &other)
                .unwrap();
            assert_eq!(made, again, "the first session stays");
            assert_eq!(again.session, first);
            assert_eq!(
                store.conversations().conversation_of(&first).unwrap(),
                Some(made.clone())
            );
            assert_eq!(store.conversations().conversation_of(&other).unwrap(), None);
            store
                .conversations()
                .find_or_create_conversation(
                    "telegram",
                    "42",
                    &SessionId::parse("telegram-42").unwrap(),
                )
                .unwrap();
            assert_eq!(
                store.conversations().conversations_of("web").unwrap(),
                vec![made]
            );
            assert!(
                store
                    .conversations()
                    .find_or_create_conversation("telegram", "43", &first)
                    .is_err(),
                "a session belongs to one conversation"
            );
        }
    }

    #[test]
    fn a_new_conversation_never_takes_a_used_key_or_session() {
        for dir in crate::test_stores::stores() {
            let store = dir.open();
            let first = SessionId::parse("web-a").unwrap();
            let made = store
                .conversations()
                .create_conversation("web", "web-a", &first)
                .unwrap()
                .expect("a fresh key and session");
            assert_eq!(
                store.conversations().conversations_of("web").unwrap(),
                vec![made.clone()]
            );

            let other = SessionId::parse("web-b").unwrap();
            assert_eq!(
                store
                    .conversations()
                    .create_conversation("web", "web-a", &other)
                    .unwrap(),
                None,
                "the key is taken"
            );
            assert_eq!(
                store
                    .conversations()
                    .create_conversation("telegram", "7", &first)
                    .unwrap(),
                None,
                "the session is another conversation's"
            );
            let chat = SessionId::parse("web-c").unwrap();
            store.sessions().ensure_session(&chat).unwrap();
            assert_eq!(
                store
                    .conversations()
                    .create_conversation("web", "web-c", &chat)
                    .unwrap(),
                None,
                "a stored session that belongs to no conversation is taken too"
            );
            assert_eq!(
                store.conversations().conversations_of("web").unwrap(),
                vec![made]
            );
            assert_eq!(
                store.conversations().conversations_of("telegram").unwrap(),
                vec![]
            );
            assert_eq!(store.conversations().conversation_of(&other).unwrap(), None);
            assert_eq!(store.conversations().conversation_of(&chat).unwrap(), None);
        }
    }

    #[test]
    fn a_tampered_row_is_an_error() {
        for dir in crate::test_stores::stores() {
            let store = dir.open();
            store
            .write(|tx| {
                tx.execute(
                    "INSERT INTO conversations VALUES ('web', 'k', '../etc', '2026-01-01T00:00:00Z')", params![],
                )?;
                Ok(())
            })
            .unwrap();
            assert!(store.conversations().conversations_of("web").is_err());
        }
    }
}
