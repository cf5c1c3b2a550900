//! `read_file`: a UTF-8 text file from the workspace, up to a size cap.

use std::io::Read;

use async_trait::async_trait;
use rustix::fs::{Mode, OFlags};
use serde::Deserialize;
use serde_json::{Value, json};
use tau_agent::{Tool, ToolContext, ToolError, ToolOutput, ToolSpec};
use tau_core::TauToolSpec;
use tau_protocol::Tier;

use crate::args;
use crate::workspace::{OpenError, Shown, Workspace};

/// Larger files would crowd the model's context; the person can split them.
pub(crate) const READ_LIMIT_BYTES: u64 = 256 * 1024;

pub(crate) struct ReadFile {
    spec: ToolSpec,
    workspace: Workspace,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadFileArgs {
    path: String,
}

impl ReadFile {
    pub(crate) fn new(workspace: Workspace) -> Self {
        let spec = TauToolSpec::new(
            "read_file",
            "Reads a UTF-8 text file (at most 256 KiB) from the workspace.",
            Tier::Read,
            "reads a text file in the workspace",
        )
        .input_schema(json!({
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "Path relative to the workspace, e.g. 'notes.md'.",
                },
            },
            "required": ["path"],
            "additionalProperties": false,
        }))
        .build();
        Self { spec, workspace }
    }
}

#[async_trait]
impl Tool for ReadFile {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn run(&self, input: Value, _context: ToolContext) -> Result<ToolOutput, ToolError> {
        let ReadFileArgs { path } = args::parse("read_file", input)?;
        let workspace = self.workspace.clone();
        tokio::task::spawn_blocking(move || read(&workspace, &path))
            .await
            .map_err(|_| ToolError::new("reading the file was interrupted"))?
    }
}

fn read(workspace: &Workspace, path: &str) -> Result<ToolOutput, ToolError> {
    let shown = Shown::new(path);
    let cannot =
        |error: std::io::Error| ToolError::new(format!("file {shown} cannot be read: {error}"));
    // Non-blocking, so a FIFO cannot hold the call; it is refused below like any non-file.
    let fd = workspace
        .open_file(path, OFlags::RDONLY | OFlags::NONBLOCK, Mode::empty())
        .map_err(|error| match error {
            OpenError::Refused(error) => error.into(),
            OpenError::Missing => ToolError::new(format!("file {shown} does not exist")),
            OpenError::Io(error) => cannot(error),
        })?;
    let file = std::fs::File::from(fd);
    // What was opened is what is checked: the name may point elsewhere by now.
    let metadata = file.metadata().map_err(cannot)?;
    if metadata.is_dir() {
        return Err(ToolError::new(format!(
            "path {shown} is a directory; list it with list_dir"
        )));
    }
    if !metadata.is_file() {
        return Err(ToolError::new(format!(
            "path {shown} is not a regular file"
        )));
    }
    // Read one byte past the cap rather than trusting the size: the file may grow.
    let mut bytes = Vec::new();
    file.take(READ_LIMIT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(cannot)?;
    if bytes.len() as u64 > READ_LIMIT_BYTES {
        let size = metadata.len().max(READ_LIMIT_BYTES + 1);
        return Err(ToolError::new(format!(
            "file {shown} is {size} bytes; read_file reads at most {READ_LIMIT_BYTES} bytes (256 KiB)"
        )));
    }
    let text = String::from_utf8(bytes)
        .map_err(|_| ToolError::new(format!("file {shown} is not UTF-8 text")))?;
    Ok(ToolOutput::text(text))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn setup() -> (tempfile::TempDir, ReadFile) {
        let dir = tempfile::tempdir().unwrap();
        let tool = ReadFile::new(Workspace::open(dir.path()).unwrap());
        (dir, tool)
    }

    async fn read(tool: &ReadFile, path: &str) -> Result<ToolOutput, ToolError> {
        tool.run(
            json!({ "path": path }),
            ToolContext::new("t1", "read_file", None),
        )
        .await
    }

    #[tokio::test]
    async fn reads_text_exactly() {
        let (dir, tool) = setup();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/a.txt"), "héllo\nworld\n").unwrap();
        assert_eq!(
            read(&tool, "sub/a.txt").await,
            Ok(ToolOutput::text("héllo\nworld\n"))
        );
    }

    #[tokio::test]
    async fn refuses_what_it_cannot_show() {
        let (dir, tool) = setup();
        std::fs::write(dir.path().join("big.txt"), vec![b'a'; 300_000]).unwrap();
        std::fs::write(dir.path().join("limit.txt"), vec![b'a'; 262_144]).unwrap();
        std::fs::write(dir.path().join("bin"), [0xff, 0xfe, 0x00]).unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", dir.path().join("passwd")).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            dir.path().join("fifo"),
            rustix::fs::FileType::Fifo,
            Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
        for (path, expected) in [
            ("fifo", "path 'fifo' is not a regular file"),
            (
                "big.txt",
                "file 'big.txt' is 300000 bytes; read_file reads at most 262144 bytes (256 KiB)",
            ),
            ("bin", "file 'bin' is not UTF-8 text"),
            ("sub", "path 'sub' is a directory; list it with list_dir"),
            ("missing.txt", "file 'missing.txt' does not exist"),
            (
                "../x",
                "path '../x' leaves the workspace ('..' is not allowed)",
            ),
            (
                "/etc/passwd",
                "path '/etc/passwd' leaves the workspace (absolute paths are not allowed)",
            ),
            (
                "passwd",
                "path 'passwd' goes through a symlink; tools do not follow symlinks",
            ),
            (
                "a/../../b",
                "path 'a/../../b' leaves the workspace ('..' is not allowed)",
            ),
        ] {
            assert_eq!(
                read(&tool, path).await,
                Err(ToolError::new(expected)),
                "{path}"
            );
        }
        assert_eq!(
            read(&tool, "limit.txt").await,
            Ok(ToolOutput::text("a".repeat(262_144)))
        );
    }
}
