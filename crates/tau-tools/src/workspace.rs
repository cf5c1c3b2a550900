//! Workspace containment: the one place that turns a path from the model into a path on disk.
//!
//! A path is relative to the workspace. It is refused when it is absolute, uses `..`, holds
//! a NUL byte, or resolves (through symlinks) outside the workspace. The deepest part of the
//! path that exists is canonicalized and must lie under the canonical root; the rest does not
//! exist yet (a file about to be written) and, holding no `..`, cannot climb out of it.
//!
//! The check and the use are two steps: a process that swaps a directory for a symlink
//! between them can still win that race. The tools hand the resolved path on, so only such a
//! concurrent change, not a link already there, can redirect them.

use std::fmt;
use std::io;
use std::path::{Component, Path, PathBuf};

use tau_agent::ToolError;

use crate::config::ToolsConfigError;

/// The canonical root every tool path resolves under.
#[derive(Debug, Clone)]
pub(crate) struct Workspace {
    root: PathBuf,
}

/// A path refused or not found; the message names the path as the model wrote it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum PathError {
    #[error("path is empty; use '.' for the workspace itself")]
    Empty,
    #[error("path {0} contains a NUL byte")]
    Nul(Shown),
    #[error("path {path} leaves the workspace ({why})")]
    Leaves { path: Shown, why: &'static str },
    #[error("path {0} goes through a file, not a directory")]
    ThroughFile(Shown),
    #[error("path {0} cannot be checked: {1}")]
    Io(Shown, String),
}

impl From<PathError> for ToolError {
    fn from(error: PathError) -> Self {
        ToolError::new(error.to_string())
    }
}

/// A path as the model wrote it, quoted and cut short so an error stays one readable line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Shown(String);

const SHOWN_CHARS: usize = 200;

impl Shown {
    pub(crate) fn new(path: &str) -> Self {
        let mut shown: String = path
            .chars()
            .take(SHOWN_CHARS)
            .map(|c| if c.is_control() { '?' } else { c })
            .collect();
        if path.chars().nth(SHOWN_CHARS).is_some() {
            shown.push('…');
        }
        Self(shown)
    }
}

impl fmt::Display for Shown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "'{}'", self.0)
    }
}

impl Workspace {
    /// Opens the configured workspace; it must exist and be a directory.
    pub(crate) fn open(path: &Path) -> Result<Self, ToolsConfigError> {
        let shown = path.display().to_string();
        let root = std::fs::canonicalize(path).map_err(|error| match error.kind() {
            io::ErrorKind::NotFound => ToolsConfigError::WorkspaceMissing {
                path: shown.clone(),
            },
            _ => ToolsConfigError::WorkspaceUnreadable {
                path: shown.clone(),
                message: error.to_string(),
            },
        })?;
        if !root.is_dir() {
            return Err(ToolsConfigError::WorkspaceNotADirectory { path: shown });
        }
        Ok(Self { root })
    }

    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// Resolves a path from the model to a path under the root; the file need not exist.
    pub(crate) fn resolve(&self, path: &str) -> Result<PathBuf, PathError> {
        // 1. empty -> refuse
        if path.is_empty() {
            return Err(PathError::Empty);
        }
        // 2. NUL -> refuse (the OS would cut the path there)
        if path.contains('\0') {
            return Err(PathError::Nul(Shown::new(path)));
        }
        // 3. absolute or `..` anywhere -> refuse, before touching the disk
        let leaves = |why| PathError::Leaves {
            path: Shown::new(path),
            why,
        };
        let mut parts = Vec::new();
        for component in Path::new(path).components() {
            match component {
                Component::Normal(part) => parts.push(part),
                Component::CurDir => {}
                Component::ParentDir => return Err(leaves("'..' is not allowed")),
                Component::RootDir | Component::Prefix(_) => {
                    return Err(leaves("absolute paths are not allowed"));
                }
            }
        }
        // 4. canonicalize the deepest part that exists; it must stay under the root
        let mut existing = self.root.clone();
        let mut rest = parts.as_slice();
        while let Some((first, tail)) = rest.split_first() {
            let next = existing.join(first);
            match std::fs::canonicalize(&next) {
                Ok(canonical) => {
                    if !canonical.starts_with(&self.root) {
                        return Err(leaves("a symlink in it points outside"));
                    }
                    existing = canonical;
                    rest = tail;
                }
                Err(error) if error.kind() == io::ErrorKind::NotFound => {
                    // 5. a link to nowhere would be followed by the write that creates it
                    if next.symlink_metadata().is_ok() {
                        return Err(leaves("a symlink in it points nowhere"));
                    }
                    break;
                }
                Err(error) if error.kind() == io::ErrorKind::NotADirectory => {
                    return Err(PathError::ThroughFile(Shown::new(path)));
                }
                Err(error) => return Err(PathError::Io(Shown::new(path), error.to_string())),
            }
        }
        // 6. the parts that do not exist yet are plain names under an existing directory
        Ok(rest.iter().fold(existing, |dir, part| dir.join(part)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use std::os::unix::fs::symlink;

    fn workspace() -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        let workspace = Workspace::open(dir.path()).unwrap();
        (dir, workspace)
    }

    fn refusal(workspace: &Workspace, path: &str) -> String {
        workspace.resolve(path).unwrap_err().to_string()
    }

    #[test]
    fn escapes_are_refused_with_the_reason() {
        let (dir, workspace) = workspace();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("a")).unwrap();
        symlink(outside.path(), dir.path().join("out")).unwrap();
        symlink("/etc/passwd", dir.path().join("passwd")).unwrap();
        symlink(outside.path().join("missing"), dir.path().join("dangling")).unwrap();
        for (path, expected) in [
            (
                "../x",
                "path '../x' leaves the workspace ('..' is not allowed)",
            ),
            (
                "a/../../b",
                "path 'a/../../b' leaves the workspace ('..' is not allowed)",
            ),
            (
                "a/..",
                "path 'a/..' leaves the workspace ('..' is not allowed)",
            ),
            (
                "/etc/passwd",
                "path '/etc/passwd' leaves the workspace (absolute paths are not allowed)",
            ),
            (
                "out",
                "path 'out' leaves the workspace (a symlink in it points outside)",
            ),
            (
                "out/new.txt",
                "path 'out/new.txt' leaves the workspace (a symlink in it points outside)",
            ),
            (
                "passwd",
                "path 'passwd' leaves the workspace (a symlink in it points outside)",
            ),
            (
                "dangling",
                "path 'dangling' leaves the workspace (a symlink in it points nowhere)",
            ),
            ("a\0b", "path 'a?b' contains a NUL byte"),
            ("", "path is empty; use '.' for the workspace itself"),
        ] {
            assert_eq!(refusal(&workspace, path), expected, "{path:?}");
        }
    }

    #[test]
    fn paths_inside_resolve_under_the_canonical_root() {
        let (dir, workspace) = workspace();
        std::fs::create_dir(dir.path().join("a")).unwrap();
        symlink("a", dir.path().join("inner")).unwrap();
        let root = workspace.root().to_path_buf();
        for (path, expected) in [
            (".", root.clone()),
            ("./a", root.join("a")),
            ("a/b/c.txt", root.join("a/b/c.txt")),
            ("inner/x", root.join("a/x")),
            ("new/deep/file", root.join("new/deep/file")),
            ("a//b/", root.join("a/b")),
        ] {
            assert_eq!(workspace.resolve(path), Ok(expected), "{path:?}");
        }
    }

    #[test]
    fn long_paths_are_cut_in_messages() {
        let (_dir, workspace) = workspace();
        let long = format!("/{}", "x".repeat(500));
        let expected = format!(
            "path '/{}…' leaves the workspace (absolute paths are not allowed)",
            "x".repeat(199)
        );
        assert_eq!(refusal(&workspace, &long), expected);
    }

    #[test]
    fn a_missing_workspace_is_a_config_error() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope");
        let file = dir.path().join("file");
        std::fs::write(&file, "x").unwrap();
        assert_eq!(
            Workspace::open(&missing).unwrap_err(),
            ToolsConfigError::WorkspaceMissing {
                path: missing.display().to_string()
            }
        );
        assert_eq!(
            Workspace::open(&file).unwrap_err(),
            ToolsConfigError::WorkspaceNotADirectory {
                path: file.display().to_string()
            }
        );
    }
}
