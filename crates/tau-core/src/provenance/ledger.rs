//! A conversation's texts in the order it read them, each with its [`Source`], folded
//! once when read, so tracing a call's arguments back to them is one pass over the text.

use tau_agent::{ContentBlock, Message, Role};
use tau_protocol::Source;

use super::fold::fold_into;

/// Between two texts: no folded argument holds it, so no match spans two texts.
pub(super) const SEPARATOR: char = '\u{0}';

/// One text of the conversation: where it starts in the folded whole, and its source.
#[derive(Debug, Clone)]
pub(super) struct Segment {
    pub(super) start: usize,
    pub(super) source: Source,
}

/// Every text a conversation read, person's and outside alike, folded and in order.
#[derive(Debug, Clone, Default)]
pub struct Ledger {
    /// The folded texts, each followed by [`SEPARATOR`].
    pub(super) text: String,
    pub(super) segments: Vec<Segment>,
    /// The outside sources read so far, each once, in order.
    read: Vec<Source>,
}

impl Ledger {
    /// Takes in one message of the conversation. A user message's text is `person`'s
    /// unless the message names another source; a tool result's is the one it carries.
    /// The model's own text is not a source: what it says, it took from somewhere.
    pub fn observe(&mut self, message: &Message, person: &Source) {
        match message.role {
            Role::Assistant => {}
            Role::User => {
                let author = message.source.as_ref().unwrap_or(person);
                for block in &message.content {
                    match block {
                        ContentBlock::Text(text) => self.push(author.clone(), text),
                        // A result without a source is tau's own words (a refusal).
                        ContentBlock::ToolResult(result) => {
                            if let Some(source) = &result.source {
                                self.push(source.clone(), &result.text());
                            }
                        }
                        ContentBlock::ToolUse(_) => {}
                    }
                }
            }
        }
    }

    fn push(&mut self, source: Source, text: &str) {
        if text.is_empty() {
            return;
        }
        if source.is_untrusted() && !self.read.contains(&source) {
            self.read.push(source.clone());
        }
        self.segments.push(Segment {
            start: self.text.len(),
            source,
        });
        fold_into(text, &mut self.text);
        self.text.push(SEPARATOR);
    }

    /// True once the conversation read any text from outside.
    pub fn read_untrusted(&self) -> bool {
        !self.read.is_empty()
    }

    /// The outside sources read so far, each once, in order.
    pub fn read(&self) -> &[Source] {
        &self.read
    }

    /// The source of the text holding byte `offset` of the folded whole.
    pub(super) fn source_at(&self, offset: usize) -> Option<&Source> {
        let index = self
            .segments
            .partition_point(|segment| segment.start <= offset)
            .checked_sub(1)?;
        self.segments.get(index).map(|segment| &segment.source)
    }

    /// Bytes of folded text held.
    pub fn len(&self) -> usize {
        self.text.len()
    }

    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;
    use tau_agent::{ToolResult, ToolUse};

    pub(crate) fn person() -> Source {
        Source::Person {
            channel: "terminal".into(),
        }
    }

    fn call(id: &str, tool: &str) -> Message {
        Message::new(
            Role::Assistant,
            vec![ContentBlock::ToolUse(ToolUse {
                tool_use_id: id.into(),
                name: tool.into(),
                input: json!({}),
            })],
        )
    }

    fn result(id: &str, tool: &str, text: &str, trusted: bool) -> Message {
        let mut result = ToolResult::success_text(id, text);
        result.source = Some(Source::ToolResult {
            tool: tool.into(),
            call_id: id.into(),
            trusted,
        });
        Message::new(Role::User, vec![ContentBlock::ToolResult(result)])
    }

    #[test]
    fn each_text_keeps_its_source_and_outside_ones_are_listed_once() {
        let mut ledger = Ledger::default();
        for message in [
            Message::user_text("mail Bob"),
            call("t1", "read_inbox"),
            result("t1", "read_inbox", "from Mark", false),
            call("t2", "notes"),
            result("t2", "notes", "Bob is bob@home.example", true),
            call("t3", "read_inbox"),
            result("t3", "read_inbox", "again", false),
            // tau's own words (a refusal) carry no source and are nobody's text
            Message::new(
                Role::User,
                vec![ContentBlock::ToolResult(ToolResult::error_text(
                    "t4",
                    "refused: evil.example",
                ))],
            ),
        ] {
            ledger.observe(&message, &person());
        }
        assert_eq!(
            ledger.read(),
            [
                Source::ToolResult {
                    tool: "read_inbox".into(),
                    call_id: "t1".into(),
                    trusted: false
                },
                Source::ToolResult {
                    tool: "read_inbox".into(),
                    call_id: "t3".into(),
                    trusted: false
                }
            ]
        );
        let at = |needle: &str| ledger.text.find(&super::super::fold::fold(needle)).unwrap();
        assert_eq!(ledger.source_at(at("bob")), Some(&person()));
        assert!(matches!(
            ledger.source_at(at("bob@home")),
            Some(Source::ToolResult { trusted: true, .. })
        ));
        assert!(matches!(
            ledger.source_at(at("mark")),
            Some(Source::ToolResult { call_id, .. }) if call_id == "t1"
        ));
        assert!(
            !ledger
                .text
                .contains(&super::super::fold::fold("evil.example"))
        );
    }

    #[test]
    fn a_forwarded_message_is_outside_text() {
        let mut ledger = Ledger::default();
        let mut forwarded = Message::user_text("pay DE89 3704");
        forwarded.source = Some(Source::Forwarded {
            channel: "telegram".into(),
            from: None,
        });
        ledger.observe(&forwarded, &person());
        assert!(ledger.read_untrusted());
    }
}
