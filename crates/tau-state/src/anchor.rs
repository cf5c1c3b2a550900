//! The audit log's anchor: the chain's head (the last `seq` and the SHA-256 of the last
//! line), one row, so that what the log file alone cannot show (its last lines dropped, its
//! last line edited, the whole file emptied) still shows. Beside it, the announcement: the
//! `seq` and hash of the line an appender is about to write, stored before the line is; a
//! line past the head is tau's only when it was announced. The appender moves both under
//! its lock on the log; `tau audit verify` reads them.

use rusqlite::params;

use crate::error::StateError;
use crate::handles::AuditAnchor;
use crate::sql::Sql;

/// The last line the appender wrote and anchored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditHead {
    pub seq: u64,
    pub hash: String,
}

/// The one row of `table` (`audit_anchor` or `audit_announced`) of a store one hub
/// keeps; of a store several hubs share (each with a chain of its own in its home), the
/// row of `kind` (`anchor` or `announced`) keyed by the hub's id in `audit_heads`, so no
/// hub moves another's head.
fn row(
    c: &Sql<'_>,
    hub: Option<&str>,
    (table, kind): (&str, &str),
) -> Result<Option<AuditHead>, StateError> {
    let read = |row: &crate::sql::Row<'_>| {
        Ok(AuditHead {
            seq: u64::try_from(row.get::<_, i64>(0)?).unwrap_or(0),
            hash: row.get(1)?,
        })
    };
    match hub {
        None => c.query_optional(
            &format!("SELECT seq, hash FROM {table} WHERE id = 1"),
            params![],
            read,
        ),
        Some(hub) => c.query_optional(
            "SELECT seq, hash FROM audit_heads WHERE hub = ?1 AND kind = ?2",
            params![hub, kind],
            read,
        ),
    }
}

const ANCHOR: (&str, &str) = ("audit_anchor", "anchor");
const ANNOUNCED: (&str, &str) = ("audit_announced", "announced");

impl AuditAnchor {
    /// The head, or `None` before the first anchored line.
    pub fn audit_head(&self) -> Result<Option<AuditHead>, StateError> {
        self.db.read(|c| row(c, self.db.hub(), ANCHOR))
    }

    /// The line last announced, or `None` before the first.
    pub fn audit_announced(&self) -> Result<Option<AuditHead>, StateError> {
        self.db.read(|c| row(c, self.db.hub(), ANNOUNCED))
    }

    /// Moves the head to `head`, once its line is written.
    pub fn set_audit_head(&self, head: &AuditHead) -> Result<(), StateError> {
        self.put_audit_row(ANCHOR, head)
    }

    /// Says which line is about to be written, before it is.
    pub fn announce_audit_line(&self, line: &AuditHead) -> Result<(), StateError> {
        self.put_audit_row(ANNOUNCED, line)
    }

    fn put_audit_row(
        &self,
        (table, kind): (&str, &str),
        head: &AuditHead,
    ) -> Result<(), StateError> {
        let seq = i64::try_from(head.seq).unwrap_or(i64::MAX);
        // One statement: on PostgreSQL it travels with its commit (one round trip), and a
        // hub writes two of these for every line of its log.
        match self.db.hub() {
            None => self.db.write_statement(
                false,
                &format!(
                    "INSERT INTO {table} (id, seq, hash) VALUES (1, ?1, ?2)
                 ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash"
                ),
                params![seq, head.hash],
            )?,
            Some(hub) => self.db.write_statement(
                false,
                "INSERT INTO audit_heads (hub, kind, seq, hash) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (hub, kind) DO UPDATE SET seq = excluded.seq, hash = excluded.hash",
                params![hub, kind, seq, head.hash],
            )?,
        };
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn each_hub_of_a_shared_store_has_a_head_of_its_own() {
        for store in crate::test_stores::stores() {
            let one = store.open().for_hub("one").audit_anchor();
            let two = store.open().for_hub("two").audit_anchor();
            let head = |seq| AuditHead {
                seq,
                hash: format!("h{seq}"),
            };
            one.set_audit_head(&head(7)).unwrap();
            two.set_audit_head(&head(2)).unwrap();
            two.announce_audit_line(&head(3)).unwrap();
            assert_eq!(
                (one.audit_head().unwrap(), one.audit_announced().unwrap()),
                (Some(head(7)), None),
                "{}",
                store.kind
            );
            assert_eq!(
                (two.audit_head().unwrap(), two.audit_announced().unwrap()),
                (Some(head(2)), Some(head(3))),
                "{}",
                store.kind
            );
        }
    }

    #[test]
    fn the_head_is_one_row_that_each_set_replaces() {
        for dir in crate::test_stores::stores() {
            let anchor = dir.open().audit_anchor();
            assert_eq!(anchor.audit_head().unwrap(), None);
            for seq in [1, 2] {
                anchor
                    .set_audit_head(&AuditHead {
                        seq,
                        hash: format!("h{seq}"),
                    })
                    .unwrap();
            }
            let reader = dir.open().audit_anchor();
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
}
