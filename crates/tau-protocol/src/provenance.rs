//! Where a piece of a conversation came from, and what a call's arguments owe to it.
//!
//! A [`Source`] names who or what put a text into the conversation: the person, tau, or
//! something outside (a tool's result, a forwarded message). A [`CallProvenance`] travels
//! on a question's card and in the audit log: which argument values first appeared in
//! text from outside, and whether the call was asked because the conversation had read
//! such text.

use serde::{Deserialize, Serialize};

/// Who or what put a text into a conversation.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Source {
    /// The person, typed on `channel`.
    Person { channel: String },
    /// A routine's own prompt: written by the person when they set the routine up.
    Routine { routine: String },
    /// A tool's result. `trusted` when the config says what it returns is the person's own
    /// (their notes), or the text is tau's own words (a clock, a confirmation).
    ToolResult {
        tool: String,
        call_id: String,
        #[serde(default, skip_serializing_if = "is_false")]
        trusted: bool,
    },
    /// A message the person passed on from someone else (a forward, a quote).
    Forwarded {
        channel: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        from: Option<String>,
    },
}

fn is_false(value: &bool) -> bool {
    !*value
}

impl Source {
    /// True for text from outside: what its author wrote may be meant to steer tau.
    pub fn is_untrusted(&self) -> bool {
        match self {
            Self::Person { .. } | Self::Routine { .. } => false,
            Self::ToolResult { trusted, .. } => !trusted,
            Self::Forwarded { .. } => true,
        }
    }

    /// A few words naming the source, in the sentence "first appeared in …": `the result
    /// of mail__read_inbox (call t3)`, `a message forwarded on telegram`.
    pub fn describe(&self) -> String {
        match self {
            Self::Person { channel } => format!("what you typed on {channel}"),
            Self::Routine { routine } => format!("the prompt of routine {routine}"),
            Self::ToolResult { tool, call_id, .. } => {
                format!("the result of {tool} (call {call_id})")
            }
            Self::Forwarded {
                channel,
                from: Some(from),
            } => format!("a message from {from} forwarded on {channel}"),
            Self::Forwarded {
                channel,
                from: None,
            } => format!("a message forwarded on {channel}"),
        }
    }
}

/// One argument value, or an identifier-like run inside it, and where it first appeared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TracedValue {
    /// The argument, as a JSON pointer (`/to`, `/recipients/0`).
    pub argument: String,
    /// The run as the arguments hold it (show it only through the display function).
    pub value: String,
    /// Where it first appeared in this conversation.
    pub source: Source,
    /// Found only in pieces, each in outside text: the model put it together.
    #[serde(default, skip_serializing_if = "is_false")]
    pub assembled: bool,
}

/// What a call's arguments owe to the conversation's texts, and why it was asked.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallProvenance {
    /// Asked (or refused) only because the conversation had read text from outside: the
    /// tool's tier alone would have let it run.
    #[serde(default, skip_serializing_if = "is_false")]
    pub escalated: bool,
    /// The outside texts the conversation read before this call, each once, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub read: Vec<Source>,
    /// Values that first appeared in outside text.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flagged: Vec<TracedValue>,
    /// Values the person typed (or a trusted source holds) before anything outside did.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub typed: Vec<TracedValue>,
}

impl CallProvenance {
    pub fn is_empty(&self) -> bool {
        !self.escalated && self.read.is_empty() && self.flagged.is_empty() && self.typed.is_empty()
    }

    /// True when any argument came from outside text.
    pub fn steered(&self) -> bool {
        !self.flagged.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn sources_are_tagged_on_the_wire() {
        let source = Source::ToolResult {
            tool: "mail__read_inbox".into(),
            call_id: "t3".into(),
            trusted: false,
        };
        assert_eq!(
            serde_json::to_value(&source).unwrap(),
            json!({"type": "tool_result", "tool": "mail__read_inbox", "call_id": "t3"})
        );
        assert!(source.is_untrusted());
        assert_eq!(
            source.describe(),
            "the result of mail__read_inbox (call t3)"
        );
        let person = Source::Person {
            channel: "terminal".into(),
        };
        assert_eq!(
            serde_json::to_value(&person).unwrap(),
            json!({"type": "person", "channel": "terminal"})
        );
        assert!(!person.is_untrusted());
    }

    #[test]
    fn a_provenance_travels_whole_and_an_empty_one_reads_back() {
        let provenance = CallProvenance {
            escalated: true,
            read: vec![Source::Forwarded {
                channel: "telegram".into(),
                from: Some("Mark".into()),
            }],
            flagged: vec![TracedValue {
                argument: "/to".into(),
                value: "mark@evil.example".into(),
                source: Source::Forwarded {
                    channel: "telegram".into(),
                    from: Some("Mark".into()),
                },
                assembled: false,
            }],
            typed: Vec::new(),
        };
        let value = serde_json::to_value(&provenance).unwrap();
        assert_eq!(
            serde_json::from_value::<CallProvenance>(value).unwrap(),
            provenance
        );
        assert_eq!(
            serde_json::from_value::<CallProvenance>(json!({})).unwrap(),
            CallProvenance::default()
        );
        assert!(CallProvenance::default().is_empty());
    }
}
