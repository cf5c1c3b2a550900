//! The workspace's tree as a grant of `run_command` pins it: every entry beneath the
//! workspace, opened beneath its descriptor and never through a symlink (a link is pinned
//! by where it points, not followed), each regular file by the SHA-256 of its bytes and
//! its executable bit. What a command runs (`sh setup.sh`, `python3 -m job`, `make -s`
//! and its Makefile, `npm run test` and `package.json`, the modules they import) is in
//! the workspace or outside tau's file tools' reach; the whole tree is pinned, since no
//! reading of a command can say all it will run. Bounded: past
//! [`MAX_PINNED_ENTRIES`] entries or [`MAX_PINNED_BYTES`] bytes it stops and says so.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::io::Read;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;

use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags};
use sha2::{Digest, Sha256};
use tau_core::WorkspacePinner;
use tau_protocol::{MAX_PINNED_BYTES, MAX_PINNED_ENTRIES, TreeError, WorkspaceTree};

use crate::workspace::Workspace;

/// Reads the tree of one workspace.
pub(crate) struct TreePinner {
    pub workspace: Workspace,
}

impl WorkspacePinner for TreePinner {
    fn tree(&self) -> Result<WorkspaceTree, TreeError> {
        let root = self
            .workspace
            .open_root_dir()
            .map_err(|e| TreeError::Unreadable(format!("the workspace itself: {e}")))?;
        read_tree(root)
    }
}

/// Lowercase hex of `bytes`.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A name's bytes as a key: UTF-8 as it is, a backslash as `\\`, any other byte as `\xNN`;
/// two different names never read the same.
fn escaped(bytes: &[u8]) -> String {
    let mut out = String::new();
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            if c == '\\' {
                out.push_str("\\\\");
            } else {
                out.push(c);
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

struct Walk {
    entries: BTreeMap<String, String>,
    bytes: u64,
}

impl Walk {
    fn add(&mut self, path: String, entry: String) -> Result<(), TreeError> {
        self.entries.insert(path, entry);
        if self.entries.len() > MAX_PINNED_ENTRIES {
            return Err(TreeError::TooBig);
        }
        Ok(())
    }
}

/// Walks the directory `root` (opened for reading) to its end.
fn read_tree(root: OwnedFd) -> Result<WorkspaceTree, TreeError> {
    let mut walk = Walk {
        entries: BTreeMap::new(),
        bytes: 0,
    };
    // Directories still to read, each with its path ("" for the workspace).
    let mut pending = vec![(String::new(), root)];
    while let Some((prefix, dir)) = pending.pop() {
        let unreadable = |what: &str, e: &dyn std::fmt::Display| {
            TreeError::Unreadable(format!("{}: {e}", if what.is_empty() { "." } else { what }))
        };
        let listing = Dir::read_from(&dir).map_err(|e| unreadable(&prefix, &e))?;
        let mut names = Vec::new();
        for entry in listing {
            let entry = entry.map_err(|e| unreadable(&prefix, &e))?;
            let name = entry.file_name().to_bytes();
            if name != b"." && name != b".." {
                names.push(name.to_vec());
            }
        }
        for name in names {
            let path = if prefix.is_empty() {
                escaped(&name)
            } else {
                format!("{prefix}/{}", escaped(&name))
            };
            let name = OsStr::from_bytes(&name);
            let stat = rustix::fs::statat(dir.as_fd(), name, AtFlags::SYMLINK_NOFOLLOW)
                .map_err(|e| unreadable(&path, &e))?;
            match FileType::from_raw_mode(stat.st_mode) {
                FileType::Directory => {
                    walk.add(path.clone(), "dir".to_owned())?;
                    let sub = rustix::fs::openat(
                        dir.as_fd(),
                        name,
                        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                        Mode::empty(),
                    )
                    .map_err(|e| unreadable(&path, &e))?;
                    pending.push((path, sub));
                }
                FileType::RegularFile => {
                    let sha256 = hash_file(&dir, name, &mut walk.bytes).map_err(|e| match e {
                        Hashing::TooBig => TreeError::TooBig,
                        Hashing::Io(e) => unreadable(&path, &e),
                    })?;
                    let executable = stat.st_mode & 0o111 != 0;
                    walk.add(
                        path,
                        format!("file {sha256}{}", if executable { " x" } else { "" }),
                    )?;
                }
                FileType::Symlink => {
                    let target = rustix::fs::readlinkat(dir.as_fd(), name, Vec::new())
                        .map_err(|e| unreadable(&path, &e))?;
                    walk.add(path, format!("link {}", escaped(target.as_bytes())))?;
                }
                _ => walk.add(path, "other".to_owned())?,
            }
        }
    }
    let mut listing = Sha256::new();
    for (path, entry) in &walk.entries {
        listing.update(path.as_bytes());
        listing.update([0]);
        listing.update(entry.as_bytes());
        listing.update(b"\n");
    }
    Ok(WorkspaceTree {
        sha256: hex(&listing.finalize()),
        entries: walk.entries,
        bytes: walk.bytes,
    })
}

enum Hashing {
    TooBig,
    Io(std::io::Error),
}

/// The SHA-256 of regular file `name` in `dir`, its size counted into `total`.
fn hash_file(dir: &OwnedFd, name: &OsStr, total: &mut u64) -> Result<String, Hashing> {
    let fd = rustix::fs::openat(
        dir.as_fd(),
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| Hashing::Io(e.into()))?;
    let mut file = std::fs::File::from(fd);
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let read = file.read(&mut buffer).map_err(Hashing::Io)?;
        let Some(chunk) = buffer.get(..read).filter(|c| !c.is_empty()) else {
            break;
        };
        hasher.update(chunk);
        *total += read as u64;
        if *total > MAX_PINNED_BYTES {
            return Err(Hashing::TooBig);
        }
    }
    Ok(hex(&hasher.finalize()))
}

#[cfg(test)]
#[path = "workspace_tree_tests.rs"]
mod tests;
