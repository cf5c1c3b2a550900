//! The input line: editing, pasted lines and the history of sent prompts.

use unicode_segmentation::UnicodeSegmentation;

/// Longest input kept: a prompt, not a file (a file is for the tools to read). A paste
/// beyond it is cut, and the transcript says so.
pub(crate) const MAX_INPUT_BYTES: usize = 64 << 10;

/// What the person is typing. The cursor is a byte index on a grapheme boundary.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Input {
    pub text: String,
    pub cursor: usize,
    history: Vec<String>,
    /// Where Up/Down is in the history; `None` while editing a new line.
    browsing: Option<usize>,
    /// What was being typed before browsing began.
    draft: String,
}

impl Input {
    pub(crate) fn with_history(history: Vec<String>) -> Self {
        Self {
            history,
            ..Self::default()
        }
    }

    /// Inserts `text` at the cursor; false when not all of it fit.
    pub(crate) fn insert(&mut self, text: &str) -> bool {
        let room = MAX_INPUT_BYTES.saturating_sub(self.text.len());
        let mut end = text.len().min(room);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let piece = text.get(..end).unwrap_or_default();
        // A pasted CRLF is one line break.
        let piece = piece.replace("\r\n", "\n").replace('\r', "\n");
        self.text.insert_str(self.cursor, &piece);
        self.cursor += piece.len();
        self.browsing = None;
        end == text.len()
    }

    pub(crate) fn backspace(&mut self) {
        if let Some(start) = self.previous_boundary() {
            self.text.replace_range(start..self.cursor, "");
            self.cursor = start;
        }
    }

    pub(crate) fn delete(&mut self) {
        if let Some(end) = self.next_boundary() {
            self.text.replace_range(self.cursor..end, "");
        }
    }

    pub(crate) fn left(&mut self) {
        if let Some(start) = self.previous_boundary() {
            self.cursor = start;
        }
    }

    pub(crate) fn right(&mut self) {
        if let Some(end) = self.next_boundary() {
            self.cursor = end;
        }
    }

    pub(crate) fn home(&mut self) {
        self.cursor = 0;
    }

    pub(crate) fn end(&mut self) {
        self.cursor = self.text.len();
    }

    pub(crate) fn clear(&mut self) {
        self.text.clear();
        self.cursor = 0;
        self.browsing = None;
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// Takes the text to send and remembers it.
    pub(crate) fn take(&mut self) -> String {
        let text = std::mem::take(&mut self.text);
        self.cursor = 0;
        self.browsing = None;
        if !text.trim().is_empty() && self.history.last() != Some(&text) {
            self.history.push(text.clone());
        }
        text
    }

    /// The previous prompt sent (Up).
    pub(crate) fn older(&mut self) {
        let at = match self.browsing {
            Some(0) => return,
            Some(at) => at - 1,
            None if self.history.is_empty() => return,
            None => {
                self.draft = self.text.clone();
                self.history.len() - 1
            }
        };
        self.show(at);
    }

    /// The next prompt sent, and past the newest the draft again (Down).
    pub(crate) fn newer(&mut self) {
        let Some(at) = self.browsing else { return };
        if at + 1 < self.history.len() {
            self.show(at + 1);
        } else {
            self.text = std::mem::take(&mut self.draft);
            self.cursor = self.text.len();
            self.browsing = None;
        }
    }

    fn show(&mut self, at: usize) {
        if let Some(text) = self.history.get(at) {
            self.text = text.clone();
            self.cursor = self.text.len();
            self.browsing = Some(at);
        }
    }

    /// True when the cursor is on the first (Up) or last (Down) line, where the arrows
    /// browse the history instead of moving between the lines of a paste.
    pub(crate) fn on_first_line(&self) -> bool {
        !self
            .text
            .get(..self.cursor)
            .unwrap_or_default()
            .contains('\n')
    }

    pub(crate) fn on_last_line(&self) -> bool {
        !self
            .text
            .get(self.cursor..)
            .unwrap_or_default()
            .contains('\n')
    }

    fn previous_boundary(&self) -> Option<usize> {
        let before = self.text.get(..self.cursor)?;
        before.grapheme_indices(true).next_back().map(|(at, _)| at)
    }

    fn next_boundary(&self) -> Option<usize> {
        let after = self.text.get(self.cursor..)?;
        after.graphemes(true).next().map(|g| self.cursor + g.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn editing_moves_by_whole_characters() {
        let mut input = Input::default();
        input.insert("ae\u{301}中");
        input.left();
        input.backspace();
        assert_eq!(input.text, "a中");
        input.home();
        input.delete();
        assert_eq!(input.text, "中");
        input.end();
        input.insert("\r\nx");
        assert_eq!(input.text, "中\nx");
    }

    #[test]
    fn up_and_down_browse_the_history_and_keep_the_draft() {
        let mut input = Input::with_history(vec!["one".into(), "two".into()]);
        input.insert("dra");
        input.older();
        assert_eq!(input.text, "two");
        input.older();
        input.older();
        assert_eq!(input.text, "one");
        input.newer();
        assert_eq!(input.text, "two");
        input.newer();
        assert_eq!(input.text, "dra");
        assert_eq!(input.take(), "dra");
        input.older();
        assert_eq!(input.text, "dra");
    }
}
