//! [`OutputBlock`]: what a tool gave back, as a person reads it. A command's result is not
//! shown as the JSON the model reads (`{"exit_code":0,"stdout":"..."}`) but as its parts:
//! short values as fields (`exit_code 0`), texts (its stdout, its stderr) as blocks whose
//! lines are kept. Channels show a block's first lines and say how many more there are.

use serde::{Deserialize, Serialize};

use crate::vocabulary::CallStatus;

/// One part of a tool's result. Everything in it is untrusted: a channel shows names and
/// values through the display function, and a text through its multi-line form.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum OutputBlock {
    /// A short value of the result, shown on one line (`exit_code 0`).
    Field { name: String, value: String },
    /// A text of the result, whole, its line breaks kept: a command's stdout, a file's
    /// content, a tool's plain answer (no name).
    Text {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        text: String,
    },
}

impl OutputBlock {
    /// Whether a call's output is worth showing after its status line: a successful
    /// call's, and a failed call's when the result has fields (a command that exited
    /// non-zero); a failure's plain text is already its status line, and a refused,
    /// unknown, invalid or cancelled call's text is tau's own.
    pub fn worth_showing(status: CallStatus, blocks: &[OutputBlock]) -> bool {
        match status {
            CallStatus::Success => !blocks.is_empty(),
            CallStatus::Error => blocks.iter().any(|b| matches!(b, Self::Field { .. })),
            CallStatus::Refused
            | CallStatus::UnknownTool
            | CallStatus::Invalid
            | CallStatus::Cancelled => false,
        }
    }
}

/// How many lines of a text block a channel shows before it says how many more there are.
pub const OUTPUT_LINES: usize = 8;

/// The lines of `text` a channel shows, and how many more there are.
pub fn shown_lines(text: &str) -> (Vec<&str>, usize) {
    let lines: Vec<&str> = text.lines().collect();
    let more = lines.len().saturating_sub(OUTPUT_LINES);
    (lines.into_iter().take(OUTPUT_LINES).collect(), more)
}

#[cfg(test)]
mod tests {
    use super::shown_lines;

    #[test]
    fn output_shows_after_a_success_or_a_failure_with_fields_only() {
        use super::OutputBlock;
        use crate::vocabulary::CallStatus;
        let text = [OutputBlock::Text {
            name: None,
            text: "Error: no such file".into(),
        }];
        let command = [OutputBlock::Field {
            name: "exit_code".into(),
            value: "1".into(),
        }];
        let table = [
            (CallStatus::Success, &text[..], true),
            (CallStatus::Success, &[][..], false),
            (CallStatus::Error, &text[..], false),
            (CallStatus::Error, &command[..], true),
            (CallStatus::Refused, &text[..], false),
            (CallStatus::UnknownTool, &text[..], false),
            (CallStatus::Invalid, &text[..], false),
            (CallStatus::Cancelled, &command[..], false),
        ];
        for (status, blocks, shown) in table {
            assert_eq!(
                OutputBlock::worth_showing(status, blocks),
                shown,
                "{status:?}"
            );
        }
    }

    #[test]
    fn a_long_text_shows_its_first_lines_and_counts_the_rest() {
        let text = (1..=11)
            .map(|n| n.to_string())
            .collect::<Vec<_>>()
            .join("\n");
        let (shown, more) = shown_lines(&text);
        assert_eq!((shown.len(), shown[0], more), (OUTPUT_LINES, "1", 3));
        assert_eq!(shown_lines("a\nb\n"), (vec!["a", "b"], 0));
        assert_eq!(shown_lines(""), (vec![], 0));
    }

    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn blocks_are_tagged_by_type() {
        let blocks = vec![
            OutputBlock::Field {
                name: "exit_code".into(),
                value: "0".into(),
            },
            OutputBlock::Text {
                name: Some("stdout".into()),
                text: "a\nb\n".into(),
            },
            OutputBlock::Text {
                name: None,
                text: "plain".into(),
            },
        ];
        let value = serde_json::to_value(&blocks).unwrap();
        assert_eq!(
            value,
            json!([
                {"type": "field", "name": "exit_code", "value": "0"},
                {"type": "text", "name": "stdout", "text": "a\nb\n"},
                {"type": "text", "text": "plain"}
            ])
        );
        assert_eq!(
            serde_json::from_value::<Vec<OutputBlock>>(value).unwrap(),
            blocks
        );
    }
}
