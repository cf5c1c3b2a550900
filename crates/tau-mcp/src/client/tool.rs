//! One tool of an MCP server, as a tau tool: the spec tau adopted for it and a `run` that
//! calls the server, bounded by the server's timeout.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock, ResourceContents};
use serde_json::{Map, Value};
use tau_agent::{Tool, ToolContext, ToolError, ToolOutput, ToolSpec};
use tau_agent::{ToolResultContent, ToolResultStatus};
use tau_core::{AuditEvent, ErrorSite, EventBus};

use super::connect::Connection;

/// The most text a result hands the model; a server cannot flood the conversation.
const MAX_RESULT_CHARS: usize = 100_000;

pub(crate) struct McpTool {
    pub spec: ToolSpec,
    /// The name the server knows the tool by.
    pub remote: String,
    pub connection: Arc<Connection>,
    pub timeout: Duration,
    pub events: EventBus,
}

pub(crate) fn seconds(duration: Duration) -> String {
    let secs = duration.as_secs_f64();
    if secs.fract() == 0.0 {
        format!("{secs:.0}")
    } else {
        format!("{secs}")
    }
}

impl McpTool {
    fn fail(&self, context: &ToolContext, message: String) -> ToolError {
        tracing::warn!(tool = %self.spec.name, %message, "MCP call failed");
        self.events.emit(&AuditEvent::error(
            ErrorSite::McpServer,
            message.clone(),
            Some(&self.spec.name),
            Some(context.tool_use_id()),
        ));
        ToolError::new(message)
    }
}

#[async_trait]
impl Tool for McpTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn run(&self, input: Value, context: ToolContext) -> Result<ToolOutput, ToolError> {
        let server = &self.connection.server;
        let arguments = match input {
            Value::Object(map) => map,
            Value::Null => Map::new(),
            _ => return Err(ToolError::new("the arguments must be a JSON object")),
        };
        let params = CallToolRequestParams::new(self.remote.clone()).with_arguments(arguments);
        match tokio::time::timeout(self.timeout, self.connection.peer().call_tool(params)).await {
            Ok(Ok(result)) => Ok(output(result)),
            Ok(Err(error)) => Err(self.fail(
                &context,
                format!("the MCP server '{server}' failed: {error}"),
            )),
            // The request is abandoned, not undone: the server may still carry it out.
            Err(_elapsed) => Err(self.fail(
                &context,
                format!(
                    "the MCP server '{server}' did not answer within {} s; whether the call ran is unknown",
                    seconds(self.timeout)
                ),
            )),
        }
    }
}

/// The server's result as the model reads it: text stays text, structured content is JSON,
/// media and links are named, not inlined.
fn output(result: CallToolResult) -> ToolOutput {
    let status = if result.is_error == Some(true) {
        ToolResultStatus::Error
    } else {
        ToolResultStatus::Success
    };
    let mut content: Vec<ToolResultContent> = result
        .content
        .iter()
        .map(|block| ToolResultContent::Text(describe(block)))
        .collect();
    if let Some(structured) = result.structured_content
        && content.is_empty()
    {
        content.push(ToolResultContent::Json(structured));
    }
    let mut budget = MAX_RESULT_CHARS;
    for part in &mut content {
        if let ToolResultContent::Text(text) = part {
            *text = cut(text, &mut budget);
        }
    }
    ToolOutput { status, content }
}

fn describe(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(text) => text.text.clone(),
        ContentBlock::Image(image) => format!("[image, {}]", image.mime_type),
        ContentBlock::Audio(audio) => format!("[audio, {}]", audio.mime_type),
        ContentBlock::Resource(embedded) => match &embedded.resource {
            ResourceContents::TextResourceContents { uri, text, .. } => {
                format!("[resource {uri}]\n{text}")
            }
            ResourceContents::BlobResourceContents { uri, .. } => format!("[resource {uri}]"),
            _ => "[resource]".to_owned(),
        },
        ContentBlock::ResourceLink(link) => format!("[link {}]", link.uri),
        _ => "[content tau cannot show]".to_owned(),
    }
}

fn cut(text: &str, budget: &mut usize) -> String {
    let kept = match text.char_indices().nth(*budget) {
        Some((at, _)) => format!("{}… (cut at {MAX_RESULT_CHARS} characters)", &text[..at]),
        None => text.to_owned(),
    };
    *budget = budget.saturating_sub(text.chars().count());
    kept
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn result(value: Value) -> CallToolResult {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn results_keep_their_text_and_their_error_flag() {
        assert_eq!(
            output(result(
                json!({"content": [{"type": "text", "text": "12:00"}]})
            )),
            ToolOutput::text("12:00")
        );
        assert_eq!(
            output(result(
                json!({"content": [{"type": "text", "text": "no such zone"}], "isError": true})
            )),
            ToolOutput::error("no such zone")
        );
    }

    #[test]
    fn media_and_links_are_named_and_structured_content_is_json() {
        let shown = output(result(json!({"content": [
            {"type": "image", "data": "AAAA", "mimeType": "image/png"},
            {"type": "resource_link", "uri": "file:///a", "name": "a"},
            {"type": "resource", "resource": {"uri": "file:///b", "text": "bee"}}
        ]})));
        assert_eq!(
            shown.content,
            vec![
                ToolResultContent::Text("[image, image/png]".into()),
                ToolResultContent::Text("[link file:///a]".into()),
                ToolResultContent::Text("[resource file:///b]\nbee".into()),
            ]
        );
        assert_eq!(
            output(result(
                json!({"content": [], "structuredContent": {"t": 1}})
            )),
            ToolOutput::json(json!({"t": 1}))
        );
    }

    #[test]
    fn a_flood_is_cut() {
        let huge = "a".repeat(MAX_RESULT_CHARS + 10);
        let shown = output(result(
            json!({"content": [{"type": "text", "text": huge}, {"type": "text", "text": "more"}]}),
        ));
        assert_eq!(
            shown.content,
            vec![
                ToolResultContent::Text(format!(
                    "{}… (cut at 100000 characters)",
                    "a".repeat(MAX_RESULT_CHARS)
                )),
                ToolResultContent::Text("… (cut at 100000 characters)".into()),
            ]
        );
    }

    #[test]
    fn seconds_read_naturally() {
        assert_eq!(seconds(Duration::from_secs(30)), "30");
        assert_eq!(seconds(Duration::from_millis(1500)), "1.5");
    }
}
