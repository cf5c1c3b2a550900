//! `list_dir`: the names in a workspace directory, sorted, directories marked with `/`.

use std::ffi::OsStr;
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt;

use async_trait::async_trait;
use rustix::fs::{Dir, FileType, Mode, OFlags};
use serde::Deserialize;
use serde_json::{Value, json};
use tau_agent::{Tool, ToolContext, ToolError, ToolOutput, ToolSpec};
use tau_core::TauToolSpec;
use tau_protocol::Tier;

use crate::args;
use crate::workspace::{OpenError, Shown, Workspace, kind_at};

/// Names shown per call; a directory of build output should not fill the context.
pub(crate) const LIST_LIMIT: usize = 1000;

pub(crate) struct ListDir {
    spec: ToolSpec,
    workspace: Workspace,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListDirArgs {
    path: String,
}

impl ListDir {
    pub(crate) fn new(workspace: Workspace) -> Self {
        let spec = TauToolSpec::new(
            "list_dir",
            "Lists a directory of the workspace: names sorted, directories ending in '/', at most 1000 (total gives the full count).",
            Tier::Read,
            "lists a directory in the workspace",
        )
        .input_schema(json!({
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "Directory relative to the workspace; '.' is the workspace itself.",
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
impl Tool for ListDir {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn run(&self, input: Value, _context: ToolContext) -> Result<ToolOutput, ToolError> {
        let ListDirArgs { path } = args::parse("list_dir", input)?;
        let workspace = self.workspace.clone();
        let listed = path.clone();
        let mut names = tokio::task::spawn_blocking(move || list(&workspace, &listed))
            .await
            .map_err(|_| {
                ToolError::new(format!("listing {} was interrupted", Shown::new(&path)))
            })??;
        let total = names.len();
        names.truncate(LIST_LIMIT);
        Ok(ToolOutput::json(json!({
            "path": path,
            "entries": names,
            "total": total,
        })))
    }
}

/// The names in the directory at `path`, sorted; directories end in `/`. A symlink is
/// listed as a name: it is not followed, here or by any other tool.
fn list(workspace: &Workspace, path: &str) -> Result<Vec<String>, ToolError> {
    let shown = Shown::new(path);
    let cannot = |error: std::io::Error| {
        ToolError::new(format!("directory {shown} cannot be listed: {error}"))
    };
    let fd = workspace
        .open_file(path, OFlags::RDONLY | OFlags::NONBLOCK, Mode::empty())
        .map_err(|error| match error {
            OpenError::Refused(error) => error.into(),
            OpenError::Missing => ToolError::new(format!("directory {shown} does not exist")),
            OpenError::Io(error) => cannot(error),
        })?;
    let stat = rustix::fs::fstat(&fd).map_err(|e| cannot(e.into()))?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::Directory {
        return Err(ToolError::new(format!(
            "path {shown} is a file; read it with read_file"
        )));
    }
    let mut entries = Dir::read_from(&fd).map_err(|e| cannot(e.into()))?;
    let mut names = Vec::new();
    while let Some(entry) = entries.read() {
        let entry = entry.map_err(|e| cannot(e.into()))?;
        let raw = entry.file_name().to_bytes();
        if raw == b"." || raw == b".." {
            continue;
        }
        let name = OsStr::from_bytes(raw);
        let kind = match entry.file_type() {
            FileType::Unknown => kind_at(fd.as_fd(), name).unwrap_or(FileType::Unknown),
            known => known,
        };
        let mut shown_name = name.to_string_lossy().into_owned();
        if kind == FileType::Directory {
            shown_name.push('/');
        }
        names.push(shown_name);
    }
    names.sort_unstable();
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn setup() -> (tempfile::TempDir, ListDir) {
        let dir = tempfile::tempdir().unwrap();
        let tool = ListDir::new(Workspace::open(dir.path()).unwrap());
        (dir, tool)
    }

    async fn list(tool: &ListDir, path: &str) -> Result<ToolOutput, ToolError> {
        tool.run(
            json!({ "path": path }),
            ToolContext::new("t1", "list_dir", None),
        )
        .await
    }

    #[tokio::test]
    async fn names_are_sorted_with_directories_marked() {
        let (dir, tool) = setup();
        let root = dir.path();
        for name in ["b.txt", "A.md", "a.txt", ".hidden"] {
            std::fs::write(root.join(name), "").unwrap();
        }
        std::fs::create_dir_all(root.join("zeta/inner")).unwrap();
        std::fs::create_dir(root.join("alpha")).unwrap();
        // A link is a name like any other: listing never follows it.
        std::os::unix::fs::symlink("zeta", root.join("link")).unwrap();
        assert_eq!(
            list(&tool, ".").await,
            Ok(ToolOutput::json(json!({
                "path": ".",
                "entries": [".hidden", "A.md", "a.txt", "alpha/", "b.txt", "link", "zeta/"],
                "total": 7,
            })))
        );
        assert_eq!(
            list(&tool, "zeta").await,
            Ok(ToolOutput::json(
                json!({"path": "zeta", "entries": ["inner/"], "total": 1})
            ))
        );
        assert_eq!(
            list(&tool, "zeta/inner").await,
            Ok(ToolOutput::json(
                json!({"path": "zeta/inner", "entries": [], "total": 0})
            ))
        );
    }

    #[tokio::test]
    async fn long_listings_are_cut_and_counted() {
        let (dir, tool) = setup();
        for i in 0..1005 {
            std::fs::write(dir.path().join(format!("f{i:04}")), "").unwrap();
        }
        let expected: Vec<String> = (0..1000).map(|i| format!("f{i:04}")).collect();
        assert_eq!(
            list(&tool, ".").await,
            Ok(ToolOutput::json(
                json!({"path": ".", "entries": expected, "total": 1005})
            ))
        );
    }

    #[tokio::test]
    async fn refuses_escapes_files_and_missing_directories() {
        let (dir, tool) = setup();
        std::fs::write(dir.path().join("a.txt"), "").unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("out")).unwrap();
        std::fs::create_dir(dir.path().join("zeta")).unwrap();
        std::os::unix::fs::symlink("zeta", dir.path().join("link")).unwrap();
        for (path, expected) in [
            ("a.txt", "path 'a.txt' is a file; read it with read_file"),
            ("nope", "directory 'nope' does not exist"),
            ("..", "path '..' leaves the workspace ('..' is not allowed)"),
            (
                "/",
                "path '/' leaves the workspace (absolute paths are not allowed)",
            ),
            (
                "out",
                "path 'out' goes through a symlink; tools do not follow symlinks",
            ),
            (
                "link",
                "path 'link' goes through a symlink; tools do not follow symlinks",
            ),
        ] {
            assert_eq!(
                list(&tool, path).await,
                Err(ToolError::new(expected)),
                "{path}"
            );
        }
    }
}
