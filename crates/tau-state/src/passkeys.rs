//! Passkeys and what TauBar's sign-in keeps: one-time enrollment secrets, each person's
//! passkeys (the relying party's credential as JSON text), signed-in sessions and the
//! WebAuthn ceremonies under way. Secrets and session ids are kept only as their SHA-256;
//! every one-time thing is taken by a compare-and-set, so it is used at most once.
//!
//! It knows what is stored, not what it means: `tau-web` runs the ceremonies and checks
//! the assertions. Times are seconds since the epoch, handed in.

use rusqlite::params;
use sha2::{Digest, Sha256};

use crate::db::StateDb;
use crate::error::StateError;

/// Schema step 11: the passkey tables.
pub(crate) const PASSKEYS: &str = "
CREATE TABLE IF NOT EXISTS passkey_enrollments (
    secret_sha256 TEXT PRIMARY KEY,
    person TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    used_at INTEGER
);
CREATE TABLE IF NOT EXISTS passkeys (
    id TEXT PRIMARY KEY,
    person TEXT NOT NULL,
    credential TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    last_used_at INTEGER
);
CREATE INDEX IF NOT EXISTS passkeys_person ON passkeys (person);
CREATE TABLE IF NOT EXISTS web_sessions (
    id_sha256 TEXT PRIMARY KEY,
    person TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS passkey_ceremonies (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    person TEXT,
    approval_id TEXT,
    state TEXT NOT NULL,
    expires_at INTEGER NOT NULL,
    used_at INTEGER
);
";

/// The hex SHA-256 of a secret: what is kept instead of it.
pub fn secret_sha256(secret: &str) -> String {
    Sha256::digest(secret.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Passkeys, enrollment secrets, TauBar's signed-in sessions and ceremonies under way.
#[derive(Clone)]
pub struct Passkeys {
    db: StateDb,
}

impl std::fmt::Debug for Passkeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Passkeys").field(&self.db).finish()
    }
}

impl StateDb {
    pub fn passkeys(&self) -> Passkeys {
        Passkeys { db: self.clone() }
    }
}

/// One stored passkey.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredPasskey {
    /// The credential's id (base64url), as the authenticator named it.
    pub id: String,
    pub person: String,
    /// The relying party's credential, as JSON text.
    pub credential: String,
    pub created_at: i64,
    pub last_used_at: Option<i64>,
}

/// What a ceremony under way is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CeremonyKind {
    /// A new passkey for a person who holds an enrollment secret.
    Register,
    /// Signing in to TauBar.
    SignIn,
    /// Approving one question.
    StepUp,
}

impl CeremonyKind {
    fn as_str(self) -> &'static str {
        match self {
            Self::Register => "register",
            Self::SignIn => "sign_in",
            Self::StepUp => "step_up",
        }
    }
}

/// A ceremony under way, taken once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ceremony {
    pub person: Option<String>,
    pub approval_id: Option<String>,
    /// The relying party's state for it, as JSON text.
    pub state: String,
    pub expires_at: i64,
}

impl Passkeys {
    /// Keeps an enrollment secret for `person` (only its hash) until `expires_at`.
    pub fn add_enrollment(
        &self,
        secret: &str,
        person: &str,
        now: i64,
        expires_at: i64,
    ) -> Result<(), StateError> {
        let hash = secret_sha256(secret);
        self.db.write(|tx| {
            tx.execute(
                "INSERT INTO passkey_enrollments (secret_sha256, person, created_at, expires_at)
                 VALUES (?1, ?2, ?3, ?4)",
                params![hash, person, now, expires_at],
            )?;
            Ok(())
        })
    }

    /// The person an unused, unexpired enrollment secret is for; it stays usable.
    pub fn enrollment_person(&self, secret: &str, now: i64) -> Result<Option<String>, StateError> {
        let hash = secret_sha256(secret);
        self.db.read(|c| {
            c.query_optional(
                "SELECT person FROM passkey_enrollments
                 WHERE secret_sha256 = ?1 AND used_at IS NULL AND expires_at > ?2",
                params![hash, now],
                |row| row.get(0),
            )
        })
    }

    /// Uses an enrollment secret up and keeps the passkey it enrolled, in one
    /// transaction: `false` (nothing kept) when the secret was used, expired or unknown,
    /// or the passkey is known already.
    pub fn enroll(
        &self,
        secret: &str,
        passkey: &StoredPasskey,
        now: i64,
    ) -> Result<bool, StateError> {
        let hash = secret_sha256(secret);
        self.db.write_durable(|tx| {
            let taken = tx.execute(
                "UPDATE passkey_enrollments SET used_at = ?3
                 WHERE secret_sha256 = ?1 AND person = ?2 AND used_at IS NULL AND expires_at > ?3",
                params![hash, passkey.person, now],
            )?;
            if taken != 1 {
                return Ok(false);
            }
            let added = tx.execute(
                "INSERT INTO passkeys (id, person, credential, created_at)
                 VALUES (?1, ?2, ?3, ?4) ON CONFLICT DO NOTHING",
                params![passkey.id, passkey.person, passkey.credential, now],
            )?;
            Ok(added == 1)
        })
    }

    /// Every person's passkeys (`person` = `None`) or one person's, oldest first.
    pub fn list(&self, person: Option<&str>) -> Result<Vec<StoredPasskey>, StateError> {
        self.db.read(|c| {
            c.query_map(
                "SELECT id, person, credential, created_at, last_used_at FROM passkeys
                 WHERE CAST(?1 AS TEXT) IS NULL OR person = ?1 ORDER BY created_at, id",
                params![person],
                |row| {
                    Ok(StoredPasskey {
                        id: row.get(0)?,
                        person: row.get(1)?,
                        credential: row.get(2)?,
                        created_at: row.get(3)?,
                        last_used_at: row.get(4)?,
                    })
                },
            )
        })
    }

    /// Whether anyone has a passkey: until someone has, no step asks for one.
    pub fn any(&self) -> Result<bool, StateError> {
        self.db
            .read(|c| c.exists("SELECT 1 FROM passkeys LIMIT 1", params![]))
    }

    /// Removes `person`'s passkey `id`; `false` when they have none by that id.
    pub fn remove(&self, person: &str, id: &str) -> Result<bool, StateError> {
        self.db.write_durable(|tx| {
            Ok(tx.execute(
                "DELETE FROM passkeys WHERE id = ?1 AND person = ?2",
                params![id, person],
            )? == 1)
        })
    }

    /// Forgets everything that lets `person` in or approves as them: their passkeys,
    /// signed-in sessions, unused enrollment links and ceremonies under way (a person
    /// removed from the household). How many rows went.
    pub fn forget_person(&self, person: &str) -> Result<usize, StateError> {
        self.db.write_durable(|tx| {
            let mut gone = 0;
            for table in [
                "passkeys",
                "web_sessions",
                "passkey_enrollments",
                "passkey_ceremonies",
            ] {
                gone += tx.execute(
                    &format!("DELETE FROM {table} WHERE person = ?1"),
                    params![person],
                )?;
            }
            Ok(gone)
        })
    }

    /// Replaces passkey `id`'s credential after a use (its counter moved on).
    pub fn used(&self, id: &str, credential: &str, now: i64) -> Result<(), StateError> {
        self.db.write(|tx| {
            tx.execute(
                "UPDATE passkeys SET credential = ?2, last_used_at = ?3 WHERE id = ?1",
                params![id, credential, now],
            )?;
            Ok(())
        })
    }

    /// Keeps a signed-in session (only its id's hash) for `person` until `expires_at`.
    pub fn add_session(
        &self,
        id: &str,
        person: &str,
        now: i64,
        expires_at: i64,
    ) -> Result<(), StateError> {
        let hash = secret_sha256(id);
        self.db.write(|tx| {
            tx.execute(
                "DELETE FROM web_sessions WHERE expires_at <= ?1",
                params![now],
            )?;
            tx.execute(
                "INSERT INTO web_sessions (id_sha256, person, created_at, expires_at)
                 VALUES (?1, ?2, ?3, ?4)",
                params![hash, person, now, expires_at],
            )?;
            Ok(())
        })
    }

    /// The person signed in as session `id`, while it has not expired.
    pub fn session_person(&self, id: &str, now: i64) -> Result<Option<String>, StateError> {
        let hash = secret_sha256(id);
        self.db.read(|c| {
            c.query_optional(
                "SELECT person FROM web_sessions WHERE id_sha256 = ?1 AND expires_at > ?2",
                params![hash, now],
                |row| row.get(0),
            )
        })
    }

    /// Ends session `id`.
    pub fn end_session(&self, id: &str) -> Result<(), StateError> {
        let hash = secret_sha256(id);
        self.db.write(|tx| {
            tx.execute(
                "DELETE FROM web_sessions WHERE id_sha256 = ?1",
                params![hash],
            )?;
            Ok(())
        })
    }

    /// Keeps a ceremony under way as `id` (its challenge).
    pub fn add_ceremony(
        &self,
        id: &str,
        kind: CeremonyKind,
        ceremony: &Ceremony,
        now: i64,
    ) -> Result<(), StateError> {
        self.db.write(|tx| {
            tx.execute(
                "DELETE FROM passkey_ceremonies WHERE expires_at <= ?1 AND used_at IS NULL",
                params![now],
            )?;
            tx.execute(
                "INSERT INTO passkey_ceremonies (id, kind, person, approval_id, state, expires_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![
                    id,
                    kind.as_str(),
                    ceremony.person,
                    ceremony.approval_id,
                    ceremony.state,
                    ceremony.expires_at
                ],
            )?;
            Ok(())
        })
    }

    /// Takes ceremony `id` of `kind`: the compare-and-set that makes it single use. `None`
    /// when it is unknown, of another kind, expired, or was taken before.
    pub fn take_ceremony(
        &self,
        id: &str,
        kind: CeremonyKind,
        now: i64,
    ) -> Result<Option<Ceremony>, StateError> {
        self.db.write_durable(|tx| {
            let taken = tx.execute(
                "UPDATE passkey_ceremonies SET used_at = ?3
                 WHERE id = ?1 AND kind = ?2 AND used_at IS NULL AND expires_at > ?3",
                params![id, kind.as_str(), now],
            )?;
            if taken != 1 {
                return Ok(None);
            }
            tx.query_optional(
                "SELECT person, approval_id, state, expires_at FROM passkey_ceremonies
                     WHERE id = ?1",
                params![id],
                |row| {
                    Ok(Ceremony {
                        person: row.get(0)?,
                        approval_id: row.get(1)?,
                        state: row.get(2)?,
                        expires_at: row.get(3)?,
                    })
                },
            )
        })
    }
}

#[cfg(test)]
#[path = "passkeys_tests.rs"]
mod tests;
