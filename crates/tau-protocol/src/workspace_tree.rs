//! The workspace's files as a grant of a tool that runs them pins them (`run_command`:
//! `python3 -m job`, `make -s`, `npm run test` run whatever `job.py`, the `Makefile` or
//! `package.json` hold when they run). Plain data: the tools crate walks and hashes the
//! tree, the gate compares two of them, the store keeps the one a grant was last pinned to.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The most entries (files, directories, links) a workspace may have to be pinned.
pub const MAX_PINNED_ENTRIES: usize = 20_000;

/// The most bytes its regular files may hold together to be pinned: 256 MiB.
pub const MAX_PINNED_BYTES: u64 = 256 * 1024 * 1024;

/// Every entry beneath the workspace, never following a symlink: a regular file by the
/// SHA-256 of its bytes (and whether it is executable), a symlink by where it points, a
/// directory by being there. `sha256` hashes the whole listing; two trees with the same
/// `sha256` hold the same files.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkspaceTree {
    /// Lowercase hex SHA-256 of the listing (each `path`, a NUL, its entry and a newline,
    /// in path order).
    pub sha256: String,
    /// The path relative to the workspace (`/`-separated; bytes that are not UTF-8 as
    /// `\xNN`, a backslash as `\\`) -> `file SHA256`, `file SHA256 x` (executable),
    /// `link TARGET`, `dir` or `other` (a socket, a fifo, a device).
    pub entries: BTreeMap<String, String>,
    /// What its regular files hold together.
    pub bytes: u64,
}

impl WorkspaceTree {
    /// The paths whose entry differs between this tree and `now` (changed, added or
    /// removed), in path order.
    pub fn changed_paths(&self, now: &WorkspaceTree) -> Vec<String> {
        let mut changed: Vec<String> = self
            .entries
            .iter()
            .filter(|(path, entry)| now.entries.get(*path) != Some(*entry))
            .map(|(path, _)| path.clone())
            .collect();
        changed.extend(
            now.entries
                .keys()
                .filter(|path| !self.entries.contains_key(*path))
                .cloned(),
        );
        changed.sort();
        changed
    }
}

/// Why a workspace could not be pinned: a grant of a tool that runs its files is then not
/// offered, and a grant made before covers nothing until it can be checked again.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TreeError {
    #[error(
        "the workspace is too big to pin: over {MAX_PINNED_ENTRIES} files and directories, or over 256 MiB"
    )]
    TooBig,
    #[error("the workspace could not be read: {0}")]
    Unreadable(String),
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn tree(entries: &[(&str, &str)]) -> WorkspaceTree {
        WorkspaceTree {
            sha256: String::new(),
            entries: entries
                .iter()
                .map(|(p, e)| ((*p).to_owned(), (*e).to_owned()))
                .collect(),
            bytes: 0,
        }
    }

    #[test]
    fn changed_paths_are_the_changed_added_and_removed_ones_in_order() {
        let before = tree(&[("Makefile", "file a"), ("job.py", "file b"), ("old", "dir")]);
        let after = tree(&[
            ("Makefile", "file a"),
            ("job.py", "file c"),
            ("new.py", "file d"),
        ]);
        assert_eq!(
            before.changed_paths(&after),
            vec!["job.py".to_owned(), "new.py".to_owned(), "old".to_owned()]
        );
        assert_eq!(before.changed_paths(&before), Vec::<String>::new());
    }

    #[test]
    fn the_error_says_what_the_bounds_are() {
        assert_eq!(
            TreeError::TooBig.to_string(),
            "the workspace is too big to pin: over 20000 files and directories, or over 256 MiB"
        );
    }
}
