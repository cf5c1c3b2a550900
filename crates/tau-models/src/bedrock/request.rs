//! The ConverseStream request body. tau's messages already have the Converse shape, so they
//! go out as they are, `toolResult.status: "error"` included.

use serde_json::{Map, Value, json};
use tau_agent::{ContentBlock, Message, ModelRequest};

use crate::config::ToolChoice;

pub(crate) struct Inference {
    pub max_tokens: u32,
    pub temperature: Option<f64>,
    pub tool_choice: Option<ToolChoice>,
}

pub(crate) fn converse_body(request: &ModelRequest<'_>, inference: &Inference) -> Value {
    let mut body = Map::new();
    let messages: Vec<Value> = request.messages.iter().filter_map(message).collect();
    body.insert("messages".into(), Value::Array(messages));
    if let Some(system) = request.system_prompt.filter(|s| !s.is_empty()) {
        body.insert("system".into(), json!([{ "text": system }]));
    }
    let mut config = Map::new();
    config.insert("maxTokens".into(), json!(inference.max_tokens));
    if let Some(temperature) = inference.temperature {
        config.insert("temperature".into(), json!(temperature));
    }
    body.insert("inferenceConfig".into(), Value::Object(config));
    if !request.tool_specs.is_empty() {
        let tools: Vec<Value> = request
            .tool_specs
            .iter()
            .map(|spec| {
                json!({ "toolSpec": {
                    "name": spec.name,
                    "description": spec.description,
                    "inputSchema": { "json": spec.input_schema },
                }})
            })
            .collect();
        let mut tool_config = Map::new();
        tool_config.insert("tools".into(), Value::Array(tools));
        // Converse has no "none": the tools stay listed (history may use them) and the model
        // chooses, as with "auto".
        let choice = match &inference.tool_choice {
            None | Some(ToolChoice::None) => None,
            Some(ToolChoice::Auto) => Some(json!({ "auto": {} })),
            Some(ToolChoice::Required) => Some(json!({ "any": {} })),
            Some(ToolChoice::Tool(name)) => Some(json!({ "tool": { "name": name } })),
        };
        if let Some(choice) = choice {
            tool_config.insert("toolChoice".into(), choice);
        }
        body.insert("toolConfig".into(), Value::Object(tool_config));
    }
    Value::Object(body)
}

/// Converse refuses empty text blocks and empty messages; they carry nothing.
fn message(message: &Message) -> Option<Value> {
    let content: Vec<&ContentBlock> = message
        .content
        .iter()
        .filter(|block| !matches!(block, ContentBlock::Text(text) if text.is_empty()))
        .collect();
    if content.is_empty() {
        return None;
    }
    Some(json!({ "role": message.role, "content": content }))
}

/// `model/{id}/converse-stream` under the endpoint; ids hold `:` and `/` (ARNs), which
/// must be escaped inside one path segment.
pub(crate) fn stream_url(base_url: &str, model: &str) -> String {
    let mut encoded = String::with_capacity(model.len());
    for byte in model.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                encoded.push(char::from(byte));
            }
            other => encoded.push_str(&format!("%{other:02X}")),
        }
    }
    format!("{base_url}model/{encoded}/converse-stream")
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn model_ids_are_escaped_in_the_path() {
        assert_eq!(
            stream_url(
                "https://bedrock-runtime.eu-west-1.amazonaws.com/",
                "anthropic.claude-3-5-haiku-20241022-v1:0"
            ),
            "https://bedrock-runtime.eu-west-1.amazonaws.com/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/converse-stream"
        );
    }
}
