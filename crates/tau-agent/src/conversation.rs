//! Keeping the history valid: the sliding window and the repair of unanswered tool uses.

use crate::message::{ContentBlock, Message, Role, ToolResult, ToolUse};

/// The result a tool use with no answer gets when the conversation goes on.
pub const TOOL_INTERRUPTED_TEXT: &str = "Tool was interrupted.";

/// Keeps at most `window_size` messages, and trims further when the model reports a
/// context overflow. The kept history always starts with a user message that answers no
/// tool use, so no tool use or tool result is ever left without its pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlidingWindow {
    pub window_size: usize,
}

impl Default for SlidingWindow {
    fn default() -> Self {
        Self { window_size: 40 }
    }
}

/// The history cannot be trimmed any further.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the conversation cannot be shortened any further")]
pub struct CannotReduce;

impl SlidingWindow {
    /// Trims to the window after an invocation. Returns how many messages were removed.
    pub fn apply(&self, messages: &mut Vec<Message>) -> usize {
        if messages.len() <= self.window_size {
            return 0;
        }
        match first_clean_start(messages, messages.len() - self.window_size) {
            Some(start) => {
                messages.drain(..start);
                start
            }
            // No clean place to cut inside the window: keep everything rather than orphan a pair.
            None => 0,
        }
    }

    /// Trims after a context overflow: at least one message goes, or the window's excess.
    pub fn reduce(&self, messages: &mut Vec<Message>) -> Result<usize, CannotReduce> {
        let wanted = messages.len().saturating_sub(self.window_size).max(1);
        let start = first_clean_start(messages, wanted).ok_or(CannotReduce)?;
        messages.drain(..start);
        Ok(start)
    }
}

/// The first index at or after `from` where a user message that carries no tool result
/// begins; history may start there without an orphan.
fn first_clean_start(messages: &[Message], from: usize) -> Option<usize> {
    (from..messages.len()).find(|&i| {
        messages.get(i).is_some_and(|m| {
            m.role == Role::User
                && !m
                    .content
                    .iter()
                    .any(|b| matches!(b, ContentBlock::ToolResult(_)))
        })
    })
}

/// A user message answering every tool use of the last message that has no result, or
/// `None` when the history is whole.
pub fn repair_message(messages: &[Message]) -> Option<Message> {
    repair_message_with(messages, |_| None)
}

/// The tool uses of the last message, when it is the model's and none of them has a
/// result yet (the process stopped before it stored them); empty when the history is whole.
pub fn unanswered_tool_uses(messages: &[Message]) -> Vec<ToolUse> {
    match messages.last() {
        Some(last) if last.role == Role::Assistant => last.tool_uses().cloned().collect(),
        Some(_) | None => Vec::new(),
    }
}

/// [`repair_message`], with the result `known` gives for a tool use where it knows what
/// became of the call; the rest are answered `Tool was interrupted.`.
pub fn repair_message_with(
    messages: &[Message],
    known: impl Fn(&ToolUse) -> Option<ToolResult>,
) -> Option<Message> {
    let content: Vec<ContentBlock> =
        unanswered_tool_uses(messages)
            .iter()
            .map(|u| {
                ContentBlock::ToolResult(known(u).unwrap_or_else(|| {
                    ToolResult::error_text(&u.tool_use_id, TOOL_INTERRUPTED_TEXT)
                }))
            })
            .collect();
    (!content.is_empty()).then_some(Message {
        role: Role::User,
        content,
        source: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn tool_use(id: &str) -> Message {
        Message {
            role: Role::Assistant,
            content: vec![ContentBlock::ToolUse(ToolUse {
                tool_use_id: id.into(),
                name: "clock".into(),
                input: json!({}),
            })],
            source: None,
        }
    }
    fn tool_result(id: &str) -> Message {
        Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult(ToolResult::success_text(id, "ok"))],
            source: None,
        }
    }

    fn history() -> Vec<Message> {
        vec![
            Message::user_text("one"),    // 0
            tool_use("a"),                // 1
            tool_result("a"),             // 2
            Message::assistant_text("1"), // 3
            Message::user_text("two"),    // 4
            tool_use("b"),                // 5
            tool_result("b"),             // 6
            Message::assistant_text("2"), // 7
        ]
    }

    #[test]
    fn window_cuts_only_where_no_pair_is_orphaned() {
        let mut messages = history();
        // The window would start at index 2, a tool result; the cut moves to index 4.
        assert_eq!(SlidingWindow { window_size: 6 }.apply(&mut messages), 4);
        assert_eq!(messages, history()[4..].to_vec());
    }

    #[test]
    fn reduce_drops_at_least_one_turn_and_fails_when_it_cannot() {
        let window = SlidingWindow { window_size: 40 };
        let mut messages = history();
        assert_eq!(window.reduce(&mut messages), Ok(4));
        assert_eq!(messages.first(), Some(&Message::user_text("two")));
        assert_eq!(window.reduce(&mut messages), Err(CannotReduce));
        assert_eq!(messages.len(), 4);
    }

    #[test]
    fn unanswered_tool_uses_are_repaired_with_the_interrupted_text() {
        let mut messages = history();
        assert_eq!(repair_message(&messages), None);
        messages.push(Message::user_text("three"));
        messages.push(Message {
            role: Role::Assistant,
            content: vec![
                ContentBlock::Text("both".into()),
                ContentBlock::ToolUse(ToolUse {
                    tool_use_id: "c".into(),
                    name: "x".into(),
                    input: json!({}),
                }),
                ContentBlock::ToolUse(ToolUse {
                    tool_use_id: "d".into(),
                    name: "y".into(),
                    input: json!({}),
                }),
            ],
            source: None,
        });
        assert_eq!(
            repair_message(&messages),
            Some(Message {
                role: Role::User,
                content: vec![
                    ContentBlock::ToolResult(ToolResult::error_text("c", "Tool was interrupted.")),
                    ContentBlock::ToolResult(ToolResult::error_text("d", "Tool was interrupted.")),
                ],
                source: None,
            })
        );
    }

    #[test]
    fn a_known_fate_answers_its_call_and_the_rest_are_interrupted() {
        let mut messages = vec![Message::user_text("go")];
        assert!(unanswered_tool_uses(&messages).is_empty());
        messages.push(Message {
            role: Role::Assistant,
            content: vec![
                ContentBlock::ToolUse(ToolUse {
                    tool_use_id: "c".into(),
                    name: "x".into(),
                    input: json!({}),
                }),
                ContentBlock::ToolUse(ToolUse {
                    tool_use_id: "d".into(),
                    name: "y".into(),
                    input: json!({}),
                }),
            ],
            source: None,
        });
        let ids: Vec<String> = unanswered_tool_uses(&messages)
            .into_iter()
            .map(|u| u.tool_use_id)
            .collect();
        assert_eq!(ids, ["c", "d"]);
        let repaired = repair_message_with(&messages, |u| {
            (u.tool_use_id == "d").then(|| ToolResult::error_text("d", "it may have run"))
        });
        assert_eq!(
            repaired,
            Some(Message {
                role: Role::User,
                content: vec![
                    ContentBlock::ToolResult(ToolResult::error_text("c", "Tool was interrupted.")),
                    ContentBlock::ToolResult(ToolResult::error_text("d", "it may have run")),
                ],
                source: None,
            })
        );
    }
}
