//! Wraps escaped text to the terminal's width without hiding or moving a character.

use tau_core::display::{RUN_CLOSE, RUN_OPEN, WRAP_MARK};
use unicode_width::UnicodeWidthChar;

/// Wrapped text never gets narrower than this, however narrow the terminal.
pub(crate) const MIN_TEXT_COLUMNS: usize = 16;

/// `text` (already escaped) after `first`, wrapped at `columns` under `rest`; every line
/// but the last ends in `↩`. A line breaks after its last space when it has one, else
/// where it is full, and never inside an escape (`\u{202e}`, `\"`) or a marker
/// (`⟨20 spaces⟩`) that fits on a line. Every character stays, in order: a space at a
/// break stays before the mark, where it shows.
pub(crate) fn wrap(first: &str, rest: &str, text: &str, columns: usize) -> String {
    let mut lines = Lines {
        done: String::from(first),
        line: String::new(),
        used: 0,
        after_space: None,
        available: room(first, columns),
        rest,
        columns,
    };
    let mut remaining = text;
    while let Some(unit) = next_unit(remaining) {
        remaining = remaining.get(unit.len()..).unwrap_or_default();
        lines.add(unit);
    }
    lines.done.push_str(&lines.line);
    lines.done.push('\n');
    lines.done
}

struct Lines<'a> {
    /// Finished lines, each with its prefix, mark and newline.
    done: String,
    /// The line being filled, without its prefix.
    line: String,
    used: usize,
    /// Where the line can break: just after its last space, and the width up to there.
    after_space: Option<(usize, usize)>,
    available: usize,
    rest: &'a str,
    columns: usize,
}

impl Lines<'_> {
    fn room_left(&self) -> usize {
        self.available.saturating_sub(self.used)
    }

    fn add(&mut self, unit: &str) {
        if width(unit) > self.room_left() && !self.line.is_empty() {
            self.break_line();
        }
        if width(unit) > self.room_left() {
            self.cut(unit);
        } else {
            self.push(unit);
        }
    }

    /// A piece wider than a line goes one character at a time.
    fn cut(&mut self, unit: &str) {
        for (at, c) in unit.char_indices() {
            let piece = unit.get(at..at + c.len_utf8()).unwrap_or_default();
            if width(piece) > self.room_left() && !self.line.is_empty() {
                self.start_line();
            }
            self.push(piece);
        }
    }

    fn push(&mut self, unit: &str) {
        self.line.push_str(unit);
        self.used += width(unit);
        if unit == " " {
            self.after_space = Some((self.line.len(), self.used));
        }
    }

    /// Breaks after the last space and carries the word after it, or breaks right here.
    fn break_line(&mut self) {
        let Some((at, _)) = self.after_space.filter(|&(at, _)| at < self.line.len()) else {
            self.start_line();
            return;
        };
        // Nothing after the last space is a space, so the carried word has no break in it.
        let word = self.line.split_off(at);
        self.start_line();
        if width(&word) > self.room_left() {
            self.cut(&word);
        } else {
            self.push(&word);
        }
    }

    /// Ends the line with the mark and starts the next one under `rest`.
    fn start_line(&mut self) {
        self.done.push_str(&std::mem::take(&mut self.line));
        self.done.push(WRAP_MARK);
        self.done.push('\n');
        self.done.push_str(self.rest);
        self.available = room(self.rest, self.columns);
        self.used = 0;
        self.after_space = None;
    }
}

/// The next piece that should stay on one line: an escape (`\u{202e}`, `\u001b`, `\"`),
/// a marker (`⟨20 spaces⟩`), or one character.
fn next_unit(text: &str) -> Option<&str> {
    let first = text.chars().next()?;
    let end = match first {
        '\\' => escape_len(text),
        RUN_OPEN => text.find(RUN_CLOSE).map(|at| at + RUN_CLOSE.len_utf8()),
        _ => None,
    };
    text.get(..end.unwrap_or(first.len_utf8()))
}

/// The length of the escape at the start of `text` (which starts with a backslash).
fn escape_len(text: &str) -> Option<usize> {
    let rest = text.get(1..)?;
    let hex = |digits: &str| !digits.is_empty() && digits.chars().all(|c| c.is_ascii_hexdigit());
    if let Some(braced) = rest.strip_prefix("u{") {
        let close = braced.find('}').filter(|&close| close <= 6)?;
        return hex(braced.get(..close)?).then_some(close + 4);
    }
    if let Some(digits) = rest.strip_prefix('u').and_then(|r| r.get(..4)) {
        return hex(digits).then_some(6);
    }
    rest.chars().next().map(|c| 1 + c.len_utf8())
}

fn width(text: &str) -> usize {
    text.chars().map(|c| c.width().unwrap_or(0)).sum()
}

/// Columns left after `prefix` and one for the mark.
fn room(prefix: &str, columns: usize) -> usize {
    columns
        .saturating_sub(width(prefix) + 1)
        .max(MIN_TEXT_COLUMNS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn lines_break_after_spaces_and_never_inside_an_escape_or_a_marker() {
        let cases = [
            // Fits: unchanged.
            ("> ", "  ", "all of it", 30, "> all of it\n"),
            // After the last space that fits; the space stays before the mark.
            (
                "> ",
                "  ",
                "rm -rf /tmp/x and then some more",
                23,
                "> rm -rf /tmp/x and ↩\n  then some more\n",
            ),
            // No space: where the line is full.
            (
                "> ",
                "  ",
                "abcdefghijklmnopqrstuvwxyz",
                20,
                "> abcdefghijklmnopq↩\n  rstuvwxyz\n",
            ),
            // An escape or a marker moves to the next line whole.
            (
                "> ",
                "  ",
                "abcdefghijklm\\u{202e}xyz",
                20,
                "> abcdefghijklm↩\n  \\u{202e}xyz\n",
            ),
            (
                "> ",
                "  ",
                "abcdefghijklmno\\u001bxyz",
                20,
                "> abcdefghijklmno↩\n  \\u001bxyz\n",
            ),
            (
                "> ",
                "  ",
                "abcdefghijklmn⟨20 spaces⟩x",
                20,
                "> abcdefghijklmn↩\n  ⟨20 spaces⟩x\n",
            ),
            // Wide characters count two columns.
            (
                "> ",
                "  ",
                "中文中文中文中文中文",
                20,
                "> 中文中文中文中文↩\n  中文\n",
            ),
        ];
        for (first, rest, text, columns, expected) in cases {
            assert_eq!(
                wrap(first, rest, text, columns),
                expected,
                "{text:?} at {columns}"
            );
        }
    }

    #[test]
    fn a_marker_wider_than_a_line_is_cut() {
        let marker = "⟨30 whitespace: 29 spaces, 1 × \\u{9}⟩";
        let wrapped = wrap("> ", "  ", marker, 20);
        assert_eq!(
            wrapped,
            "> ⟨30 whitespace: 2↩\n  9 spaces, 1 × \\u{↩\n  9}⟩\n"
        );
    }
}
