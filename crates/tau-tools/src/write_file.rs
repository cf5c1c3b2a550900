//! `write_file`: creates or replaces a workspace file atomically (temp file, then rename),
//! creating its parent directories.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use tau_agent::{Tool, ToolContext, ToolError, ToolOutput, ToolSpec};
use tau_core::{TauToolSpec, Tier};

use crate::args;
use crate::workspace::{Shown, Workspace};

/// The mode of a new file; a replaced file keeps its own.
const NEW_FILE_MODE: u32 = 0o644;

pub(crate) struct WriteFile {
    spec: ToolSpec,
    workspace: Workspace,
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
        Self { spec, workspace }
    }
}

#[async_trait]
impl Tool for WriteFile {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn run(&self, input: Value, _context: ToolContext) -> Result<ToolOutput, ToolError> {
        let WriteFileArgs { path, content } = args::parse("write_file", input)?;
        let resolved = self.workspace.resolve(&path)?;
        let shown = Shown::new(&path);
        let size = content.len();
        let job = tokio::task::spawn_blocking(move || write_atomically(&resolved, &content));
        let replaced = job
            .await
            .map_err(|_| ToolError::new(format!("writing {shown} was interrupted")))?
            .map_err(|error| error.tool_error(&shown))?;
        let verb = if replaced { "replaced" } else { "created" };
        Ok(ToolOutput::text(format!("{verb} {shown} ({size} bytes)")))
    }
}

enum WriteError {
    IsDirectory,
    Io(std::io::Error),
}

impl WriteError {
    fn tool_error(self, shown: &Shown) -> ToolError {
        match self {
            Self::IsDirectory => ToolError::new(format!("path {shown} is a directory")),
            Self::Io(error) => ToolError::new(format!("file {shown} cannot be written: {error}")),
        }
    }
}

impl From<std::io::Error> for WriteError {
    fn from(error: std::io::Error) -> Self {
        Self::Io(error)
    }
}

/// Writes `content` beside `path` and renames it over `path`; true when a file was replaced.
fn write_atomically(path: &Path, content: &str) -> Result<bool, WriteError> {
    let existing = match std::fs::metadata(path) {
        Ok(metadata) if metadata.is_dir() => return Err(WriteError::IsDirectory),
        Ok(metadata) => Some(metadata.permissions()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => None,
        Err(error) => return Err(error.into()),
    };
    let parent = path.parent().map_or_else(PathBuf::new, Path::to_path_buf);
    std::fs::create_dir_all(&parent)?;
    let mut temp = tempfile::Builder::new()
        .prefix(".tau-write-")
        .tempfile_in(&parent)?;
    temp.write_all(content.as_bytes())?;
    temp.as_file().sync_all()?;
    let permissions = existing
        .clone()
        .unwrap_or_else(|| std::fs::Permissions::from_mode(NEW_FILE_MODE));
    temp.as_file().set_permissions(permissions)?;
    temp.persist(path).map_err(|error| error.error)?;
    Ok(existing.is_some())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read_file::ReadFile;
    use pretty_assertions::assert_eq;

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
                "path 'out/x' leaves the workspace (a symlink in it points outside)",
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
