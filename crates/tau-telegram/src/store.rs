//! What the channel remembers across restarts, in SQLite: where it stopped reading
//! updates, and which message shows which question (so a question decided, expired or
//! replaced while tau was down still loses its buttons).

use std::path::Path;
use std::sync::{Mutex, PoisonError};

use rusqlite::{Connection, OptionalExtension, params};

/// The channel's memory could not be read or written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("telegram store: {0}")]
pub struct StoreError(String);

impl From<rusqlite::Error> for StoreError {
    fn from(error: rusqlite::Error) -> Self {
        Self(error.to_string())
    }
}

/// Where a question is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Shown {
    pub chat: i64,
    pub message_id: i64,
    /// The message already says how the question ended and has no buttons.
    pub closed: bool,
}

pub struct Store {
    db: Mutex<Connection>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Store")
    }
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS telegram_offset (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    next INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS telegram_chats (
    chat INTEGER PRIMARY KEY,
    generation INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS telegram_questions (
    approval_id TEXT PRIMARY KEY,
    chat INTEGER NOT NULL,
    message_id INTEGER NOT NULL,
    closed INTEGER NOT NULL DEFAULT 0
);";

impl Store {
    /// Opens (or creates) the tables in the SQLite file at `path`; the file may be shared
    /// with other tables.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        let db = Connection::open(path)?;
        db.busy_timeout(std::time::Duration::from_secs(5))?;
        Self::with(db)
    }

    /// A store that forgets everything when dropped.
    pub fn in_memory() -> Result<Self, StoreError> {
        Self::with(Connection::open_in_memory()?)
    }

    fn with(db: Connection) -> Result<Self, StoreError> {
        db.execute_batch(SCHEMA)?;
        Ok(Self { db: Mutex::new(db) })
    }

    fn db(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.db.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn offset(&self) -> Result<Option<i64>, StoreError> {
        Ok(self
            .db()
            .query_row("SELECT next FROM telegram_offset WHERE id = 1", [], |r| {
                r.get(0)
            })
            .optional()?)
    }

    pub(crate) fn set_offset(&self, next: i64) -> Result<(), StoreError> {
        self.db().execute(
            "INSERT INTO telegram_offset (id, next) VALUES (1, ?1)
             ON CONFLICT (id) DO UPDATE SET next = excluded.next",
            params![next],
        )?;
        Ok(())
    }

    /// How many times `/new` was said in `chat`.
    pub(crate) fn generation(&self, chat: i64) -> Result<u32, StoreError> {
        Ok(self
            .db()
            .query_row(
                "SELECT generation FROM telegram_chats WHERE chat = ?1",
                params![chat],
                |r| r.get(0),
            )
            .optional()?
            .unwrap_or(0))
    }

    /// `/new` in `chat`: the next generation, stored.
    pub(crate) fn next_generation(&self, chat: i64) -> Result<u32, StoreError> {
        Ok(self.db().query_row(
            "INSERT INTO telegram_chats (chat, generation) VALUES (?1, 1)
             ON CONFLICT (chat) DO UPDATE SET generation = generation + 1
             RETURNING generation",
            params![chat],
            |r| r.get(0),
        )?)
    }

    pub(crate) fn shown(&self, approval_id: &str) -> Result<Option<Shown>, StoreError> {
        Ok(self
            .db()
            .query_row(
                "SELECT chat, message_id, closed FROM telegram_questions WHERE approval_id = ?1",
                params![approval_id],
                |r| {
                    Ok(Shown {
                        chat: r.get(0)?,
                        message_id: r.get(1)?,
                        closed: r.get(2)?,
                    })
                },
            )
            .optional()?)
    }

    pub(crate) fn remember(
        &self,
        approval_id: &str,
        chat: i64,
        message_id: i64,
    ) -> Result<(), StoreError> {
        self.db().execute(
            "INSERT OR REPLACE INTO telegram_questions (approval_id, chat, message_id, closed)
             VALUES (?1, ?2, ?3, 0)",
            params![approval_id, chat, message_id],
        )?;
        Ok(())
    }

    pub(crate) fn close(&self, approval_id: &str) -> Result<(), StoreError> {
        self.db().execute(
            "UPDATE telegram_questions SET closed = 1 WHERE approval_id = ?1",
            params![approval_id],
        )?;
        Ok(())
    }

    /// Questions whose message still has its buttons.
    pub(crate) fn open_questions(&self) -> Result<Vec<String>, StoreError> {
        let db = self.db();
        let mut statement = db.prepare(
            "SELECT approval_id FROM telegram_questions WHERE closed = 0 ORDER BY rowid",
        )?;
        let ids = statement
            .query_map([], |r| r.get(0))?
            .collect::<Result<Vec<String>, _>>()?;
        Ok(ids)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn offset_and_questions_survive_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.db");
        {
            let store = Store::open(&path).unwrap();
            assert_eq!(store.offset().unwrap(), None);
            store.set_offset(10).unwrap();
            store.set_offset(12).unwrap();
            store.remember("ap_1", 42, 7).unwrap();
            store.remember("ap_2", 42, 8).unwrap();
            store.close("ap_1").unwrap();
        }
        let store = Store::open(&path).unwrap();
        assert_eq!(store.offset().unwrap(), Some(12));
        assert_eq!(
            store.shown("ap_1").unwrap(),
            Some(Shown {
                chat: 42,
                message_id: 7,
                closed: true
            })
        );
        assert_eq!(store.open_questions().unwrap(), vec!["ap_2".to_owned()]);
        assert_eq!(store.shown("ap_3").unwrap(), None);
        assert_eq!(store.generation(42).unwrap(), 0);
        assert_eq!(store.next_generation(42).unwrap(), 1);
        assert_eq!(store.next_generation(42).unwrap(), 2);
        drop(store);
        let store = Store::open(&path).unwrap();
        assert_eq!(store.generation(42).unwrap(), 2);
        assert_eq!(store.generation(43).unwrap(), 0);
    }
}
