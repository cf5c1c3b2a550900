//! `write_file`: creates or replaces a workspace file atomically (temp file, then rename),
//! creating its parent directories.

use std::ffi::OsString;
use std::io::Write;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU64, Ordering};

use std::sync::Arc;

use async_trait::async_trait;
use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;
use serde::Deserialize;
use serde_json::{Value, json};
use tau_agent::{Tool, ToolContext, ToolError, ToolOutput, ToolSpec};
use tau_core::TauToolSpec;
use tau_protocol::Tier;

use crate::args;
use crate::workspace::{OpenError, PathError, Shown, Workspace};
use crate::written::Written;

/// The mode of a new file; a replaced file keeps its own.
const NEW_FILE_MODE: u32 = 0o644;

pub(crate) struct WriteFile {
    spec: ToolSpec,
    workspace: Workspace,
    written: Arc<Written>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WriteFileArgs {
    path: String,
    content: String,
}

impl WriteFile {
    pub(crate) fn new(workspace: Workspace) -> Self {
        let spec = TauToolSpec::new(
            "write_file",
            "Creates or replaces a text file in the workspace, creating missing parent directories. Readers never see a half-written file.",
            Tier::Write,
            "creates or replaces a file in the workspace",
        )
        .provenance(tau_core::provenance::ProvenanceRule::TRUSTED_LOCAL)
        .input_schema(json!({
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "Path relative to the workspace, e.g. 'plans/garden.md'.",
                },
                "content": {
                    "type": "string",
                    "description": "The whole new content of the file.",
                },
            },
            "required": ["path", "content"],
            "additionalProperties": false,
        }))
        .build();
        Self {
            spec,
            workspace,
            written: Arc::default(),
        }
    }

    /// Records every file it writes in `written`.
    pub(crate) fn recording(mut self, written: Arc<Written>) -> Self {
        self.written = written;
        self
    }
}

#[async_trait]
impl Tool for WriteFile {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn run(&self, input: Value, _context: ToolContext) -> Result<ToolOutput, ToolError> {
        let WriteFileArgs { path, content } = args::parse("write_file", input)?;
        let shown = Shown::new(&path);
        let size = content.len();
        let workspace = self.workspace.clone();
        let target = path.clone();
        let job =
            tokio::task::spawn_blocking(move || write_atomically(&workspace, &target, &content));
        let replaced = job
            .await
            .map_err(|_| ToolError::new(format!("writing {shown} was interrupted")))?
            .map_err(|error| error.tool_error(&shown))?;
        self.written.record(&path);
        let verb = if replaced { "replaced" } else { "created" };
        Ok(ToolOutput::text(format!("{verb} {shown} ({size} bytes)")))
    }
}

enum WriteError {
    IsDirectory,
    Refused(PathError),
    Io(std::io::Error),
}

impl WriteError {
    fn tool_error(self, shown: &Shown) -> ToolError {
        match self {
            Self::IsDirectory => ToolError::new(format!("path {shown} is a directory")),
            Self::Refused(error) => error.into(),
            Self::Io(error) => ToolError::new(format!("file {shown} cannot be written: {error}")),
        }
    }
}

impl From<Errno> for WriteError {
    fn from(errno: Errno) -> Self {
        Self::Io(errno.into())
    }
}

impl From<std::io::Error> for WriteError {
    fn from(error: std::io::Error) -> Self {
        Self::Io(error)
    }
}

/// Writes `content` beside `path` and renames it over `path`, both inside the directory
/// opened beneath the workspace; true when a file was replaced. The rename replaces the
/// name itself, so whatever `path` was (another hard link of a file outside included) is
/// never written through.
fn write_atomically(workspace: &Workspace, path: &str, content: &str) -> Result<bool, WriteError> {
    let (dir, name) = workspace.parent(path, true).map_err(|error| match error {
        OpenError::Refused(error) => WriteError::Refused(error),
        OpenError::Missing => WriteError::Io(Errno::NOENT.into()),
        OpenError::Io(error) => WriteError::Io(error),
    })?;
    let Some(name) = name else {
        return Err(WriteError::IsDirectory);
    };
    let existing = match rustix::fs::statat(&dir, &name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) => match FileType::from_raw_mode(stat.st_mode) {
            FileType::Directory => return Err(WriteError::IsDirectory),
            FileType::Symlink => {
                return Err(WriteError::Refused(PathError::Symlink(Shown::new(path))));
            }
            _ => Some(Mode::from_raw_mode(stat.st_mode & 0o7777)),
        },
        Err(Errno::NOENT) => None,
        Err(errno) => return Err(errno.into()),
    };
    let (temp_name, temp) = create_temp(&dir)?;
    let written = fill(
        temp,
        content,
        existing.unwrap_or(Mode::from_raw_mode(NEW_FILE_MODE)),
    )
    .and_then(|()| Ok(rustix::fs::renameat(&dir, &temp_name, &dir, &name)?));
    if written.is_err() {
        let _ = rustix::fs::unlinkat(&dir, &temp_name, AtFlags::empty());
    }
    written.map(|()| existing.is_some())
}

/// A new, empty file beside the target, under a name no one else uses.
fn create_temp(dir: &OwnedFd) -> Result<(OsString, OwnedFd), WriteError> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    loop {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let name = OsString::from(format!(".tau-write-{}-{n}", std::process::id()));
        match rustix::fs::openat(dir, &name, flags, Mode::from_raw_mode(0o600)) {
            Ok(fd) => return Ok((name, fd)),
            Err(Errno::EXIST) => {}
            Err(errno) => return Err(errno.into()),
        }
    }
}

fn fill(temp: OwnedFd, content: &str, mode: Mode) -> Result<(), WriteError> {
    let mut file = std::fs::File::from(temp);
    file.write_all(content.as_bytes())?;
    file.sync_all()?;
    rustix::fs::fchmod(&file, mode)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read_file::ReadFile;
    use pretty_assertions::assert_eq;
    use std::os::unix::fs::PermissionsExt;

    fn setup() -> (tempfile::TempDir, WriteFile, ReadFile) {
        let dir = tempfile::tempdir().unwrap();
        let workspace = Workspace::open(dir.path()).unwrap();
        (
            dir,
            WriteFile::new(workspace.clone()),
            ReadFile::new(workspace),
        )
    }

    async fn write(tool: &WriteFile, path: &str, content: &str) -> Result<ToolOutput, ToolError> {
        let input = json!({ "path": path, "content": content });
        tool.run(input, ToolContext::new("t1", "write_file", None))
            .await
    }

    async fn read(tool: &ReadFile, path: &str) -> Result<ToolOutput, ToolError> {
        tool.run(
            json!({ "path": path }),
            ToolContext::new("t2", "read_file", None),
        )
        .await
    }

    #[tokio::test]
    async fn write_then_read_back() {
        let (dir, writer, reader) = setup();
        assert_eq!(
            write(&writer, "plans/garden/beds.md", "tomatoes\nbasil\n").await,
            Ok(ToolOutput::text(
                "created 'plans/garden/beds.md' (15 bytes)"
            ))
        );
        assert_eq!(
            read(&reader, "plans/garden/beds.md").await,
            Ok(ToolOutput::text("tomatoes\nbasil\n"))
        );
        assert_eq!(
            write(&writer, "plans/garden/beds.md", "").await,
            Ok(ToolOutput::text(
                "replaced 'plans/garden/beds.md' (0 bytes)"
            ))
        );
        assert_eq!(
            read(&reader, "plans/garden/beds.md").await,
            Ok(ToolOutput::text(""))
        );
        // No temp file is left beside the target.
        let names: Vec<_> = std::fs::read_dir(dir.path().join("plans/garden"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec!["beds.md"]);
    }

    #[tokio::test]
    async fn modes_are_kept_or_readable() {
        let (dir, writer, _) = setup();
        write(&writer, "new.sh", "echo hi").await.unwrap();
        let mode = |name: &str| {
            std::fs::metadata(dir.path().join(name))
                .unwrap()
                .permissions()
                .mode()
                & 0o777
        };
        assert_eq!(mode("new.sh"), 0o644);
        std::fs::set_permissions(
            dir.path().join("new.sh"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        write(&writer, "new.sh", "echo bye").await.unwrap();
        assert_eq!(mode("new.sh"), 0o755);
    }

    #[tokio::test]
    async fn a_hard_link_to_a_file_outside_is_replaced_never_written_through() {
        let (dir, writer, _) = setup();
        let outside = tempfile::tempdir().unwrap();
        let target = outside.path().join("keep.txt");
        std::fs::write(&target, "outside\n").unwrap();
        std::fs::hard_link(&target, dir.path().join("linked.txt")).unwrap();
        assert_eq!(
            write(&writer, "linked.txt", "new").await,
            Ok(ToolOutput::text("replaced 'linked.txt' (3 bytes)"))
        );
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "outside\n");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("linked.txt")).unwrap(),
            "new"
        );
    }

    #[tokio::test]
    async fn refuses_escapes_and_directories() {
        let (dir, writer, _) = setup();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("file"), "x").unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("out")).unwrap();
        for (path, expected) in [
            (
                "../x",
                "path '../x' leaves the workspace ('..' is not allowed)",
            ),
            (
                "/etc/passwd",
                "path '/etc/passwd' leaves the workspace (absolute paths are not allowed)",
            ),
            (
                "out/x",
                "path 'out/x' goes through a symlink; tools do not follow symlinks",
            ),
            (
                "out",
                "path 'out' goes through a symlink; tools do not follow symlinks",
            ),
            (
                "a/../../b",
                "path 'a/../../b' leaves the workspace ('..' is not allowed)",
            ),
            ("sub", "path 'sub' is a directory"),
            (".", "path '.' is a directory"),
            (
                "file/x",
                "path 'file/x' goes through a file, not a directory",
            ),
        ] {
            assert_eq!(
                write(&writer, path, "x").await,
                Err(ToolError::new(expected)),
                "{path}"
            );
        }
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
    }
}
