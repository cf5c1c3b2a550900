//! Workspace containment: the one place that turns a path from the model into an open file.
//!
//! A path is relative to the workspace. It is refused when it is absolute, uses `..`, holds
//! a NUL byte, or goes through a symlink. Nothing is checked by name and then used by name:
//! every path is opened relative to a descriptor of the workspace directory, with
//! `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`, or where the kernel has no `openat2`,
//! one component at a time with `O_NOFOLLOW`. A directory swapped for a symlink while a tool
//! runs therefore makes the call fail; it can never redirect it outside.
//!
//! Symlinks are not followed at all, not even those that stay inside: telling those apart
//! would again mean reading a link and then using what it said.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use rustix::fs::{AtFlags, FileType, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;
use tau_agent::ToolError;

use crate::config::ToolsConfigError;

/// The workspace: its canonical path (where commands run) and a descriptor every file tool
/// resolves under.
#[derive(Debug, Clone)]
pub(crate) struct Workspace {
    root: PathBuf,
    dir: Arc<OwnedFd>,
    resolver: Resolver,
}

/// How a path is opened beneath the workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Resolver {
    /// One `openat2` call; the kernel refuses symlinks and escapes.
    Openat2,
    /// One `openat(O_NOFOLLOW)` per component, for kernels without `openat2`.
    Walk,
}

/// A path refused or not usable; the message names the path as the model wrote it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum PathError {
    #[error("path is empty; use '.' for the workspace itself")]
    Empty,
    #[error("path {0} contains a NUL byte")]
    Nul(Shown),
    #[error("path {path} leaves the workspace ({why})")]
    Leaves { path: Shown, why: &'static str },
    #[error("path {0} goes through a symlink; tools do not follow symlinks")]
    Symlink(Shown),
    #[error("path {0} goes through a file, not a directory")]
    ThroughFile(Shown),
}

impl From<PathError> for ToolError {
    fn from(error: PathError) -> Self {
        ToolError::new(error.to_string())
    }
}

/// Why a path could not be opened.
#[derive(Debug)]
pub(crate) enum OpenError {
    /// Containment said no.
    Refused(PathError),
    /// The file, or a directory on the way, does not exist.
    Missing,
    Io(io::Error),
}

impl OpenError {
    fn from_errno(errno: Errno, path: &str) -> Self {
        match errno {
            Errno::LOOP => Self::Refused(PathError::Symlink(Shown::new(path))),
            Errno::NOTDIR => Self::Refused(PathError::ThroughFile(Shown::new(path))),
            Errno::XDEV => Self::Refused(PathError::Leaves {
                path: Shown::new(path),
                why: "it resolves outside",
            }),
            Errno::NOENT => Self::Missing,
            other => Self::Io(other.into()),
        }
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

const RESOLVE: ResolveFlags = ResolveFlags::BENEATH
    .union(ResolveFlags::NO_SYMLINKS)
    .union(ResolveFlags::NO_MAGICLINKS);

impl Workspace {
    /// Opens the configured workspace; it must exist and be a directory.
    pub(crate) fn open(path: &Path) -> Result<Self, ToolsConfigError> {
        let shown = path.display().to_string();
        let unreadable = |error: io::Error| ToolsConfigError::WorkspaceUnreadable {
            path: shown.clone(),
            message: error.to_string(),
        };
        let root = std::fs::canonicalize(path).map_err(|error| match error.kind() {
            io::ErrorKind::NotFound => ToolsConfigError::WorkspaceMissing {
                path: shown.clone(),
            },
            _ => unreadable(error),
        })?;
        if !root.is_dir() {
            return Err(ToolsConfigError::WorkspaceNotADirectory { path: shown });
        }
        let dir = rustix::fs::open(
            &root,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|errno| unreadable(errno.into()))?;
        // Asked once: a kernel (or a seccomp filter) without openat2 says so the same way
        // on every call.
        let resolver = match rustix::fs::openat2(&dir, ".", OFlags::PATH, Mode::empty(), RESOLVE) {
            Err(Errno::NOSYS | Errno::PERM) => Resolver::Walk,
            _ => Resolver::Openat2,
        };
        Ok(Self {
            root,
            dir: Arc::new(dir),
            resolver,
        })
    }

    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// The workspace itself, opened for reading its entries.
    pub(crate) fn open_root_dir(&self) -> Result<OwnedFd, Errno> {
        rustix::fs::openat(
            self.dir.as_fd(),
            ".",
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
    }

    /// Opens `path` with `flags` (and `mode` when it creates the file).
    pub(crate) fn open_file(
        &self,
        path: &str,
        flags: OFlags,
        mode: Mode,
    ) -> Result<OwnedFd, OpenError> {
        let parts = parts(path).map_err(OpenError::Refused)?;
        let flags = flags | OFlags::CLOEXEC | OFlags::NOCTTY;
        let opened = match self.resolver {
            Resolver::Openat2 => {
                let relative = join(&parts);
                rustix::fs::openat2(self.dir.as_fd(), relative.as_os_str(), flags, mode, RESOLVE)
            }
            Resolver::Walk => self.walk(&parts, flags, mode),
        };
        opened.map_err(|errno| OpenError::from_errno(errno, path))
    }

    /// The directory holding `path`, opened, and the last name in `path`; None as the name
    /// for the workspace itself. With `create`, missing directories are made on the way.
    pub(crate) fn parent(
        &self,
        path: &str,
        create: bool,
    ) -> Result<(OwnedFd, Option<OsString>), OpenError> {
        let parts = parts(path).map_err(OpenError::Refused)?;
        let errno = |errno| OpenError::from_errno(errno, path);
        let mut dir = self.duplicate().map_err(errno)?;
        let Some((last, parents)) = parts.split_last() else {
            return Ok((dir, None));
        };
        for part in parents {
            dir = match self.step(dir.as_fd(), part) {
                Err(Errno::NOENT) if create => {
                    match rustix::fs::mkdirat(dir.as_fd(), *part, Mode::from_raw_mode(0o777)) {
                        Ok(()) | Err(Errno::EXIST) => {}
                        Err(other) => return Err(errno(other)),
                    }
                    self.step(dir.as_fd(), part)
                }
                other => other,
            }
            .map_err(errno)?;
        }
        Ok((dir, Some(last.to_os_string())))
    }

    fn walk(&self, parts: &[&OsStr], flags: OFlags, mode: Mode) -> Result<OwnedFd, Errno> {
        let Some((last, parents)) = parts.split_last() else {
            return rustix::fs::openat(self.dir.as_fd(), ".", flags, mode);
        };
        let mut dir = self.duplicate()?;
        for part in parents {
            dir = self.step(dir.as_fd(), part)?;
        }
        open_last(dir.as_fd(), last, flags, mode)
    }

    fn duplicate(&self) -> Result<OwnedFd, Errno> {
        rustix::fs::openat(
            self.dir.as_fd(),
            ".",
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
    }

    /// One directory down from `dir`, never through a symlink.
    fn step(&self, dir: BorrowedFd<'_>, name: &OsStr) -> Result<OwnedFd, Errno> {
        let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
        match self.resolver {
            Resolver::Openat2 => rustix::fs::openat2(dir, name, flags, Mode::empty(), RESOLVE),
            Resolver::Walk => {
                let fd = rustix::fs::openat(
                    dir,
                    name,
                    OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                    Mode::empty(),
                )?;
                match FileType::from_raw_mode(rustix::fs::fstat(&fd)?.st_mode) {
                    FileType::Directory => Ok(fd),
                    FileType::Symlink => Err(Errno::LOOP),
                    _ => Err(Errno::NOTDIR),
                }
            }
        }
    }

    #[cfg(test)]
    pub(crate) fn walking(mut self) -> Self {
        self.resolver = Resolver::Walk;
        self
    }
}

/// The last component, never followed: `O_NOFOLLOW` fails on a symlink, except with
/// `O_PATH`, which opens the link itself and so is checked after.
fn open_last(
    dir: BorrowedFd<'_>,
    name: &OsStr,
    flags: OFlags,
    mode: Mode,
) -> Result<OwnedFd, Errno> {
    let fd = rustix::fs::openat(dir, name, flags | OFlags::NOFOLLOW, mode)?;
    if flags.contains(OFlags::PATH)
        && FileType::from_raw_mode(rustix::fs::fstat(&fd)?.st_mode) == FileType::Symlink
    {
        return Err(Errno::LOOP);
    }
    Ok(fd)
}

/// The kind of `name` in `dir` itself, a symlink not followed.
pub(crate) fn kind_at(dir: BorrowedFd<'_>, name: &OsStr) -> io::Result<FileType> {
    let stat = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)?;
    Ok(FileType::from_raw_mode(stat.st_mode))
}

/// The parts of a model's path, checked before anything touches the disk.
fn parts(path: &str) -> Result<Vec<&OsStr>, PathError> {
    // 1. empty -> refuse
    if path.is_empty() {
        return Err(PathError::Empty);
    }
    // 2. NUL -> refuse (the OS would cut the path there)
    if path.contains('\0') {
        return Err(PathError::Nul(Shown::new(path)));
    }
    // 3. absolute or `..` anywhere -> refuse
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
    Ok(parts)
}

fn join(parts: &[&OsStr]) -> OsString {
    if parts.is_empty() {
        return OsString::from(".");
    }
    let mut joined = Vec::new();
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            joined.push(b'/');
        }
        joined.extend_from_slice(part.as_bytes());
    }
    OsStr::from_bytes(&joined).to_os_string()
}

#[cfg(test)]
#[path = "workspace_tests.rs"]
mod tests;
