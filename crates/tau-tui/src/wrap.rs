//! Wraps escaped text to a box's width without hiding or moving a character.
//!
//! Widths are measured per grapheme exactly as ratatui measures the cells it draws, so a
//! row never spills out of its box. The line chat wraps its prompt the same way; the two
//! share the rules (break after a space, keep an escape or a marker whole, `↩` at the end
//! of a wrapped row) through `tau_core::display::wrap_rows`, each measuring as it draws.

use ratatui::buffer::CellWidth;
use tau_core::display::{Measure, wrap_rows};
use unicode_segmentation::UnicodeSegmentation;

/// Rows never get narrower than this, however narrow the box: below it a row is clipped
/// by its box rather than broken into unreadable pieces.
pub(crate) const MIN_COLUMNS: usize = 4;

/// `text` (already escaped, one line) wrapped at `columns`; every row but the last ends in
/// `↩`, which counts in the width. The rules are [`wrap_rows`]'s; a row cuts between
/// graphemes.
pub(crate) fn wrap(text: &str, columns: usize) -> Vec<String> {
    let room = columns.max(MIN_COLUMNS) - 1;
    wrap_rows(text, room, room, MEASURE)
}

const MEASURE: Measure = Measure {
    width,
    piece: first_grapheme,
};

fn first_grapheme(text: &str) -> Option<&str> {
    text.graphemes(true).next()
}

/// The display width of `text` in cells, as ratatui draws it.
pub(crate) fn width(text: &str) -> usize {
    text.graphemes(true)
        .map(|g| usize::from(g.cell_width()))
        .sum()
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
    use tau_core::display::WRAP_MARK;

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
