//! What tau writes on a tier-2 question's card, beyond the tool's effect line.
//!
//! A [`CardWriter`] knows something the model cannot write: a sandbox's policy, a device
//! registry, an analysis of the arguments. Writers are registered on the
//! [`ToolCatalog`](crate::ToolCatalog), so every gate built on it (a conversation's, the
//! MCP server's, a routine's) puts the same card in front of the person.

use serde_json::Value;
use tau_protocol::{CallCard, CardNote};

/// Adds tau's own words about one call to its card.
///
/// Runs for tier-2 calls to registered tools, right before the question is asked. A writer
/// never refuses a call (the gate decides that); one that cannot say what it should adds a
/// warning note saying so.
pub trait CardWriter: Send + Sync {
    fn write(&self, tool: &str, arguments: &Value, card: &mut CallCard);

    /// A stored question's card, right before its approved call runs: perhaps in a tau
    /// started after the question was asked, which remembers nothing of it. The writer
    /// takes back what the card promised (the hashes of the files it showed), or refuses
    /// the call with the text the model reads instead.
    fn resume(&self, _tool: &str, _arguments: &Value, _card: &CallCard) -> Result<Resumed, String> {
        Ok(Resumed::Nothing)
    }
}

/// What a [`CardWriter`] did with a stored card whose call is about to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resumed {
    /// Nothing on the card is this writer's to hold the call to.
    Nothing,
    /// The call is held to the card's `shown_files`: it runs only while each still
    /// hashes to what the person was shown.
    HoldsShownFiles,
}

/// What the model reads when an approved call's question showed files and nothing can
/// check them any more: the call did not run.
pub const SHOWN_FILES_UNCHECKED_TEXT: &str = "the call did not run: tau cannot check that the \
    files its question showed still hold what the user saw. Ask the user again if it is \
    still needed.";

impl<F: Fn(&str, &Value, &mut CallCard) + Send + Sync> CardWriter for F {
    fn write(&self, tool: &str, arguments: &Value, card: &mut CallCard) {
        self(tool, arguments, card);
    }
}

/// Flags every word of the arguments a reader could take for another: one that mixes
/// scripts, or holds characters that look like ASCII (see [`crate::display::lookalikes`]),
/// with the code points of its odd characters, as a warning note labelled `lookalike`.
/// Plain text of one script (Turkish, Russian, Chinese) gets no note. The listings of
/// the command line flag theirs with the same words ([`crate::display::Listing`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct LookalikeWriter;

impl CardWriter for LookalikeWriter {
    fn write(&self, _tool: &str, arguments: &Value, card: &mut CallCard) {
        let found = crate::display::lookalike_arguments(arguments);
        for note in crate::display::lookalike_notes(&found) {
            card.push(CardNote::warning(LOOKALIKE, note));
        }
    }
}

/// The label of a lookalike note.
pub const LOOKALIKE: &str = "lookalike";

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;
    use tau_protocol::NoteLevel;

    use super::*;

    fn card(arguments: &Value) -> CallCard {
        let mut card = CallCard::default();
        LookalikeWriter.write("run_command", arguments, &mut card);
        card
    }

    #[test]
    fn a_lookalike_word_is_a_warning_with_its_code_points() {
        let written = card(&json!({"command": "sh setup.\u{455}h", "timeout_seconds": 30}));
        assert_eq!(
            written.notes,
            vec![CardNote::warning(
                "lookalike",
                r#"command: "setup.ѕh" mixes Latin and Cyrillic: U+0455 Cyrillic, looks like "s""#
            )]
        );
        assert!(written.notes.iter().all(|n| n.level == NoteLevel::Warning));
    }

    #[test]
    fn the_unchecked_files_text_is_byte_exact() {
        assert_eq!(
            SHOWN_FILES_UNCHECKED_TEXT,
            "the call did not run: tau cannot check that the files its question showed still \
             hold what the user saw. Ask the user again if it is still needed."
        );
        assert!(!SHOWN_FILES_UNCHECKED_TEXT.contains("  "));
    }

    #[test]
    fn plain_turkish_cyrillic_and_cjk_text_gets_no_note() {
        let written = card(&json!({
            "command": "echo 'kırmızı ışık' >> notlar; echo привет >> заметки; echo 你好 >> 笔记"
        }));
        assert!(written.is_empty(), "{written:?}");
    }

    #[test]
    fn many_lookalikes_are_counted_past_the_first_eight() {
        let command = ["\u{441}\u{43e}\u{440}"; 11].join(" ");
        let written = card(&json!({ "command": command }));
        assert_eq!(written.notes.len(), 9);
        assert_eq!(
            written.notes[8].text,
            "and 3 more words that mix scripts or look like ASCII"
        );
    }
}
