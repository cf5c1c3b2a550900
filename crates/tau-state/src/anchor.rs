//! The audit log's anchor: the chain's head (the last `seq` and the SHA-256 of the last
//! line), one row, so that what the log file alone cannot show (its last lines dropped, its
//! last line edited, the whole file emptied) still shows. The appender moves it under its
//! lock on the log; `tau audit verify` reads it.

use rusqlite::{OptionalExtension, params};

use crate::db::StateDb;
use crate::error::StateError;

/// The last line the appender wrote and anchored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditHead {
    pub seq: u64,
    pub hash: String,
}

impl StateDb {
    /// The head, or `None` before the first anchored line.
    pub fn audit_head(&self) -> Result<Option<AuditHead>, StateError> {
        self.read(|c| {
            Ok(
                c.prepare_cached("SELECT seq, hash FROM audit_anchor WHERE id = 1")?
                    .query_row([], |row| {
                        Ok(AuditHead {
                            seq: u64::try_from(row.get::<_, i64>(0)?).unwrap_or(0),
                            hash: row.get(1)?,
                        })
                    })
                    .optional()?,
            )
        })
    }

    pub fn set_audit_head(&self, head: &AuditHead) -> Result<(), StateError> {
        self.write(|tx| {
            tx.prepare_cached(
                "INSERT INTO audit_anchor (id, seq, hash) VALUES (1, ?1, ?2)
                 ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash",
            )?
            .execute(params![
                i64::try_from(head.seq).unwrap_or(i64::MAX),
                head.hash
            ])?;
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn the_head_is_one_row_that_each_set_replaces() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.db");
        let anchor = StateDb::open(&path).unwrap();
        assert_eq!(anchor.audit_head().unwrap(), None);
        for seq in [1, 2] {
            anchor
                .set_audit_head(&AuditHead {
                    seq,
                    hash: format!("h{seq}"),
                })
                .unwrap();
        }
        let reader = StateDb::open(&path).unwrap();
        assert_eq!(
            reader.audit_head().unwrap(),
            Some(AuditHead {
                seq: 2,
                hash: "h2".into()
            })
        );
    }
}
