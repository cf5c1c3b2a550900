//! The `Model` trait: what a provider streams back for one request.

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::Stream;
use serde::{Deserialize, Serialize};

use crate::message::{Message, Role};
use crate::tool::ToolSpec;

/// Everything a model is asked in one call, borrowed from the agent: the history is lent,
/// never copied, so a call costs the same at the 10th message as at the 6000th.
///
/// A provider turns it into its own wire format before `stream` returns; a stream never
/// holds on to it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelRequest<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<&'a str>,
    pub messages: &'a [Message],
    pub tool_specs: &'a [ToolSpec],
}

/// A [`ModelRequest`] that owns its parts: what a recording model keeps, what a test builds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OwnedModelRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    pub messages: Vec<Message>,
    #[serde(default)]
    pub tool_specs: Vec<ToolSpec>,
}

impl OwnedModelRequest {
    /// The request as a model receives it.
    pub fn as_request(&self) -> ModelRequest<'_> {
        ModelRequest {
            system_prompt: self.system_prompt.as_deref(),
            messages: &self.messages,
            tool_specs: &self.tool_specs,
        }
    }
}

impl From<ModelRequest<'_>> for OwnedModelRequest {
    fn from(request: ModelRequest<'_>) -> Self {
        Self {
            system_prompt: request.system_prompt.map(str::to_owned),
            messages: request.messages.to_vec(),
            tool_specs: request.tool_specs.to_vec(),
        }
    }
}

/// Why a model stopped, or why an invocation of the agent stopped.
///
/// The model itself only reports the first group; the loop adds the rest. A channel shows
/// a turn's end as `tau-protocol`'s `TurnStop` instead, which adds what only a conversation
/// knows (superseded, expired, failed): the loop never ends that way, so it does not have
/// to handle those, and `tau-core` maps this one onto that one variant for variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentStop {
    EndTurn,
    ToolUse,
    MaxTokens,
    StopSequence,
    ContentFiltered,
    GuardrailIntervened,
    /// A before-tool-call hook raised an interrupt; resume with responses.
    Interrupt,
    /// The caller cancelled the invocation.
    Cancelled,
    LimitTurns,
    LimitOutputTokens,
    LimitTotalTokens,
}

impl AgentStop {
    /// The snake_case name, as written in events and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::EndTurn => "end_turn",
            Self::ToolUse => "tool_use",
            Self::MaxTokens => "max_tokens",
            Self::StopSequence => "stop_sequence",
            Self::ContentFiltered => "content_filtered",
            Self::GuardrailIntervened => "guardrail_intervened",
            Self::Interrupt => "interrupt",
            Self::Cancelled => "cancelled",
            Self::LimitTurns => "limit_turns",
            Self::LimitOutputTokens => "limit_output_tokens",
            Self::LimitTotalTokens => "limit_total_tokens",
        }
    }
}

/// Token counts of one model call, or summed over an invocation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub total_tokens: u64,
}

impl Usage {
    /// Adds another call's counts, saturating rather than wrapping on absurd input.
    pub fn add(&mut self, other: Usage) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.total_tokens = self.total_tokens.saturating_add(other.total_tokens);
    }
}

/// How a content block begins.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum BlockStart {
    Text,
    ToolUse { tool_use_id: String, name: String },
}

/// A piece of a content block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum BlockDelta {
    Text {
        text: String,
    },
    /// A fragment of the tool input's JSON text; fragments concatenate.
    ToolUseInput {
        json: String,
    },
}

/// One chunk of a model's streamed answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamChunk {
    MessageStart { role: Role },
    ContentBlockStart { start: BlockStart },
    ContentBlockDelta { delta: BlockDelta },
    ContentBlockStop,
    MessageStop { stop_reason: AgentStop },
    Metadata { usage: Usage },
}

/// What can go wrong in a model call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    /// The conversation no longer fits the model's context window.
    #[error("the conversation is too long for the model's context window: {message}")]
    ContextWindowOverflow { message: String },
    /// The provider asks us to slow down.
    #[error("the model provider is throttling requests: {message}")]
    Throttled {
        retry_after: Option<Duration>,
        message: String,
    },
    /// The stream ended or broke before the message was complete.
    #[error("the model stream ended early: {message}")]
    Incomplete { message: String },
    /// Anything else, with the provider's own message.
    #[error("model error: {message}")]
    Other { message: String },
}

impl ModelError {
    pub fn other(message: impl Into<String>) -> Self {
        Self::Other {
            message: message.into(),
        }
    }

    pub fn incomplete(message: impl Into<String>) -> Self {
        Self::Incomplete {
            message: message.into(),
        }
    }
}

/// The chunks of one streamed answer.
pub type ChunkStream = Pin<Box<dyn Stream<Item = Result<StreamChunk, ModelError>> + Send>>;

/// A language model that streams its answer as [`StreamChunk`]s.
///
/// An error before anything was streamed (a refused HTTP request) is returned directly; an
/// error after that arrives as an item of the stream.
#[async_trait]
pub trait Model: Send + Sync {
    async fn stream(&self, request: ModelRequest<'_>) -> Result<ChunkStream, ModelError>;

    /// The model to use for a stored conversation that already holds `stored` (every
    /// message stored for it, those the window dropped included), or `None` when this
    /// model serves every conversation as it is, as a provider does.
    ///
    /// A host that resumes a session, or runs several on one model, asks this once per
    /// session before building its agent. The `replay:` model answers with a player that
    /// continues after the replies the session already holds.
    fn for_session(&self, stored: &[Message]) -> Option<Arc<dyn Model>> {
        let _ = stored;
        None
    }
}
