//! Conversation messages in the Strands / Bedrock Converse JSON shape.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    User,
    Assistant,
}

/// One message of the conversation: `{"role":"user","content":[...]}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub content: Vec<ContentBlock>,
    /// Who wrote a user message's text when it was not the person on the conversation's
    /// channel (a forwarded message). Tool results name their own source through their
    /// call; the model never reads this field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<tau_protocol::Source>,
}

/// One block of a message, externally tagged as Converse writes it:
/// `{"text":"..."}`, `{"toolUse":{...}}`, `{"toolResult":{...}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ContentBlock {
    Text(String),
    ToolUse(ToolUse),
    ToolResult(ToolResult),
}

/// A model's request to run one tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolUse {
    pub tool_use_id: String,
    pub name: String,
    pub input: Value,
}

/// Whether a tool call succeeded, as the model reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolResultStatus {
    Success,
    Error,
}

/// The answer to one [`ToolUse`], carried back to the model in a user message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResult {
    pub tool_use_id: String,
    pub status: ToolResultStatus,
    pub content: Vec<ToolResultContent>,
    /// Set when the text is what a tool returned (not the loop's or the gate's own words,
    /// such as a refusal): who wrote it, so the layer above can tell outside text from its
    /// own. The model never reads this field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<tau_protocol::Source>,
}

/// One part of a tool result: `{"text":"..."}` or `{"json":{...}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ToolResultContent {
    Text(String),
    Json(Value),
}

impl Message {
    /// A message of `role` holding `content`, written by the person or the model.
    pub fn new(role: Role, content: Vec<ContentBlock>) -> Self {
        Self {
            role,
            content,
            source: None,
        }
    }

    /// A user message holding one text block.
    pub fn user_text(text: impl Into<String>) -> Self {
        Self::new(Role::User, vec![ContentBlock::Text(text.into())])
    }

    /// An assistant message holding one text block.
    pub fn assistant_text(text: impl Into<String>) -> Self {
        Self::new(Role::Assistant, vec![ContentBlock::Text(text.into())])
    }

    /// The tool uses of this message, in order.
    pub fn tool_uses(&self) -> impl Iterator<Item = &ToolUse> {
        self.content.iter().filter_map(|block| match block {
            ContentBlock::ToolUse(tool_use) => Some(tool_use),
            ContentBlock::Text(_) | ContentBlock::ToolResult(_) => None,
        })
    }

    /// The tool results of this message, in order.
    pub fn tool_results(&self) -> impl Iterator<Item = &ToolResult> {
        self.content.iter().filter_map(|block| match block {
            ContentBlock::ToolResult(result) => Some(result),
            ContentBlock::Text(_) | ContentBlock::ToolUse(_) => None,
        })
    }

    /// All text blocks joined, for showing an answer.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|block| match block {
                ContentBlock::Text(text) => Some(text.as_str()),
                ContentBlock::ToolUse(_) | ContentBlock::ToolResult(_) => None,
            })
            .collect()
    }
}

impl ToolResult {
    /// A successful result with one text part.
    pub fn success_text(tool_use_id: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            tool_use_id: tool_use_id.into(),
            status: ToolResultStatus::Success,
            content: vec![ToolResultContent::Text(text.into())],
            source: None,
        }
    }

    /// An error result with one text part: what the model reads when a call failed or was
    /// refused.
    pub fn error_text(tool_use_id: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            tool_use_id: tool_use_id.into(),
            status: ToolResultStatus::Error,
            content: vec![ToolResultContent::Text(text.into())],
            source: None,
        }
    }

    /// The text parts joined, with JSON parts written compactly: a short summary for logs.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for part in &self.content {
            match part {
                ToolResultContent::Text(text) => out.push_str(text),
                ToolResultContent::Json(value) => out.push_str(&value.to_string()),
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn assistant_message_serializes_to_converse_shape() {
        let message = Message {
            role: Role::Assistant,
            content: vec![
                ContentBlock::Text("...".into()),
                ContentBlock::ToolUse(ToolUse {
                    tool_use_id: "t1".into(),
                    name: "clock".into(),
                    input: json!({}),
                }),
            ],
            source: None,
        };
        assert_eq!(
            serde_json::to_string(&message).unwrap(),
            r#"{"role":"assistant","content":[{"text":"..."},{"toolUse":{"toolUseId":"t1","name":"clock","input":{}}}]}"#
        );
    }

    #[test]
    fn tool_result_message_serializes_to_converse_shape() {
        let message = Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult(ToolResult::error_text(
                "t1", "...",
            ))],
            source: None,
        };
        assert_eq!(
            serde_json::to_string(&message).unwrap(),
            r#"{"role":"user","content":[{"toolResult":{"toolUseId":"t1","status":"error","content":[{"text":"..."}]}}]}"#
        );
    }

    #[test]
    fn json_result_content_round_trips() {
        let text =
            r#"{"toolUseId":"t2","status":"success","content":[{"json":{"a":1}},{"text":"ok"}]}"#;
        let result: ToolResult = serde_json::from_str(text).unwrap();
        assert_eq!(
            result,
            ToolResult {
                tool_use_id: "t2".into(),
                status: ToolResultStatus::Success,
                content: vec![
                    ToolResultContent::Json(json!({"a": 1})),
                    ToolResultContent::Text("ok".into())
                ],
                source: None,
            }
        );
        assert_eq!(serde_json::to_string(&result).unwrap(), text);
        assert_eq!(result.text(), r#"{"a":1}ok"#);
    }

    #[test]
    fn unknown_block_kind_is_an_error_not_a_panic() {
        let parsed = serde_json::from_str::<Message>(r#"{"role":"user","content":[{"image":{}}]}"#);
        assert!(parsed.is_err());
    }
}
