//! Tools: a spec the model reads and an async `run` that may report progress.

use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::events::{EventSink, TurnEvent};
use crate::message::{ToolResultContent, ToolResultStatus};

/// What the model is told about a tool. `annotations` is free data for the layers above
/// (tau-core keeps tiers there); the loop never reads it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub annotations: Map<String, Value>,
}

/// What a finished tool hands back.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    pub status: ToolResultStatus,
    pub content: Vec<ToolResultContent>,
}

impl ToolOutput {
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            status: ToolResultStatus::Success,
            content: vec![ToolResultContent::Text(text.into())],
        }
    }

    pub fn json(value: Value) -> Self {
        Self {
            status: ToolResultStatus::Success,
            content: vec![ToolResultContent::Json(value)],
        }
    }

    /// A result the tool itself marks as failed, with its own wording.
    pub fn error(text: impl Into<String>) -> Self {
        Self {
            status: ToolResultStatus::Error,
            content: vec![ToolResultContent::Text(text.into())],
        }
    }
}

/// A tool that could not do its job; the model reads `Error: {message}`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ToolError {
    pub message: String,
}

impl ToolError {
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }
}

/// Handed to a running tool: who called it, where its progress goes, and whether the turn
/// it runs in was cancelled.
#[derive(Clone)]
pub struct ToolContext {
    tool_use_id: String,
    tool_name: String,
    events: Option<EventSink>,
    cancel: CancellationToken,
}

impl ToolContext {
    pub fn new(
        tool_use_id: impl Into<String>,
        tool_name: impl Into<String>,
        events: Option<EventSink>,
    ) -> Self {
        Self {
            tool_use_id: tool_use_id.into(),
            tool_name: tool_name.into(),
            events,
            cancel: CancellationToken::new(),
        }
    }

    /// The context of a call that stops when `cancel` fires. Without it a call is never
    /// cancelled.
    #[must_use]
    pub fn with_cancellation(mut self, cancel: CancellationToken) -> Self {
        self.cancel = cancel;
        self
    }

    /// Resolves once the turn this call runs in is cancelled (never, when nothing can cancel
    /// it). A tool with work that must not outlive the turn (a process) waits on this beside
    /// its work, stops the work and returns an error.
    pub async fn cancelled(&self) {
        self.cancel.cancelled().await;
    }

    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    pub fn tool_use_id(&self) -> &str {
        &self.tool_use_id
    }

    /// Streams one progress message to whoever watches the turn. Never fails: a caller that
    /// stopped listening only loses the message.
    pub fn progress(&self, message: impl Into<String>) {
        if let Some(events) = &self.events {
            events.send(TurnEvent::ToolProgress {
                tool_use_id: self.tool_use_id.clone(),
                name: self.tool_name.clone(),
                message: message.into(),
            });
        }
    }
}

/// A tool the model can call.
#[async_trait]
pub trait Tool: Send + Sync {
    fn spec(&self) -> &ToolSpec;

    /// Says, before anyone is asked about a call, that this tool would refuse `input` (a
    /// device it does not know, a value out of range): the layer above then refuses the
    /// call with this reason and asks nobody. Most tools check nothing here; `run` must
    /// check again all the same.
    fn check_input(&self, _input: &Value) -> Result<(), ToolError> {
        Ok(())
    }

    /// Runs the tool with the input the last before-tool-call hook left.
    async fn run(&self, input: Value, context: ToolContext) -> Result<ToolOutput, ToolError>;
}

/// A shared tool.
pub type SharedTool = Arc<dyn Tool>;

/// Longest tool name a model may use.
pub const MAX_TOOL_NAME_LEN: usize = 64;

/// True when `name` matches `^[a-zA-Z0-9_-]{1,64}$`.
pub fn is_valid_tool_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_TOOL_NAME_LEN
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The error text for a call whose tool name breaks the pattern.
pub(crate) fn invalid_name_text(name: &str) -> String {
    format!(
        "Error: tool name {:?} is invalid; names match ^[a-zA-Z0-9_-]{{1,64}}$. The tool was not run.",
        tau_protocol::ellipsized(name, 80)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names_follow_the_pattern() {
        let long = "a".repeat(64);
        let too_long = "a".repeat(65);
        for (name, valid) in [
            ("clock", true),
            ("mqtt_publish", true),
            ("srv__tool-2", true),
            (long.as_str(), true),
            ("", false),
            (too_long.as_str(), false),
            ("has space", false),
            ("dot.name", false),
            ("ünï", false),
            ("semi;colon", false),
        ] {
            assert_eq!(is_valid_tool_name(name), valid, "{name:?}");
        }
    }

    #[test]
    fn invalid_name_text_is_exact_and_bounded() {
        assert_eq!(
            invalid_name_text("rm -rf"),
            "Error: tool name \"rm -rf\" is invalid; names match ^[a-zA-Z0-9_-]{1,64}$. The tool was not run."
        );
        let huge = "x".repeat(10_000);
        assert!(invalid_name_text(&huge).len() < 200);
    }
}
