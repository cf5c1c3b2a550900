//! The SQLite session store: one file per hub, WAL, one transaction per message.
//!
//! Durability: each message is committed before `append_message` returns, into the WAL
//! with `synchronous = NORMAL`, so a killed process loses nothing it wrote (the commit is
//! in the operating system's hands) and no commit waits for the disk. `sync` copies the
//! WAL into the database file (a checkpoint) and flushes both; the agent calls it at the
//! end of each invocation, so a power loss or an OS crash can cost the invocation in
//! progress, never a finished one. The database stays consistent either way.
//!
//! Checkpoints wait for the end of an invocation: SQLite's own, every 1000 pages, would
//! flush the disk twice every few hundred tool calls in the middle of a long turn. Its
//! threshold is raised to 64 MiB of log, a bound for a turn that never ends.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use super::{AgentState, SessionError, SessionId, SessionRepository, SessionSummary};
use crate::message::Message;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS messages (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,
    body TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (session_id, idx)
);
CREATE TABLE IF NOT EXISTS agent_state (
    session_id TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
    body TEXT NOT NULL
);
";

/// Sessions in one SQLite file. Safe to share between threads and processes.
pub struct SqliteSessions {
    connection: Mutex<Connection>,
    /// The write-ahead log `sync` flushes; none for a store in memory.
    wal: Option<PathBuf>,
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

fn index_to_sql(index: u64) -> i64 {
    i64::try_from(index).unwrap_or(i64::MAX)
}

/// Readies `connection` for one of the other tables that share `state.db` with the
/// sessions (the hub's questions and conversations, the routines): a 5 s wait for a busy
/// file, WAL, FULL sync (a write is durable when it returns), then `schema`.
pub fn prepare_state_tables(connection: &Connection, schema: &str) -> rusqlite::Result<()> {
    connection.busy_timeout(std::time::Duration::from_secs(5))?;
    connection.pragma_update(None, "journal_mode", "WAL")?;
    connection.pragma_update(None, "synchronous", "FULL")?;
    connection.execute_batch(schema)
}

impl SqliteSessions {
    /// Opens (creating when needed) the store at `path`.
    pub fn open(path: &Path) -> Result<Self, SessionError> {
        let mut wal = path.as_os_str().to_owned();
        wal.push("-wal");
        Self::setup(Connection::open(path)?, Some(PathBuf::from(wal)))
    }

    /// A store that lives only as long as this value, for tests and one-off runs.
    pub fn in_memory() -> Result<Self, SessionError> {
        Self::setup(Connection::open_in_memory()?, None)
    }

    fn setup(connection: Connection, wal: Option<PathBuf>) -> Result<Self, SessionError> {
        connection.busy_timeout(std::time::Duration::from_secs(5))?;
        // WAL keeps readers and one writer apart; NORMAL leaves each commit to the OS
        // (see the module docs) and `sync` flushes them.
        connection.pragma_update(None, "journal_mode", "WAL")?;
        connection.pragma_update(None, "synchronous", "NORMAL")?;
        // In pages of 4 KiB: 64 MiB. After a checkpoint the log file is cut back to 4 MiB.
        connection.pragma_update(None, "wal_autocheckpoint", 16384)?;
        connection.pragma_update(None, "journal_size_limit", 4 << 20)?;
        connection.pragma_update(None, "foreign_keys", "ON")?;
        connection.execute_batch(SCHEMA)?;
        Ok(Self {
            connection: Mutex::new(connection),
            wal,
        })
    }

    fn lock(&self) -> MutexGuard<'_, Connection> {
        self.connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

fn corrupt(id: &SessionId, what: String, error: &serde_json::Error) -> SessionError {
    SessionError::Corrupt {
        session: id.to_string(),
        what,
        error: error.to_string(),
    }
}

impl SessionRepository for SqliteSessions {
    fn ensure_session(&self, id: &SessionId) -> Result<bool, SessionError> {
        let now = now();
        let inserted = self.lock().execute(
            "INSERT OR IGNORE INTO sessions (id, created_at, updated_at) VALUES (?1, ?2, ?2)",
            params![id.as_str(), now],
        )?;
        Ok(inserted == 1)
    }

    fn append_message(
        &self,
        id: &SessionId,
        index: u64,
        message: &Message,
    ) -> Result<(), SessionError> {
        let body = serde_json::to_string(message)
            .map_err(|e| corrupt(id, format!("message {index}"), &e))?;
        let mut connection = self.lock();
        // Immediate: a deferred transaction that reads first may fail to become a writer
        // when another process wrote in between.
        let tx = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
        // The primary key (session_id, idx) answers this from its last entry, where a
        // COUNT(*) would read every row of the session on every append.
        let expected: i64 = tx
            .prepare_cached("SELECT COALESCE(MAX(idx) + 1, 0) FROM messages WHERE session_id = ?1")?
            .query_row(params![id.as_str()], |row| row.get(0))?;
        let expected = u64::try_from(expected).unwrap_or(0);
        if expected != index {
            return Err(SessionError::OutOfOrder {
                session: id.to_string(),
                expected,
                given: index,
            });
        }
        let now = now();
        tx.prepare_cached(
            "INSERT INTO messages (session_id, idx, body, created_at) VALUES (?1, ?2, ?3, ?4)",
        )?
        .execute(params![id.as_str(), index_to_sql(index), body, now])?;
        // At most one write a second: a message written in the same second as the last
        // one leaves the session row, and its page, alone.
        tx.prepare_cached(
            "UPDATE sessions SET updated_at = ?2 WHERE id = ?1 AND updated_at <> ?2",
        )?
        .execute(params![id.as_str(), now])?;
        tx.commit()?;
        Ok(())
    }

    fn messages(&self, id: &SessionId, from: u64) -> Result<Vec<Message>, SessionError> {
        let connection = self.lock();
        let mut statement = connection.prepare(
            "SELECT idx, body FROM messages WHERE session_id = ?1 AND idx >= ?2 ORDER BY idx",
        )?;
        let rows = statement.query_map(params![id.as_str(), index_to_sql(from)], |row| {
            Ok((row.get::<_, i64>(0)?, row.get::<_, String>(1)?))
        })?;
        let mut messages = Vec::new();
        for row in rows {
            let (index, body) = row?;
            messages.push(
                serde_json::from_str(&body)
                    .map_err(|e| corrupt(id, format!("message {index}"), &e))?,
            );
        }
        Ok(messages)
    }

    fn message_count(&self, id: &SessionId) -> Result<u64, SessionError> {
        let count: i64 = self.lock().query_row(
            "SELECT COUNT(*) FROM messages WHERE session_id = ?1",
            params![id.as_str()],
            |row| row.get(0),
        )?;
        Ok(u64::try_from(count).unwrap_or(0))
    }

    fn save_state(&self, id: &SessionId, state: &AgentState) -> Result<(), SessionError> {
        let body =
            serde_json::to_string(state).map_err(|e| corrupt(id, "agent state".into(), &e))?;
        self.lock().execute(
            "INSERT INTO agent_state (session_id, body) VALUES (?1, ?2)
             ON CONFLICT(session_id) DO UPDATE SET body = excluded.body",
            params![id.as_str(), body],
        )?;
        Ok(())
    }

    fn load_state(&self, id: &SessionId) -> Result<Option<AgentState>, SessionError> {
        let body: Option<String> = self
            .lock()
            .query_row(
                "SELECT body FROM agent_state WHERE session_id = ?1",
                params![id.as_str()],
                |row| row.get(0),
            )
            .optional()?;
        body.map(|b| serde_json::from_str(&b).map_err(|e| corrupt(id, "agent state".into(), &e)))
            .transpose()
    }

    fn list_sessions(&self) -> Result<Vec<SessionSummary>, SessionError> {
        let connection = self.lock();
        let mut statement = connection.prepare(
            "SELECT s.id, s.created_at, s.updated_at, (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id)
             FROM sessions s ORDER BY s.updated_at DESC, s.id",
        )?;
        let rows = statement.query_map([], |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, i64>(1)?,
                row.get::<_, i64>(2)?,
                row.get::<_, i64>(3)?,
            ))
        })?;
        let mut sessions = Vec::new();
        for row in rows {
            let (id, created_at, updated_at, count) = row?;
            // A row written by something else with an unusable id is skipped, not fatal.
            let Ok(id) = SessionId::parse(&id) else {
                continue;
            };
            sessions.push(SessionSummary {
                id,
                created_at,
                updated_at,
                message_count: u64::try_from(count).unwrap_or(0),
            });
        }
        Ok(sessions)
    }

    fn delete_session(&self, id: &SessionId) -> Result<bool, SessionError> {
        let deleted = self
            .lock()
            .execute("DELETE FROM sessions WHERE id = ?1", params![id.as_str()])?;
        Ok(deleted == 1)
    }

    fn sync(&self) -> Result<(), SessionError> {
        let Some(wal) = &self.wal else {
            return Ok(());
        };
        // Held so no commit of this store lands half-way through the flush.
        let connection = self.lock();
        // Passive: a reader in another process is never waited for; what it still needs
        // stays in the log, which the flush below makes durable all the same.
        connection.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))?;
        let failed = |error| SessionError::Sync {
            path: wal.display().to_string(),
            error,
        };
        match File::open(wal) {
            // fsync flushes the file, whichever descriptor asks: SQLite's own commits included.
            Ok(file) => file.sync_all().map_err(failed),
            // No log yet, or a checkpoint removed it: everything is in the database file,
            // which SQLite synced at that checkpoint.
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(error) => Err(failed(error)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn messages_and_state_round_trip_and_delete_cascades() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.db");
        let id = SessionId::parse("kitchen").unwrap();
        {
            let store = SqliteSessions::open(&path).unwrap();
            assert!(store.ensure_session(&id).unwrap());
            assert!(!store.ensure_session(&id).unwrap());
            store
                .append_message(&id, 0, &Message::user_text("hi"))
                .unwrap();
            store
                .append_message(&id, 1, &Message::assistant_text("hello"))
                .unwrap();
            let error = store
                .append_message(&id, 5, &Message::user_text("gap"))
                .unwrap_err();
            assert_eq!(
                error.to_string(),
                "session 'kitchen' expected message 2 next but was given 5"
            );
            let state = AgentState {
                removed_count: 1,
                ..AgentState::default()
            };
            store.save_state(&id, &state).unwrap();
        }
        let store = SqliteSessions::open(&path).unwrap();
        assert_eq!(
            store.messages(&id, 0).unwrap(),
            vec![Message::user_text("hi"), Message::assistant_text("hello")]
        );
        assert_eq!(
            store.messages(&id, 1).unwrap(),
            vec![Message::assistant_text("hello")]
        );
        assert_eq!(store.load_state(&id).unwrap().unwrap().removed_count, 1);
        let listed = store.list_sessions().unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!(
            (listed[0].id.as_str(), listed[0].message_count),
            ("kitchen", 2)
        );
        assert!(store.delete_session(&id).unwrap());
        assert!(!store.delete_session(&id).unwrap());
        assert_eq!(store.message_count(&id).unwrap(), 0);
        assert_eq!(store.load_state(&id).unwrap(), None);
    }

    #[test]
    fn an_unreadable_row_is_a_clear_error() {
        let store = SqliteSessions::in_memory().unwrap();
        let id = SessionId::parse("s").unwrap();
        store.ensure_session(&id).unwrap();
        store
            .lock()
            .execute("INSERT INTO messages (session_id, idx, body, created_at) VALUES ('s', 0, '{broken', 0)", [])
            .unwrap();
        let error = store.messages(&id, 0).unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("session 's' has an unreadable record (message 0)"),
            "{error}"
        );
    }

    #[test]
    fn commits_wait_for_no_disk_and_sync_leaves_everything_in_the_database_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.db");
        let id = SessionId::parse("s").unwrap();
        let store = SqliteSessions::open(&path).unwrap();
        let pragma = |name: &str| -> i64 {
            store
                .lock()
                .query_row(&format!("PRAGMA {name}"), [], |row| row.get(0))
                .unwrap()
        };
        // 1 is NORMAL: a commit is the operating system's, a flush is `sync`'s.
        assert_eq!(
            (pragma("synchronous"), pragma("wal_autocheckpoint")),
            (1, 16384)
        );
        store.ensure_session(&id).unwrap();
        for index in 0..50 {
            store
                .append_message(&id, index, &Message::user_text(format!("m{index}")))
                .unwrap();
        }
        store.sync().unwrap();
        // The database file alone, without its log, holds every message.
        let copy = dir.path().join("copy.db");
        std::fs::copy(&path, &copy).unwrap();
        let copied = SqliteSessions::open(&copy).unwrap();
        assert_eq!(copied.message_count(&id).unwrap(), 50);
        assert_eq!(
            copied.messages(&id, 49).unwrap(),
            vec![Message::user_text("m49")]
        );
    }
}
