//! `chat-history` in the home: the prompts typed at `tau chat` with the line editor, for
//! Up and Ctrl-R. This module is its one owner: it creates the file private (0600, a
//! looser one is tightened), appends to it and reads it back. One JSON string a line, so a
//! prompt with line breaks stays one entry and a torn last line costs only itself.

use std::fs::OpenOptions;
use std::io::{self, Write};
use std::path::PathBuf;

use crate::home::Home;
use crate::private;

/// The prompts typed at `tau chat`, the last `keep` of them.
pub struct ChatHistory {
    path: PathBuf,
    keep: usize,
}

impl ChatHistory {
    /// The home's history, keeping the last `keep` prompts (the line editor's size).
    pub fn of(home: &Home, keep: usize) -> Self {
        Self {
            path: home.chat_history(),
            keep,
        }
    }

    /// Past this many lines the file is cut back to the last `keep` at start.
    fn compact_after(&self) -> usize {
        self.keep.saturating_mul(2)
    }

    /// The last `keep` prompts, oldest first; a line that is not a JSON string is
    /// skipped. A missing file is an empty history.
    pub fn load(&self) -> io::Result<Vec<String>> {
        let file = private::open(
            &self.path,
            OpenOptions::new().read(true).append(true).create(true),
        )?;
        let text = io::read_to_string(file)?;
        let lines: Vec<&str> = text.lines().collect();
        let entries: Vec<String> = lines
            .iter()
            .filter_map(|line| serde_json::from_str::<String>(line).ok())
            .collect();
        let keep = entries.len().saturating_sub(self.keep);
        let entries = entries.into_iter().skip(keep).collect::<Vec<_>>();
        if lines.len() > self.compact_after() {
            self.rewrite(&entries)?;
        }
        Ok(entries)
    }

    /// Adds `prompt` at the end.
    pub fn append(&self, prompt: &str) -> io::Result<()> {
        let mut file = private::open(&self.path, OpenOptions::new().append(true).create(true))?;
        let line = serde_json::to_string(prompt).map_err(io::Error::other)? + "\n";
        // One write, so two chats appending at once never interleave within a line.
        file.write_all(line.as_bytes())
    }

    /// Replaces the file with `entries`, through a private file renamed over it.
    fn rewrite(&self, entries: &[String]) -> io::Result<()> {
        let mut temporary = self.path.clone().into_os_string();
        temporary.push(".new");
        let temporary = PathBuf::from(temporary);
        let mut text = String::new();
        for entry in entries {
            text.push_str(&serde_json::to_string(entry).map_err(io::Error::other)?);
            text.push('\n');
        }
        let mut file = private::open(
            &temporary,
            OpenOptions::new().write(true).create(true).truncate(true),
        )?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&temporary, &self.path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use std::os::unix::fs::PermissionsExt;

    const HISTORY_ENTRIES: usize = 500;
    const COMPACT_AFTER: usize = 2 * HISTORY_ENTRIES;

    fn history() -> (tempfile::TempDir, ChatHistory) {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::at(dir.path());
        (dir, ChatHistory::of(&home, HISTORY_ENTRIES))
    }

    fn mode(history: &ChatHistory) -> u32 {
        std::fs::metadata(&history.path)
            .unwrap()
            .permissions()
            .mode()
            & 0o777
    }

    #[test]
    fn prompts_come_back_in_order_with_their_line_breaks_and_the_file_is_private() {
        let (_dir, history) = history();
        assert_eq!(history.load().unwrap(), Vec::<String>::new());
        history.append("lights on").unwrap();
        history.append("two\nlines \"quoted\"").unwrap();
        assert_eq!(
            history.load().unwrap(),
            vec!["lights on".to_owned(), "two\nlines \"quoted\"".to_owned()]
        );
        assert_eq!(mode(&history), 0o600);
    }

    #[test]
    fn a_looser_file_is_tightened_and_a_torn_line_costs_only_itself() {
        let (_dir, history) = history();
        std::fs::write(&history.path, "\"first\"\n\"torn\n{\"x\":1}\n\"last\"\n").unwrap();
        std::fs::set_permissions(&history.path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(
            history.load().unwrap(),
            vec!["first".to_owned(), "last".to_owned()]
        );
        assert_eq!(mode(&history), 0o600);
    }

    #[test]
    fn a_long_history_keeps_its_last_entries_and_is_cut_back() {
        let (_dir, history) = history();
        for n in 0..=COMPACT_AFTER {
            history.append(&format!("p{n}")).unwrap();
        }
        let entries = history.load().unwrap();
        assert_eq!(entries.len(), HISTORY_ENTRIES);
        assert_eq!(
            entries.last().map(String::as_str),
            Some(&*format!("p{COMPACT_AFTER}"))
        );
        let lines = std::fs::read_to_string(&history.path)
            .unwrap()
            .lines()
            .count();
        assert_eq!(lines, HISTORY_ENTRIES);
        assert_eq!(mode(&history), 0o600);
    }
}
