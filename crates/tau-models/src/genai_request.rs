//! tau's Converse-shaped request into a genai `ChatRequest`, per wire format.

use genai::chat::{
    ChatMessage, ChatRequest, ContentPart, MessageContent, Tool, ToolCall, ToolResponse,
};
use serde_json::{Value, json};
use tau_agent::{ContentBlock, Message, ModelRequest, Role, ToolResult, ToolResultStatus};

/// The two wire formats genai carries for tau.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wire {
    /// OpenAI chat completions (OpenAI, Ollama, llama.cpp, vLLM, LM Studio).
    OpenAi,
    /// Anthropic Messages.
    Anthropic,
}

/// genai turns a tool named `web_search` into Anthropic's server-side search tool, so such
/// a tau tool would silently never run; refusing is the honest answer.
pub(crate) const ANTHROPIC_RESERVED_TOOL: &str = "web_search";

pub(crate) fn chat_request(wire: Wire, request: &ModelRequest<'_>) -> ChatRequest {
    let mut messages = Vec::new();
    for message in request.messages {
        match message.role {
            Role::Assistant => messages.extend(assistant(message)),
            Role::User => messages.extend(user(wire, message)),
        }
    }
    let mut chat = ChatRequest::new(messages);
    if let Some(system) = request.system_prompt.filter(|s| !s.is_empty()) {
        chat = chat.with_system(system);
    }
    if !request.tool_specs.is_empty() {
        chat = chat.with_tools(request.tool_specs.iter().map(|spec| {
            Tool::new(spec.name.clone())
                .with_description(spec.description.clone())
                .with_schema(spec.input_schema.clone())
        }));
    }
    chat
}

fn assistant(message: &Message) -> Option<ChatMessage> {
    let mut parts = Vec::new();
    for block in &message.content {
        match block {
            // Providers refuse empty text blocks; they carry nothing anyway.
            ContentBlock::Text(text) if text.is_empty() => {}
            ContentBlock::Text(text) => parts.push(ContentPart::Text(text.clone())),
            ContentBlock::ToolUse(tool_use) => parts.push(ContentPart::ToolCall(ToolCall {
                call_id: tool_use.tool_use_id.clone(),
                fn_name: tool_use.name.clone(),
                fn_arguments: tool_use.input.clone(),
                thought_signatures: None,
            })),
            // Results belong to user messages; one here has no place on the wire.
            ContentBlock::ToolResult(_) => {}
        }
    }
    (!parts.is_empty()).then(|| ChatMessage::assistant(MessageContent::from_parts(parts)))
}

/// A user message becomes runs of text and runs of tool results, in order: OpenAI wants
/// each result as its own `tool` message, Anthropic wants them as user blocks.
fn user(wire: Wire, message: &Message) -> Vec<ChatMessage> {
    let mut out = Vec::new();
    let mut texts: Vec<ContentPart> = Vec::new();
    let mut results: Vec<ContentPart> = Vec::new();
    for block in &message.content {
        match block {
            ContentBlock::Text(text) if text.is_empty() => {}
            ContentBlock::Text(text) => {
                flush(&mut out, &mut results, |p| tool_results_message(wire, p));
                texts.push(ContentPart::Text(text.clone()));
            }
            ContentBlock::ToolResult(result) => {
                flush(&mut out, &mut texts, ChatMessage::user);
                results.push(tool_result_part(wire, result));
            }
            // A tool use in a user message has no place on the wire.
            ContentBlock::ToolUse(_) => {}
        }
    }
    flush(&mut out, &mut texts, ChatMessage::user);
    flush(&mut out, &mut results, |p| tool_results_message(wire, p));
    out
}

fn flush(
    out: &mut Vec<ChatMessage>,
    parts: &mut Vec<ContentPart>,
    make: impl FnOnce(MessageContent) -> ChatMessage,
) {
    if !parts.is_empty() {
        out.push(make(MessageContent::from_parts(std::mem::take(parts))));
    }
}

fn tool_results_message(wire: Wire, parts: MessageContent) -> ChatMessage {
    match wire {
        Wire::OpenAi => ChatMessage::tool(parts),
        Wire::Anthropic => ChatMessage::user(parts),
    }
}

/// OpenAI has no error flag, so the result text itself says what happened (tau's refusal
/// texts are written for that). Anthropic gets a raw `tool_result` block: genai's own
/// `ToolResponse` cannot carry `is_error`, a custom part passes through unchanged.
fn tool_result_part(wire: Wire, result: &ToolResult) -> ContentPart {
    let text = result.text();
    match wire {
        Wire::OpenAi => {
            ContentPart::ToolResponse(ToolResponse::new(result.tool_use_id.clone(), text))
        }
        Wire::Anthropic => {
            let mut block = json!({
                "type": "tool_result",
                "tool_use_id": result.tool_use_id,
                "content": text,
            });
            if result.status == ToolResultStatus::Error
                && let Value::Object(map) = &mut block
            {
                map.insert("is_error".into(), Value::Bool(true));
            }
            ContentPart::from_custom(block, None)
        }
    }
}
