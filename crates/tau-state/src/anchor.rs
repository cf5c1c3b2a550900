//! The audit log's anchor: the chain's head (the last `seq` and the SHA-256 of the last
//! line), one row, so that what the log file alone cannot show (its last lines dropped, its
//! last line edited, the whole file emptied) still shows. Beside it, the announcement: the
//! `seq` and hash of the line an appender is about to write, stored before the line is; a
//! line past the head is tau's only when it was announced. The appender moves both under
//! its lock on the log; `tau audit verify` reads them.

use rusqlite::params;

use crate::sql::Sql;

use crate::error::StateError;
use crate::handles::AuditAnchor;

/// The last line the appender wrote and anchored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditHead {
    pub seq: u64,
    pub hash: String,
}

/// The one row of `table` (`audit_anchor` or `audit_announced`).
fn row(c: &Sql<'_>, table: &str) -> Result<Option<AuditHead>, StateError> {
    Ok(c.query_optional(
        &format!("SELECT seq, hash FROM {table} WHERE id = 1"),
        params![],
        |row| {
            Ok(AuditHead {
                seq: u64::try_from(row.get::<_, i64>(0)?).unwrap_or(0),
                hash: row.get(1)?,
            })
        },
    )?)
}

impl AuditAnchor {
    /// The head, or `None` before the first anchored line.
    pub fn audit_head(&self) -> Result<Option<AuditHead>, StateError> {
        self.db.read(|c| row(c, "audit_anchor"))
    }

    /// The line last announced, or `None` before the first.
    pub fn audit_announced(&self) -> Result<Option<AuditHead>, StateError> {
        self.db.read(|c| row(c, "audit_announced"))
    }

    /// Moves the head to `head`, once its line is written.
    pub fn set_audit_head(&self, head: &AuditHead) -> Result<(), StateError> {
        self.put_audit_row("audit_anchor", head)
    }

    /// Says which line is about to be written, before it is.
    pub fn announce_audit_line(&self, line: &AuditHead) -> Result<(), StateError> {
        self.put_audit_row("audit_announced", line)
    }

    fn put_audit_row(&self, table: &str, head: &AuditHead) -> Result<(), StateError> {
        self.db.write(|tx| {
            tx.execute(
                &format!(
                    "INSERT INTO {table} (id, seq, hash) VALUES (1, ?1, ?2)
                 ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash"
                ),
                params![i64::try_from(head.seq).unwrap_or(i64::MAX), head.hash],
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

    #[test]
    fn the_head_is_one_row_that_each_set_replaces() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.db");
        let anchor = StateDb::open(&path).unwrap().audit_anchor();
        assert_eq!(anchor.audit_head().unwrap(), None);
        for seq in [1, 2] {
            anchor
                .set_audit_head(&AuditHead {
                    seq,
                    hash: format!("h{seq}"),
                })
                .unwrap();
        }
        let reader = StateDb::open(&path).unwrap().audit_anchor();
        assert_eq!(
            reader.audit_head().unwrap(),
            Some(AuditHead {
                seq: 2,
                hash: "h2".into()
            })
        );
        assert_eq!(reader.audit_announced().unwrap(), None, "a row of its own");
        let next = AuditHead {
            seq: 3,
            hash: "h3".into(),
        };
        anchor.announce_audit_line(&next).unwrap();
        assert_eq!(reader.audit_announced().unwrap(), Some(next));
        assert_eq!(reader.audit_head().unwrap().map(|h| h.seq), Some(2));
    }
}
