//! A copy of `state.db` taken beside its writers, for `tau backup`: `VACUUM INTO` on this
//! process's own connection runs in one read transaction, so the copy is the file as it
//! stood at one commit (every table of one moment) while other processes go on writing;
//! no descriptor of tau's own ever touches the live file.

use std::path::Path;

use crate::db::StateDb;
use crate::error::StateError;
use crate::migrate;

impl StateDb {
    /// Writes a consistent copy of the file to `dest`, which must not exist yet; the copy
    /// is made private (0600) by path.
    pub fn copy_to(&self, dest: &Path) -> Result<(), StateError> {
        let target = dest
            .to_str()
            .ok_or_else(|| StateError::NotUtf8Path(dest.display().to_string()))?;
        self.sqlite_only("a copy of the store through SQLite")?;
        self.read(|connection| {
            connection.execute("VACUUM INTO ?1", rusqlite::params![target])?;
            Ok(())
        })?;
        crate::db::protect(dest)
    }

    /// The tau that brought the schema to its step (`0.1.0`), when one said.
    pub fn schema_by(&self) -> Result<Option<String>, StateError> {
        self.read(migrate::schema_by)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn the_copy_is_private_and_holds_what_was_committed_before_it() {
        let dir = tempfile::tempdir().unwrap();
        let db = StateDb::open(&dir.path().join("state.db")).unwrap();
        db.audit_anchor()
            .set_audit_head(&crate::AuditHead {
                seq: 7,
                hash: "h7".into(),
            })
            .unwrap();
        let copy = dir.path().join("copy.db");
        db.copy_to(&copy).unwrap();
        db.audit_anchor()
            .set_audit_head(&crate::AuditHead {
                seq: 8,
                hash: "h8".into(),
            })
            .unwrap();
        let mode = std::fs::metadata(&copy).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let copied = StateDb::open(&copy).unwrap();
        assert_eq!(
            copied.audit_anchor().audit_head().unwrap().map(|h| h.seq),
            Some(7)
        );
        assert_eq!(
            copied.schema_by().unwrap().as_deref(),
            Some(migrate::TAU_VERSION)
        );
        assert_eq!(copied.integrity_check().unwrap(), ["ok"]);
        assert!(
            db.copy_to(&copy).is_err(),
            "an existing file is never overwritten"
        );
    }
}
