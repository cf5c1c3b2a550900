//! `append_note`: one timestamped line at the end of `notes.md` in the workspace.

use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::MetadataExt;

use std::sync::Arc;

use async_trait::async_trait;
use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;
use serde::Deserialize;
use serde_json::{Value, json};
use tau_agent::{Tool, ToolContext, ToolError, ToolOutput, ToolSpec};
use tau_core::TauToolSpec;
use tau_protocol::Tier;

use crate::args;
use crate::clock::{TimeSource, rfc3339};
use crate::workspace::{OpenError, Workspace};
use crate::written::Written;

pub(crate) const NOTES_FILE: &str = "notes.md";

pub(crate) struct AppendNote {
    spec: ToolSpec,
    workspace: Workspace,
    time: TimeSource,
    written: Arc<Written>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AppendNoteArgs {
    text: String,
}

impl AppendNote {
    pub(crate) fn new(workspace: Workspace, time: TimeSource) -> Self {
        let spec = TauToolSpec::new(
            "append_note",
            "Adds a note as one timestamped line at the end of notes.md in the workspace; line breaks in the text become spaces.",
            Tier::Write,
            "appends a timestamped line to notes.md in the workspace",
        )
        .provenance(tau_core::provenance::ProvenanceRule::TRUSTED_LOCAL)
        .input_schema(json!({
            "type": "object",
            "properties": {
                "text": {
                    "type": "string",
                    "description": "The note, e.g. 'Water the basil on Sunday'.",
                },
            },
            "required": ["text"],
            "additionalProperties": false,
        }))
        .build();
        Self {
            spec,
            workspace,
            time,
            written: Arc::default(),
        }
    }

    /// Records `notes.md` in `written` whenever it writes it.
    pub(crate) fn recording(mut self, written: Arc<Written>) -> Self {
        self.written = written;
        self
    }
}

#[async_trait]
impl Tool for AppendNote {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn run(&self, input: Value, _context: ToolContext) -> Result<ToolOutput, ToolError> {
        let AppendNoteArgs { text } = args::parse("append_note", input)?;
        // A note is one line of notes.md: a line break would start a line with no time.
        let text = text
            .split(['\n', '\r'])
            .map(str::trim)
            .filter(|line| !line.is_empty())
            .collect::<Vec<_>>()
            .join(" ");
        if text.is_empty() {
            return Err(ToolError::new("text is empty; there is nothing to note"));
        }
        let line = format!("- {} {text}", rfc3339(&self.time.now()));
        let workspace = self.workspace.clone();
        let written = line.clone();
        tokio::task::spawn_blocking(move || append_line(&workspace, &written))
            .await
            .map_err(|_| ToolError::new("appending to notes.md was interrupted"))??;
        self.written.record("notes.md");
        Ok(ToolOutput::text(format!("added to notes.md: {line}")))
    }
}

/// Why notes.md is refused even though it opened.
const NOT_A_FILE: &str = "it is not a regular file";
const HARD_LINKED: &str =
    "it has more than one hard link, so writing it could change a file outside the workspace";

/// Appends `line` and a newline, first ending a last line someone left unterminated.
fn append_line(workspace: &Workspace, line: &str) -> Result<(), ToolError> {
    let cannot =
        |why: &dyn std::fmt::Display| ToolError::new(format!("notes.md cannot be written: {why}"));
    // Opened anew on every call, beneath the workspace and never through a symlink;
    // non-blocking, so a FIFO cannot hold the call.
    let flags = OFlags::RDWR | OFlags::APPEND | OFlags::CREATE | OFlags::NONBLOCK;
    let fd = workspace
        .open_file(NOTES_FILE, flags, Mode::from_raw_mode(0o644))
        .map_err(|error| match error {
            OpenError::Refused(error) => error.into(),
            OpenError::Io(error) if error.raw_os_error() == Some(Errno::ISDIR.raw_os_error()) => {
                cannot(&NOT_A_FILE)
            }
            OpenError::Missing => cannot(&"the workspace is gone"),
            OpenError::Io(error) => cannot(&error),
        })?;
    let mut file = std::fs::File::from(fd);
    // The file that opened is the one checked: another link to it may be anywhere.
    let metadata = file.metadata().map_err(|e| cannot(&e))?;
    if !metadata.is_file() {
        return Err(cannot(&NOT_A_FILE));
    }
    if metadata.nlink() > 1 {
        return Err(cannot(&HARD_LINKED));
    }
    let mut text = String::new();
    if metadata.len() > 0 {
        let mut last = [0u8; 1];
        file.seek(SeekFrom::End(-1)).map_err(|e| cannot(&e))?;
        file.read_exact(&mut last).map_err(|e| cannot(&e))?;
        if last != [b'\n'] {
            text.push('\n');
        }
    }
    text.push_str(line);
    text.push('\n');
    // One write with O_APPEND: two notes at once never interleave within a line.
    file.write_all(text.as_bytes()).map_err(|e| cannot(&e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn setup() -> (tempfile::TempDir, AppendNote) {
        let dir = tempfile::tempdir().unwrap();
        let workspace = Workspace::open(dir.path()).unwrap();
        let time = TimeSource::fixed("Europe/Istanbul", "2026-05-01T11:03:07Z");
        (dir, AppendNote::new(workspace, time))
    }

    async fn note(tool: &AppendNote, text: &str) -> Result<ToolOutput, ToolError> {
        tool.run(
            json!({ "text": text }),
            ToolContext::new("t1", "append_note", None),
        )
        .await
    }

    #[tokio::test]
    async fn appends_timestamped_lines() {
        let (dir, tool) = setup();
        assert_eq!(
            note(&tool, "Water the basil").await,
            Ok(ToolOutput::text(
                "added to notes.md: - 2026-05-01T14:03:07+03:00 Water the basil"
            ))
        );
        note(&tool, "  two\r\nlines \r more \n\n").await.unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("notes.md")).unwrap(),
            "- 2026-05-01T14:03:07+03:00 Water the basil\n- 2026-05-01T14:03:07+03:00 two lines more\n"
        );
    }

    #[tokio::test]
    async fn ends_an_unterminated_last_line_first() {
        let (dir, tool) = setup();
        std::fs::write(dir.path().join("notes.md"), "# Notes").unwrap();
        note(&tool, "first").await.unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("notes.md")).unwrap(),
            "# Notes\n- 2026-05-01T14:03:07+03:00 first\n"
        );
    }

    #[tokio::test]
    async fn refuses_a_notes_md_that_is_no_file() {
        let (dir, tool) = setup();
        std::fs::create_dir(dir.path().join("notes.md")).unwrap();
        assert_eq!(
            note(&tool, "x").await,
            Err(ToolError::new(
                "notes.md cannot be written: it is not a regular file"
            ))
        );
    }

    #[tokio::test]
    async fn refuses_a_notes_md_hard_linked_to_a_file_outside() {
        let (dir, tool) = setup();
        let outside = tempfile::tempdir().unwrap();
        let target = outside.path().join("stolen.md");
        std::fs::write(&target, "mine\n").unwrap();
        std::fs::hard_link(&target, dir.path().join("notes.md")).unwrap();
        assert_eq!(
            note(&tool, "x").await,
            Err(ToolError::new(
                "notes.md cannot be written: it has more than one hard link, so writing it could change a file outside the workspace"
            ))
        );
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "mine\n");
    }

    #[tokio::test]
    async fn refuses_empty_text_and_a_notes_file_outside() {
        let (dir, tool) = setup();
        assert_eq!(
            note(&tool, " \n ").await,
            Err(ToolError::new("text is empty; there is nothing to note"))
        );
        let outside = tempfile::tempdir().unwrap();
        let target = outside.path().join("stolen.md");
        std::os::unix::fs::symlink(&target, dir.path().join("notes.md")).unwrap();
        // Dangling: creating notes.md would have created the file outside.
        assert_eq!(
            note(&tool, "x").await,
            Err(ToolError::new(
                "path 'notes.md' goes through a symlink; tools do not follow symlinks"
            ))
        );
        assert!(!target.exists());
        std::fs::write(&target, "").unwrap();
        assert_eq!(
            note(&tool, "x").await,
            Err(ToolError::new(
                "path 'notes.md' goes through a symlink; tools do not follow symlinks"
            ))
        );
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "");
    }
}
