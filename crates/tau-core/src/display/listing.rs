//! A listing a person reads in a terminal (`tau devices discover`, `tau devices list` and
//! `show`, `tau grants list` and `show`, `tau approvals`): every field that came from outside
//! tau (a discovery config on the broker, a model's arguments, a stored row) goes through
//! [`display`], and the words a reader could misread are flagged below the entry with the
//! same words a card's lookalike notes use. One type does both, so a listing cannot show a
//! field without also looking at its words.

use serde_json::Value;

use super::lookalike::{Lookalike, lookalikes, lookalikes_in};
use super::{display, sorted_json};

/// The most lookalike words one card, or one entry of a listing, flags; the rest are counted.
pub const MAX_LOOKALIKE_NOTES: usize = 8;

/// The mark and label that open a listing's flag line, as the terminal opens a card's
/// warning note.
const FLAG: &str = "⚠ lookalike: ";

/// The texts of the notes for `found`: one per word up to [`MAX_LOOKALIKE_NOTES`], then how
/// many more there are. Quoted data: show each through [`display`].
pub fn lookalike_notes(found: &[Lookalike]) -> Vec<String> {
    let mut notes: Vec<String> = found
        .iter()
        .take(MAX_LOOKALIKE_NOTES)
        .map(Lookalike::describe)
        .collect();
    if found.len() > MAX_LOOKALIKE_NOTES {
        notes.push(format!(
            "and {} more words that mix scripts or look like ASCII",
            found.len() - MAX_LOOKALIKE_NOTES
        ));
    }
    notes
}

/// The text of one entry of a listing: each field handed to it comes back escaped, and its
/// lookalike words wait for [`Listing::flags`].
#[derive(Debug, Default)]
pub struct Listing {
    found: Vec<Lookalike>,
}

impl Listing {
    pub fn new() -> Self {
        Self::default()
    }

    /// `text` as one line through [`display`]; its lookalike words are flagged as `label`'s.
    pub fn field(&mut self, label: &str, text: &str) -> String {
        self.found.extend(lookalikes(text, label));
        display(text)
    }

    /// `value` as sorted JSON through [`display`]; the lookalike words of its strings (keys
    /// included) are flagged under their paths below `label` (`arguments.command`).
    pub fn json(&mut self, label: &str, value: &Value) -> String {
        self.found.extend(lookalikes_in(value, label));
        display(&sorted_json(value))
    }

    /// JSON as it was stored (`text`, shown exactly, through [`display`]); its lookalike
    /// words are flagged under their paths below `label` when it parses, else as the
    /// words of one text.
    pub fn json_text(&mut self, label: &str, text: &str) -> String {
        match serde_json::from_str::<Value>(text) {
            Ok(value) => self.found.extend(lookalikes_in(&value, label)),
            Err(_) => self.found.extend(lookalikes(text, label)),
        }
        display(text)
    }

    /// One line per lookalike word seen since the last call, `{indent}⚠ lookalike: ...`
    /// (escaped; at most [`MAX_LOOKALIKE_NOTES`], then a count); empty when there is none.
    pub fn flags(&mut self, indent: &str) -> String {
        let found = std::mem::take(&mut self.found);
        lookalike_notes(&found)
            .iter()
            .map(|note| format!("{indent}{FLAG}{}\n", display(note)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;

    #[test]
    fn every_field_is_escaped_and_its_lookalike_words_flagged_below() {
        let mut entry = Listing::new();
        let line = format!(
            "{}  {}  {}",
            entry.field("room", "g\u{430}rage\u{1b}[2J"),
            entry.field("label", "Garage\u{202e}door"),
            entry.json(
                "arguments",
                &json!({"command": "sh setup.\u{455}h\u{200b}", "n": 3})
            ),
        );
        assert_eq!(
            line,
            r#"gаrage\u{1b}[2J  Garage\u{202e}door  {"command":"sh setup.ѕh\u{200b}","n":3}"#
        );
        assert_eq!(
            entry.flags("  "),
            concat!(
                "  ⚠ lookalike: room: \"gаrage\\u001b[2J\" mixes Latin and Cyrillic: U+0430 Cyrillic, looks like \"a\"\n",
                "  ⚠ lookalike: arguments.command: \"setup.ѕh\\u{200b}\" mixes Latin and Cyrillic: U+0455 Cyrillic, looks like \"s\"\n",
            )
        );
        assert_eq!(entry.flags("  "), "", "flags are taken once");
    }

    #[test]
    fn stored_json_is_shown_as_stored_and_flagged_by_path() {
        let mut entry = Listing::new();
        let stored = "{\"command\":\"cat p\u{3bf}rt.txt\"}";
        assert_eq!(entry.json_text("arguments", stored), stored);
        assert_eq!(
            entry.flags(""),
            "⚠ lookalike: arguments.command: \"pοrt.txt\" mixes Latin and Greek: U+03BF Greek, looks like \"o\"\n"
        );
        assert_eq!(entry.json_text("arguments", "{\"p\u{3bf}rt"), "{\"pοrt");
        assert_eq!(
            entry.flags(""),
            "⚠ lookalike: arguments: \"pοrt\" mixes Latin and Greek: U+03BF Greek, looks like \"o\"\n"
        );
    }

    #[test]
    fn plain_words_of_one_script_are_not_flagged() {
        let mut entry = Listing::new();
        assert_eq!(entry.field("room", "mutfak ışığı"), "mutfak ışığı");
        assert_eq!(entry.field("label", "свет на кухне"), "свет на кухне");
        assert_eq!(entry.flags("  "), "");
    }

    #[test]
    fn past_the_most_an_entry_flags_the_rest_are_counted() {
        let mut entry = Listing::new();
        entry.field("label", &["\u{441}\u{43e}\u{440}"; 10].join(" "));
        let flags = entry.flags("");
        assert_eq!(flags.lines().count(), MAX_LOOKALIKE_NOTES + 1);
        assert!(
            flags.ends_with("⚠ lookalike: and 2 more words that mix scripts or look like ASCII\n"),
            "{flags}"
        );
    }
}
