//! `append_note`: one timestamped line at the end of `notes.md` in the workspace.

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use tau_agent::{Tool, ToolContext, ToolError, ToolOutput, ToolSpec};
use tau_core::{TauToolSpec, Tier};

use crate::args;
use crate::clock::{TimeSource, rfc3339};
use crate::workspace::Workspace;

pub(crate) const NOTES_FILE: &str = "notes.md";

pub(crate) struct AppendNote {
    spec: ToolSpec,
    workspace: Workspace,
    time: TimeSource,
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
        }
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
        // Resolved on every call: notes.md may have become a symlink since the last one.
        let path = self.workspace.resolve(NOTES_FILE)?;
        let written = line.clone();
        tokio::task::spawn_blocking(move || append_line(&path, &written))
            .await
            .map_err(|_| ToolError::new("appending to notes.md was interrupted"))?
            .map_err(|error| ToolError::new(format!("notes.md cannot be written: {error}")))?;
        Ok(ToolOutput::text(format!("added to notes.md: {line}")))
    }
}

/// Appends `line` and a newline, first ending a last line someone left unterminated.
fn append_line(path: &Path, line: &str) -> std::io::Result<()> {
    // Checked before opening: opening a FIFO would wait for a reader forever.
    match std::fs::metadata(path) {
        Ok(metadata) if !metadata.is_file() => {
            return Err(std::io::Error::other("it is not a regular file"));
        }
        Ok(_) => {}
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => return Err(error),
    }
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .open(path)?;
    let mut text = String::new();
    if file.metadata()?.len() > 0 {
        let mut last = [0u8; 1];
        file.seek(SeekFrom::End(-1))?;
        file.read_exact(&mut last)?;
        if last != [b'\n'] {
            text.push('\n');
        }
    }
    text.push_str(line);
    text.push('\n');
    // One write with O_APPEND: two notes at once never interleave within a line.
    file.write_all(text.as_bytes())
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
    async fn refuses_empty_text_and_a_notes_file_outside() {
        let (dir, tool) = setup();
        assert_eq!(
            note(&tool, " \n ").await,
            Err(ToolError::new("text is empty; there is nothing to note"))
        );
        let outside = tempfile::tempdir().unwrap();
        let target = outside.path().join("stolen.md");
        std::os::unix::fs::symlink(&target, dir.path().join("notes.md")).unwrap();
        assert_eq!(
            note(&tool, "x").await,
            Err(ToolError::new(
                "path 'notes.md' leaves the workspace (a symlink in it points nowhere)"
            ))
        );
        std::fs::write(&target, "").unwrap();
        assert_eq!(
            note(&tool, "x").await,
            Err(ToolError::new(
                "path 'notes.md' leaves the workspace (a symlink in it points outside)"
            ))
        );
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "");
    }
}
