//! The one display function for untrusted text. Anything from a model, an MCP peer, a tool
//! result or a file name passes through it before a person reads it, on every channel; the
//! channel then adds its own syntax escaping (HTML, `textContent`).
//!
//! It escapes, as `\u{202e}`, every character that could rewrite a terminal or hide or
//! reorder what a person reads: C0 and C1 controls, format characters (bidi overrides,
//! zero-width characters), every `Default_Ignorable_Code_Point` (the combining grapheme
//! joiner, variation selectors, Hangul fillers, tags), line and paragraph separators,
//! private-use, surrogate and unassigned code points, U+2800 (the blank braille pattern)
//! and every whitespace character other than the ASCII space, tab and newline (a no-break
//! space or an ideographic space reads as a space but is not one to a shell). A run of whitespace longer than a few characters becomes a visible marker
//! such as `⟨20000 spaces⟩`. The marks tau draws itself (`⟨`, `⟩`, `↩`) are escaped when
//! they come from outside, so no text can forge one.
//!
//! The character data is ICU4X's (`icu_properties`, Unicode 18.0 in the version pinned by
//! `Cargo.lock`): the general category and the derived `Default_Ignorable_Code_Point`
//! property of `DerivedCoreProperties.txt`.

mod json;
mod listing;
mod lookalike;
#[cfg(test)]
mod tests;
mod wrap;

use std::fmt::Write as _;

use icu_properties::props::{DefaultIgnorableCodePoint, GeneralCategory};
use icu_properties::{CodePointMapData, CodePointSetData};

pub use json::{
    ArgumentRow, argument_rows, argument_sha256, counted, grouped_digits, json_for_terminal,
    shown_length, sorted_json,
};
pub use listing::{Listing, MAX_LOOKALIKE_NOTES, lookalike_notes};
pub use lookalike::{Lookalike, OddChar, lookalike_arguments, lookalikes, lookalikes_in};
pub use wrap::{Measure, wrap_rows};

/// Opens a whitespace-run marker.
pub const RUN_OPEN: char = '⟨';
/// Closes a whitespace-run marker.
pub const RUN_CLOSE: char = '⟩';
/// Ends a line that a channel wrapped: the text goes on at the next line.
pub const WRAP_MARK: char = '↩';

/// The longest whitespace run a one-line field shows as it is.
const LINE_RUN: usize = 8;
/// The longest run of spaces and tabs multi-line text shows as it is: room for the
/// indentation of code, not for pushing the rest of a line out of sight.
const TEXT_RUN: usize = 64;

/// Untrusted text as one line: every character [`is_escaped`] says is written as
/// `\u{hex}` (line breaks and tabs too), and a run of more than 8 whitespace characters
/// becomes a marker: `⟨20000 spaces⟩` when all are spaces, `⟨12 × \u{3000}⟩` when all are
/// one other character, `⟨10 whitespace: 9 spaces, 1 × \u{a}⟩` for a mix (counted per
/// character, in the order each first appears). Total: never panics, for any input.
pub fn display(text: &str) -> String {
    render(text, Mode::Line)
}

/// Untrusted multi-line text (a model's answer): like [`display`], but `\n` and `\t` stay
/// as they are, a newline ends a whitespace run, and only a run of more than 64 spaces and
/// tabs becomes a marker.
pub fn display_multiline(text: &str) -> String {
    render(text, Mode::Text)
}

/// True for every character [`display`] writes as `\u{hex}`: controls (C0, C1), format
/// characters, `Default_Ignorable_Code_Point`, line and paragraph separators, private
/// use, surrogates, unassigned code points, U+2800, whitespace other than the ASCII space,
/// tab and newline, and tau's own marks. (Tab and newline are controls: a one-line field
/// escapes them too; multi-line text keeps them.)
pub fn is_escaped(c: char) -> bool {
    let category = CodePointMapData::<GeneralCategory>::new().get(c);
    matches!(
        category,
        GeneralCategory::Control
            | GeneralCategory::Format
            | GeneralCategory::LineSeparator
            | GeneralCategory::ParagraphSeparator
            | GeneralCategory::PrivateUse
            | GeneralCategory::Surrogate
            | GeneralCategory::Unassigned
    ) || CodePointSetData::new::<DefaultIgnorableCodePoint>().contains(c)
        // Not ignorable, yet it draws nothing in most fonts.
        || c == '\u{2800}'
        // A space to the eye, a letter to a shell: `sh setup.sh\u{a0}--dry-run` runs the
        // file `setup.sh --dry-run`.
        || (c.is_whitespace() && !matches!(c, ' ' | '\t' | '\n'))
        || matches!(c, RUN_OPEN | RUN_CLOSE | WRAP_MARK)
}

#[derive(Debug, Clone, Copy)]
enum Mode {
    Line,
    Text,
}

impl Mode {
    fn keeps(self, c: char) -> bool {
        matches!(self, Mode::Text) && matches!(c, '\n' | '\t')
    }

    fn in_run(self, c: char) -> bool {
        c.is_whitespace() && !(matches!(self, Mode::Text) && c == '\n')
    }

    fn longest_run(self) -> usize {
        match self {
            Mode::Line => LINE_RUN,
            Mode::Text => TEXT_RUN,
        }
    }
}

fn render(text: &str, mode: Mode) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if mode.in_run(c) {
            let mut run = vec![c];
            while let Some(next) = chars.next_if(|&n| mode.in_run(n)) {
                run.push(next);
            }
            push_run(&mut out, &run, mode);
        } else {
            push_char(&mut out, c, mode);
        }
    }
    out
}

fn push_char(out: &mut String, c: char, mode: Mode) {
    if !mode.keeps(c) && is_escaped(c) {
        push_escape(out, c);
    } else {
        out.push(c);
    }
}

fn push_escape(out: &mut String, c: char) {
    let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
}

fn push_run(out: &mut String, run: &[char], mode: Mode) {
    if run.len() <= mode.longest_run() {
        for &c in run {
            push_char(out, c, mode);
        }
        return;
    }
    // At most one entry per whitespace character Unicode has (25), so a scan is enough.
    let mut kinds: Vec<(char, usize)> = Vec::new();
    for &c in run {
        match kinds.iter_mut().find(|(kind, _)| *kind == c) {
            Some((_, count)) => *count += 1,
            None => kinds.push((c, 1)),
        }
    }
    out.push(RUN_OPEN);
    if let [(c, count)] = kinds.as_slice() {
        push_kind(out, *c, *count);
    } else {
        let _ = write!(out, "{} whitespace: ", run.len());
        for (i, (c, count)) in kinds.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            push_kind(out, *c, *count);
        }
    }
    out.push(RUN_CLOSE);
}

fn push_kind(out: &mut String, c: char, count: usize) {
    match (c, count) {
        (' ', 1) => out.push_str("1 space"),
        (' ', _) => {
            let _ = write!(out, "{count} spaces");
        }
        _ => {
            let _ = write!(out, "{count} × ");
            push_escape(out, c);
        }
    }
}
