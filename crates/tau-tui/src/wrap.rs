//! Wraps escaped text to a box's width without hiding or moving a character.
//!
//! Widths are measured per grapheme exactly as ratatui measures the cells it draws, so a
//! row never spills out of its box. The line chat wraps its prompt the same way; the two
//! share the rules (break after a space, keep an escape or a marker whole, `↩` at the end
//! of a wrapped row), not the code, because channels do not import each other.

use ratatui::buffer::CellWidth;
use tau_core::display::{RUN_CLOSE, RUN_OPEN, WRAP_MARK};
use unicode_segmentation::UnicodeSegmentation;

/// Rows never get narrower than this, however narrow the box: below it a row is clipped
/// by its box rather than broken into unreadable pieces.
pub(crate) const MIN_COLUMNS: usize = 4;

/// `text` (already escaped, one line) wrapped at `columns`; every row but the last ends in
/// `↩`, which counts in the width. A row breaks after its last space when it has one, else
/// where it is full, and never inside an escape (`\u{202e}`, `\"`) or a marker
/// (`⟨20 spaces⟩`) that fits on a row. Every character stays, in order.
pub(crate) fn wrap(text: &str, columns: usize) -> Vec<String> {
    let mut rows = Rows {
        done: Vec::new(),
        line: String::new(),
        used: 0,
        after_space: None,
        room: columns.max(MIN_COLUMNS) - 1,
    };
    let mut remaining = text;
    while let Some(unit) = next_unit(remaining) {
        remaining = remaining.get(unit.len()..).unwrap_or_default();
        rows.add(unit);
    }
    // The last row needs no mark: it may use the mark's column too.
    rows.done.push(rows.line);
    rows.done
}

/// The display width of `text` in cells, as ratatui draws it.
pub(crate) fn width(text: &str) -> usize {
    text.graphemes(true)
        .map(|g| usize::from(g.cell_width()))
        .sum()
}

struct Rows {
    done: Vec<String>,
    line: String,
    used: usize,
    /// Just after the row's last space: the byte index and the width up to there.
    after_space: Option<(usize, usize)>,
    room: usize,
}

impl Rows {
    fn room_left(&self) -> usize {
        self.room.saturating_sub(self.used)
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

    /// A piece wider than a row goes one grapheme at a time.
    fn cut(&mut self, unit: &str) {
        for grapheme in unit.graphemes(true) {
            if width(grapheme) > self.room_left() && !self.line.is_empty() {
                self.start_line();
            }
            self.push(grapheme);
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
        let word = self.line.split_off(at);
        self.start_line();
        if width(&word) > self.room_left() {
            self.cut(&word);
        } else {
            self.push(&word);
        }
    }

    fn start_line(&mut self) {
        let mut row = std::mem::take(&mut self.line);
        row.push(WRAP_MARK);
        self.done.push(row);
        self.used = 0;
        self.after_space = None;
    }
}

/// The next piece that should stay on one row: an escape (`\u{202e}`, `\u001b`, `\"`), a
/// marker (`⟨20 spaces⟩`), or one grapheme.
fn next_unit(text: &str) -> Option<&str> {
    let first = text.graphemes(true).next()?;
    let end = match first.chars().next() {
        Some('\\') => escape_len(text),
        Some(RUN_OPEN) => text.find(RUN_CLOSE).map(|at| at + RUN_CLOSE.len_utf8()),
        _ => None,
    };
    text.get(..end.unwrap_or(first.len()))
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

/// `text` cut to `columns` cells, ending in `…` when something was left out. Only for
/// one-line summaries whose whole text is one key away (a collapsed tool call).
pub(crate) fn shorten(text: &str, columns: usize) -> String {
    if width(text) <= columns {
        return text.to_owned();
    }
    let mut out = String::new();
    let mut used = 0;
    for grapheme in text.graphemes(true) {
        let w = width(grapheme);
        if used + w + 1 > columns {
            break;
        }
        out.push_str(grapheme);
        used += w;
    }
    if columns > 0 {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn rows_break_after_spaces_and_never_inside_an_escape_or_a_marker() {
        let cases: [(&str, usize, &[&str]); 7] = [
            ("all of it", 30, &["all of it"]),
            (
                "rm -rf /tmp/x and then some more",
                21,
                &["rm -rf /tmp/x and ↩", "then some more"],
            ),
            (
                "abcdefghijklmnopqrstuvwxyz",
                18,
                &["abcdefghijklmnopq↩", "rstuvwxyz"],
            ),
            (
                "abcdefghijklm\\u{202e}xyz",
                18,
                &["abcdefghijklm↩", "\\u{202e}xyz"],
            ),
            (
                "abcdefghijklmno\\u001bxyz",
                18,
                &["abcdefghijklmno↩", "\\u001bxyz"],
            ),
            (
                "abcdefghijklmn⟨20 spaces⟩x",
                18,
                &["abcdefghijklmn↩", "⟨20 spaces⟩x"],
            ),
            // Wide characters count two cells and never straddle the edge.
            ("中文中文中文中文中文", 18, &["中文中文中文中文↩", "中文"]),
        ];
        for (text, columns, expected) in cases {
            assert_eq!(wrap(text, columns), expected, "{text:?} at {columns}");
        }
    }

    #[test]
    fn no_row_is_wider_than_its_box_and_nothing_is_lost() {
        let text = "e\u{301}中🙂 ".repeat(40) + "⟨30 whitespace: 29 spaces, 1 × \\u{9}⟩";
        for columns in [1, 2, 3, 4, 5, 9, 17, 40, 80] {
            let rows = wrap(&text, columns);
            for row in &rows {
                assert!(
                    width(row) <= columns.max(MIN_COLUMNS),
                    "{columns}: {row:?} is {} wide",
                    width(row)
                );
            }
            let joined: String = rows
                .iter()
                .map(|r| r.strip_suffix(WRAP_MARK).unwrap_or(r))
                .collect();
            assert_eq!(joined, text, "{columns}");
        }
    }

    #[test]
    fn shorten_marks_what_it_leaves_out() {
        assert_eq!(shorten("short", 10), "short");
        assert_eq!(shorten("abcdefghijkl", 6), "abcde…");
        assert_eq!(shorten("中文中文", 5), "中文…");
    }
}
