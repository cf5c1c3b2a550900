//! Breaking escaped text into rows without hiding or moving a character: the rules every
//! surface that wraps a question shares (the line chat's prompt, the TUI's card). Each
//! surface says how it measures; the rules are here once.

use super::{RUN_CLOSE, RUN_OPEN, WRAP_MARK};

/// How a surface measures what it draws.
#[derive(Debug, Clone, Copy)]
pub struct Measure {
    /// The cells `text` takes.
    pub width: fn(&str) -> usize,
    /// The smallest piece at the start of `text` (a character, or a grapheme where the
    /// surface draws graphemes); `None` for empty text.
    pub piece: for<'a> fn(&'a str) -> Option<&'a str>,
}

/// `text` (already escaped, one line) in rows of `first_room` cells, then `rest_room`;
/// every row but the last ends in `↩`, which the room must leave a cell for. A row breaks
/// after its last space when it has one, else where it is full, and never inside an escape
/// (`\u{202e}`, `\"`) or a marker (`⟨20 spaces⟩`) that fits on a row. Every character
/// stays, in order: a space at a break stays before the mark, where it shows.
pub fn wrap_rows(text: &str, first_room: usize, rest_room: usize, measure: Measure) -> Vec<String> {
    let mut rows = Rows {
        done: Vec::new(),
        line: String::new(),
        used: 0,
        after_space: None,
        room: first_room,
        rest_room,
        measure,
    };
    let mut remaining = text;
    while let Some(unit) = next_unit(remaining, measure) {
        remaining = remaining.get(unit.len()..).unwrap_or_default();
        rows.add(unit);
    }
    rows.done.push(rows.line);
    rows.done
}

struct Rows {
    done: Vec<String>,
    line: String,
    used: usize,
    /// Just after the row's last space: the byte index and the width up to there.
    after_space: Option<(usize, usize)>,
    room: usize,
    rest_room: usize,
    measure: Measure,
}

impl Rows {
    fn width(&self, text: &str) -> usize {
        (self.measure.width)(text)
    }

    fn room_left(&self) -> usize {
        self.room.saturating_sub(self.used)
    }

    fn add(&mut self, unit: &str) {
        if self.width(unit) > self.room_left() && !self.line.is_empty() {
            self.break_line();
        }
        if self.width(unit) > self.room_left() {
            self.cut(unit);
        } else {
            self.push(unit);
        }
    }

    /// A piece wider than a row goes one smallest piece at a time.
    fn cut(&mut self, unit: &str) {
        let mut remaining = unit;
        while let Some(piece) = (self.measure.piece)(remaining) {
            remaining = remaining.get(piece.len()..).unwrap_or_default();
            if self.width(piece) > self.room_left() && !self.line.is_empty() {
                self.start_line();
            }
            self.push(piece);
        }
    }

    fn push(&mut self, unit: &str) {
        self.line.push_str(unit);
        self.used += self.width(unit);
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
        if self.width(&word) > self.room_left() {
            self.cut(&word);
        } else {
            self.push(&word);
        }
    }

    fn start_line(&mut self) {
        let mut row = std::mem::take(&mut self.line);
        row.push(WRAP_MARK);
        self.done.push(row);
        self.room = self.rest_room;
        self.used = 0;
        self.after_space = None;
    }
}

/// The next piece that should stay on one row: an escape (`\u{202e}`, `\u001b`, `\"`), a
/// marker (`⟨20 spaces⟩`), or one smallest piece.
fn next_unit(text: &str, measure: Measure) -> Option<&str> {
    let first = (measure.piece)(text)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn chars(text: &str) -> usize {
        text.chars().count()
    }

    fn first_char(text: &str) -> Option<&str> {
        text.get(..text.chars().next()?.len_utf8())
    }

    const BY_CHAR: Measure = Measure {
        width: chars,
        piece: first_char,
    };

    #[test]
    fn the_first_row_and_the_rest_have_their_own_room_and_nothing_is_lost() {
        let rows = wrap_rows("ab cd \\u{202e}ef ghijklmnop", 6, 8, BY_CHAR);
        assert_eq!(rows, ["ab cd ↩", "\\u{202e}↩", "ef ↩", "ghijklmn↩", "op"]);
        let joined: String = rows.concat().chars().filter(|&c| c != WRAP_MARK).collect();
        assert_eq!(joined, "ab cd \\u{202e}ef ghijklmnop");
    }
}
