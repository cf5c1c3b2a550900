//! The history as the model reads it: every text from outside framed as quoted data with
//! its source ([`super::texts::framed`]). The stored history stays as it happened.

use tau_agent::{ContentBlock, Message, ModelView, Role, ToolResult, ToolResultContent};

use super::texts::framed;

/// Frames outside text for the model; a trusted tool's result and tau's own words are
/// shown as they are.
#[derive(Debug, Clone, Copy, Default)]
pub struct FramedView;

impl ModelView for FramedView {
    fn view(&self, messages: &[Message]) -> Option<Vec<Message>> {
        let mut viewed = Vec::with_capacity(messages.len());
        for message in messages {
            if message.role == Role::Assistant {
                viewed.push(message.clone());
                continue;
            }
            let forwarded = message.source.as_ref().filter(|s| s.is_untrusted());
            let content = message
                .content
                .iter()
                .map(|block| match block {
                    ContentBlock::Text(text) => match forwarded {
                        Some(source) => ContentBlock::Text(framed(source, text)),
                        None => block.clone(),
                    },
                    ContentBlock::ToolResult(result) => match &result.source {
                        Some(source) if source.is_untrusted() => {
                            ContentBlock::ToolResult(ToolResult {
                                tool_use_id: result.tool_use_id.clone(),
                                status: result.status,
                                content: vec![ToolResultContent::Text(framed(
                                    source,
                                    &result.text(),
                                ))],
                                source: None,
                            })
                        }
                        _ => block.clone(),
                    },
                    ContentBlock::ToolUse(_) => block.clone(),
                })
                .collect();
            viewed.push(Message {
                role: message.role,
                content,
                source: None,
            });
        }
        Some(viewed)
    }
}
