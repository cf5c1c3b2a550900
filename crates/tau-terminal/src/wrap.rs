//! Wraps escaped text to the terminal's width without hiding or moving a character.

use tau_core::display::{Measure, wrap_rows};
use unicode_width::UnicodeWidthChar;

/// Wrapped text never gets narrower than this, however narrow the terminal.
pub(crate) const MIN_TEXT_COLUMNS: usize = 16;

/// `text` (already escaped) after `first`, wrapped at `columns` under `rest`; every line
/// but the last ends in `↩`. The rules are [`wrap_rows`]'s; a line cuts between characters.
pub(crate) fn wrap(first: &str, rest: &str, text: &str, columns: usize) -> String {
    let rows = wrap_rows(text, room(first, columns), room(rest, columns), MEASURE);
    let mut out = String::from(first);
    out.push_str(&rows.join(&format!("\n{rest}")));
    out.push('\n');
    out
}

const MEASURE: Measure = Measure {
    width,
    piece: first_char,
};

fn first_char(text: &str) -> Option<&str> {
    text.get(..text.chars().next()?.len_utf8())
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
