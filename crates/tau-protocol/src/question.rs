//! [`ApprovalQuestion`]: one tier-2 question, carried whole from the gate to every channel,
//! the audit log and the durable store.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::grant::GrantOffer;
use crate::ids::ApprovalId;
use crate::provenance::CallProvenance;
use crate::tier::Tier;

/// A tier-2 call waiting for a person's answer on `channel`. The gate writes it once; the
/// channels, the audit log and the store keep it as it is, so what a person reads after a
/// restart is what was asked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalQuestion {
    /// Names this question; an answer to another id is not an answer to it.
    pub approval_id: ApprovalId,
    /// The model's id of the call this question is about.
    #[serde(alias = "tool_use_id")]
    pub call_id: String,
    pub tool: String,
    pub tier: Tier,
    /// tau's own one line of what the tool does.
    pub effect: String,
    /// A copy of the arguments as the model sent them; changing it changes nothing that
    /// runs. Untrusted: shown only through the display function.
    pub arguments: Value,
    /// The channel the question may be answered on.
    pub channel: String,
    /// When the question is withdrawn unanswered (RFC 3339), if it ever is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<String>,
    /// What tau itself says about this call, beyond the tool's effect.
    #[serde(default, skip_serializing_if = "CallCard::is_empty")]
    pub card: CallCard,
    /// What a "yes, and allow this again" would cover, when the channel may offer it (the
    /// card says it in words too). `None`: only yes or no.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant: Option<GrantOffer>,
}

/// What tau says about one call on its question's card, in tau's words: from its config,
/// its registries and its own analysis of the arguments, never the model's text (a note
/// may quote an argument, as data that channels escape like any other).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallCard {
    /// One line that says what will happen, shown above the tool ("switch ON · Kitchen
    /// light (kitchen)").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headline: Option<String>,
    /// Facts and warnings, in the order they were written.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<CardNote>,
    /// The second, deliberate step approving this call takes (a lock-class device): every
    /// channel asks for it, and a yes without it approves nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirm: Option<ConfirmStep>,
    /// The files the card showed, each with the SHA-256 it had then: the call runs only
    /// while every one still has it. Kept with the stored question, so the check holds
    /// however many restarts lie between the question and its answer.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shown_files: Vec<ShownFile>,
    /// Where the call's argument values came from, and whether it is asked only because
    /// the conversation read text from outside.
    #[serde(default, skip_serializing_if = "CallProvenance::is_empty")]
    pub provenance: CallProvenance,
}

impl CallCard {
    pub fn is_empty(&self) -> bool {
        self.headline.is_none()
            && self.notes.is_empty()
            && self.confirm.is_none()
            && self.shown_files.is_empty()
            && self.provenance.is_empty()
    }

    /// Adds a note at the end.
    pub fn push(&mut self, note: CardNote) {
        self.notes.push(note);
    }
}

/// A second step a person takes to approve: typing (or pressing) the device's short name,
/// or the two-digit number drawn for this one question and shown on its card. A bare yes
/// (`y`, an Approve button alone) never passes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfirmStep {
    /// The device's short name, as the model names it (`garage-door`).
    pub word: String,
    /// Two digits drawn for this question by the gate (`47`); empty until then.
    pub code: String,
}

impl ConfirmStep {
    /// A step that asks for `word`; the gate draws the code.
    pub fn word(word: impl Into<String>) -> Self {
        Self {
            word: word.into(),
            code: String::new(),
        }
    }

    /// True when `typed` (spaces around it ignored) is the word, in any case, or the code.
    /// Nothing else passes: not a yes, not an empty answer, not an undrawn code.
    pub fn accepts(&self, typed: &str) -> bool {
        let typed = typed.trim();
        let word = !self.word.is_empty() && typed.eq_ignore_ascii_case(&self.word);
        let code = self.code.len() == 2 && typed == self.code;
        word || code
    }
}

/// A file a card showed, and what it hashed to when it was shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShownFile {
    /// As the call names it, relative to the workspace.
    pub path: String,
    /// Hex SHA-256 of the whole file; `None` when it could not be read (then the call
    /// never runs: nobody saw what it would run).
    pub sha256: Option<String>,
}

/// One row of a [`CallCard`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CardNote {
    pub level: NoteLevel,
    /// A short word naming what the note is about (`sandbox`, `lookalike`, `file`).
    pub label: String,
    /// One line.
    pub text: String,
    /// A longer body shown under the line (a file's content), folded where it is long.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

impl CardNote {
    /// A fact.
    pub fn info(label: impl Into<String>, text: impl Into<String>) -> Self {
        Self::new(NoteLevel::Info, label.into(), text.into())
    }

    /// Something the person should look at twice.
    pub fn warning(label: impl Into<String>, text: impl Into<String>) -> Self {
        Self::new(NoteLevel::Warning, label.into(), text.into())
    }

    fn new(level: NoteLevel, label: String, text: String) -> Self {
        Self {
            level,
            label,
            text,
            detail: None,
        }
    }

    /// The note with a longer body shown under it.
    #[must_use]
    pub fn with_detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }
}

/// How much a note asks of the person's attention.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoteLevel {
    Info,
    Warning,
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn question(card: CallCard) -> ApprovalQuestion {
        ApprovalQuestion {
            approval_id: crate::ids::ApprovalId::parse("ap_1").unwrap(),
            call_id: "t1".into(),
            tool: "run_command".into(),
            tier: Tier::Physical,
            effect: "runs a shell command".into(),
            arguments: json!({"command": "ls"}),
            channel: "web".into(),
            deadline: None,
            card,
            grant: None,
        }
    }

    #[test]
    fn an_empty_card_is_left_out_of_the_wire() {
        let value = serde_json::to_value(question(CallCard::default())).unwrap();
        assert_eq!(
            value,
            json!({"approval_id": "ap_1", "call_id": "t1", "tool": "run_command", "tier": 2,
                   "effect": "runs a shell command", "arguments": {"command": "ls"},
                   "channel": "web"})
        );
        assert_eq!(
            serde_json::from_value::<ApprovalQuestion>(value).unwrap(),
            question(CallCard::default())
        );
    }

    #[test]
    fn a_card_travels_whole() {
        let mut card = CallCard {
            headline: Some("switch ON · Kitchen light (kitchen)".into()),
            ..CallCard::default()
        };
        card.push(CardNote::info(
            "sandbox",
            "writes: workspace only · network: none",
        ));
        card.push(CardNote::warning("file", "setup.sh (12 bytes)").with_detail("echo hi\nls\n"));
        let value = serde_json::to_value(question(card.clone())).unwrap();
        assert_eq!(
            value["card"],
            json!({
                "headline": "switch ON · Kitchen light (kitchen)",
                "notes": [
                    {"level": "info", "label": "sandbox", "text": "writes: workspace only · network: none"},
                    {"level": "warning", "label": "file", "text": "setup.sh (12 bytes)", "detail": "echo hi\nls\n"}
                ]
            })
        );
        assert_eq!(
            serde_json::from_value::<ApprovalQuestion>(value).unwrap(),
            question(card)
        );
    }

    #[test]
    fn the_files_a_card_showed_travel_with_their_hashes() {
        let card = CallCard {
            shown_files: vec![
                ShownFile {
                    path: "setup.sh".into(),
                    sha256: Some("ab12".into()),
                },
                ShownFile {
                    path: "gone.sh".into(),
                    sha256: None,
                },
            ],
            ..CallCard::default()
        };
        assert!(!card.is_empty());
        let value = serde_json::to_value(question(card.clone())).unwrap();
        assert_eq!(
            value["card"],
            json!({"shown_files": [
                {"path": "setup.sh", "sha256": "ab12"},
                {"path": "gone.sh", "sha256": null}
            ]})
        );
        assert_eq!(
            serde_json::from_value::<ApprovalQuestion>(value).unwrap(),
            question(card)
        );
        // A card stored before the field existed reads as showing no file.
        let older: CallCard = serde_json::from_value(json!({"notes": []})).unwrap();
        assert_eq!(older.shown_files, vec![]);
    }

    #[test]
    fn an_older_line_naming_the_call_tool_use_id_still_reads() {
        let value = json!({"approval_id": "ap_1", "tool_use_id": "t1", "tool": "run_command",
                           "tier": 2, "effect": "runs a shell command",
                           "arguments": {"command": "ls"}, "channel": "web"});
        assert_eq!(
            serde_json::from_value::<ApprovalQuestion>(value).unwrap(),
            question(CallCard::default())
        );
    }

    #[test]
    fn only_the_word_or_the_drawn_code_passes_the_second_step() {
        let step = ConfirmStep {
            word: "garage-door".into(),
            code: "47".into(),
        };
        for typed in ["garage-door", " Garage-Door ", "47", "47\n"] {
            assert!(step.accepts(typed), "{typed:?}");
        }
        for typed in [
            "y",
            "yes",
            "e",
            "evet",
            "",
            " ",
            "4",
            "470",
            "garage",
            "garage-door!",
            "٤٧",
        ] {
            assert!(!step.accepts(typed), "{typed:?}");
        }
        let undrawn = ConfirmStep::word("garage-door");
        assert!(!undrawn.accepts(""));
        assert!(undrawn.accepts("garage-door"));
        let value = serde_json::to_value(CallCard {
            confirm: Some(step.clone()),
            ..CallCard::default()
        })
        .unwrap();
        assert_eq!(
            value,
            json!({"confirm": {"word": "garage-door", "code": "47"}})
        );
        assert!(
            !serde_json::from_value::<CallCard>(value)
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn a_note_level_outside_the_vocabulary_is_refused() {
        let bad = json!({"level": "fine", "label": "x", "text": "y"});
        assert!(serde_json::from_value::<CardNote>(bad).is_err());
    }
}
