//! The workspace trees grants of tools that run the workspace's files were last pinned to.
//! Only what a person reads comes from here (which files changed since a grant was
//! pinned): whether a grant covers a call is decided by the tree's SHA-256 in the audit
//! log's `grant_created` and `grant_pinned` lines, which `state.db` cannot rewrite.

use rusqlite::params;
use tau_protocol::{GrantId, WorkspaceTree};

use crate::error::StateError;
use crate::handles::Grants;

impl Grants {
    /// Keeps `tree` as what grant `id` was last pinned to (replacing the one before).
    pub fn pin_grant(&self, id: &GrantId, tree: &WorkspaceTree) -> Result<(), StateError> {
        let entries =
            serde_json::to_string(&tree.entries).map_err(StateError::encode("a pinned tree"))?;
        self.db.write(|tx| {
            tx.execute(
                "INSERT INTO grant_pins (grant_id, sha256, entries, bytes) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (grant_id) DO UPDATE SET sha256 = excluded.sha256,
                 entries = excluded.entries, bytes = excluded.bytes",
                params![
                    id.as_str(),
                    tree.sha256,
                    entries,
                    i64::try_from(tree.bytes).unwrap_or(i64::MAX)
                ],
            )?;
            Ok(())
        })
    }

    /// The tree grant `id` was last pinned to, when it is kept and reads.
    pub fn grant_pin(&self, id: &GrantId) -> Result<Option<WorkspaceTree>, StateError> {
        let row = self.db.read(|c| {
            c.query_optional(
                "SELECT sha256, entries, bytes FROM grant_pins WHERE grant_id = ?1",
                params![id.as_str()],
                |row| {
                    Ok((
                        row.get::<_, String>(0)?,
                        row.get::<_, String>(1)?,
                        row.get::<_, i64>(2)?,
                    ))
                },
            )
        })?;
        let Some((sha256, entries, bytes)) = row else {
            return Ok(None);
        };
        let entries = serde_json::from_str(&entries)
            .map_err(|_| StateError::unreadable(format!("grant '{id}'"), "its pinned workspace"))?;
        Ok(Some(WorkspaceTree {
            sha256,
            entries,
            bytes: u64::try_from(bytes).unwrap_or(0),
        }))
    }
}

/// Step 9 of the schema: what a grant pins of the workspace (its tree's SHA-256 on the
/// grant, the listing it was last pinned to beside it).
pub(crate) const GRANT_PINS: &str = "
ALTER TABLE grants ADD COLUMN workspace_sha256 TEXT;
CREATE TABLE grant_pins (
    grant_id TEXT PRIMARY KEY,
    sha256 TEXT NOT NULL,
    entries TEXT NOT NULL,
    bytes INTEGER NOT NULL
);
";

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn a_pin_is_kept_and_replaced() {
        for dir in crate::test_stores::stores() {
            let db = dir.open().grants();
            let id = GrantId::parse("gr_1").unwrap();
            assert_eq!(db.grant_pin(&id).unwrap(), None);
            let mut tree = WorkspaceTree {
                sha256: "a".repeat(64),
                entries: [("job.py".to_owned(), format!("file {}", "b".repeat(64)))].into(),
                bytes: 12,
            };
            db.pin_grant(&id, &tree).unwrap();
            assert_eq!(db.grant_pin(&id).unwrap(), Some(tree.clone()));
            tree.sha256 = "c".repeat(64);
            tree.entries.insert("Makefile".into(), "file d".into());
            db.pin_grant(&id, &tree).unwrap();
            assert_eq!(db.grant_pin(&id).unwrap(), Some(tree));
        }
    }
}
