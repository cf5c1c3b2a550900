//! The anchor: the chain's head (the last `seq` and the SHA-256 of the last line) kept in
//! `state.db`, its own one-row table, so that what the log file alone cannot show (its
//! last lines dropped, its last line edited, the whole file emptied) still shows.
//!
//! Beside it, the announcement: the `seq` and hash of the line an appender is about to
//! write, stored before the line is. A line past the head is tau's only when it was
//! announced; one that was not (appended by someone else) is never anchored.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension, params};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS audit_anchor (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    seq INTEGER NOT NULL,
    hash TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS audit_announced (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    seq INTEGER NOT NULL,
    hash TEXT NOT NULL
);
";

/// The last line the appender wrote and anchored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Head {
    pub seq: u64,
    pub hash: String,
}

/// The anchor table of one `state.db`.
pub(crate) struct Anchor {
    connection: Connection,
}

impl Anchor {
    /// Opens `db` for appending, creating the table when needed.
    pub(crate) fn open(db: &Path) -> rusqlite::Result<Self> {
        let connection = Connection::open(db)?;
        connection.busy_timeout(Duration::from_secs(5))?;
        // As the session store does: WAL with NORMAL sync, so each commit survives a killed
        // process (the kernel holds it); a power loss can cost the last commits.
        connection.pragma_update(None, "journal_mode", "WAL")?;
        connection.pragma_update(None, "synchronous", "NORMAL")?;
        connection.execute_batch(SCHEMA)?;
        Ok(Self { connection })
    }

    /// Opens an existing `db` to read the head; never creates the file or the table.
    pub(crate) fn open_existing(db: &Path) -> rusqlite::Result<Option<Self>> {
        if !db.exists() {
            return Ok(None);
        }
        let connection = Connection::open_with_flags(
            db,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        connection.busy_timeout(Duration::from_secs(5))?;
        Ok(Some(Self { connection }))
    }

    /// The head, or `None` before the first anchored line.
    pub(crate) fn head(&self) -> rusqlite::Result<Option<Head>> {
        self.row("audit_anchor")
    }

    /// The line last announced, or `None` before the first.
    pub(crate) fn announced(&self) -> rusqlite::Result<Option<Head>> {
        self.row("audit_announced")
    }

    fn row(&self, table: &str) -> rusqlite::Result<Option<Head>> {
        let exists: bool = self.connection.query_row(
            "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1)",
            [table],
            |row| row.get(0),
        )?;
        if !exists {
            return Ok(None);
        }
        self.connection
            .query_row(
                &format!("SELECT seq, hash FROM {table} WHERE id = 1"),
                [],
                |row| {
                    Ok(Head {
                        seq: u64::try_from(row.get::<_, i64>(0)?).unwrap_or(0),
                        hash: row.get(1)?,
                    })
                },
            )
            .optional()
    }

    pub(crate) fn set(&self, head: &Head) -> rusqlite::Result<()> {
        self.put("audit_anchor", head)
    }

    /// Says which line is about to be written, before it is.
    pub(crate) fn announce(&self, line: &Head) -> rusqlite::Result<()> {
        self.put("audit_announced", line)
    }

    fn put(&self, table: &str, head: &Head) -> rusqlite::Result<()> {
        self.connection.execute(
            &format!(
                "INSERT INTO {table} (id, seq, hash) VALUES (1, ?1, ?2)
                 ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash"
            ),
            params![i64::try_from(head.seq).unwrap_or(i64::MAX), head.hash],
        )?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn the_head_is_one_row_that_each_set_replaces() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("state.db");
        assert!(Anchor::open_existing(&db).unwrap().is_none());
        assert!(!db.exists(), "reading never creates the database");
        let anchor = Anchor::open(&db).unwrap();
        assert_eq!(anchor.head().unwrap(), None);
        for seq in [1, 2] {
            anchor
                .set(&Head {
                    seq,
                    hash: format!("h{seq}"),
                })
                .unwrap();
        }
        let reader = Anchor::open_existing(&db).unwrap().unwrap();
        assert_eq!(
            reader.head().unwrap(),
            Some(Head {
                seq: 2,
                hash: "h2".into()
            })
        );
    }

    #[test]
    fn a_database_without_the_table_has_no_head() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("state.db");
        Connection::open(&db)
            .unwrap()
            .execute_batch("CREATE TABLE sessions (id TEXT)")
            .unwrap();
        let reader = Anchor::open_existing(&db).unwrap().unwrap();
        assert_eq!(reader.head().unwrap(), None);
    }
}
