//! tau-agent: the agent loop tau's guarantees stand on.
//!
//! Owns messages (in the Converse JSON shape), the `Model` trait and the scripted
//! `replay:` model, tools, ordered hooks, the concurrent and sequential executors,
//! per-invocation limits, interrupts, cancellation, throttling retries, the sliding
//! window, history repair, turn events and the sessions it keeps through a
//! [`SessionRepository`] (`tau-core` keeps them in `state.db`). It follows the
//! semantics of the Strands Agents event loop. It knows nothing of tiers, approvals,
//! channels or providers: policy is a hook the layer above registers, providers
//! implement [`Model`].
//!
//! Layout
//! - `message.rs`, `model.rs`, `tool.rs`: the data the loop moves
//! - `assemble.rs`: streamed chunks into one assistant message
//! - `hooks.rs`: events and the ordered registry
//! - `executor.rs`: one message's tool uses through the tool-call hooks
//! - `agent/`: the loop itself and its builder; `control.rs`: limits, retries, cancellation
//! - `conversation.rs`: sliding window and repair; `session.rs`: what a session store keeps
//! - `scripted.rs`: the scripted model

mod agent;
mod assemble;
mod control;
mod conversation;
mod events;
mod executor;
mod hooks;
mod interrupt;
mod message;
mod model;
mod scripted;
pub mod session;
mod tool;
mod tool_registry;

pub use agent::{
    Agent, AgentBuilder, AgentError, AgentResult, CANCELLED_BY_USER_TEXT, Input, ModelView,
};
pub use control::{CancelHandle, Limits, RetryPolicy};
pub use conversation::{
    CannotReduce, SlidingWindow, TOOL_INTERRUPTED_TEXT, repair_message, repair_message_with,
    unanswered_tool_uses,
};
pub use events::{EventSink, Sink, TurnEvent};
pub use executor::{
    Executor, HOOK_FAILED_TEXT, TOOL_CANCELLED_TEXT, TOOL_PANICKED_TEXT, ToolRun, run_tool,
    unknown_tool_text,
};
pub use hooks::{
    AfterInvocationEvent, AfterModelCallEvent, AfterToolCallEvent, AsyncHook,
    BeforeInvocationEvent, BeforeModelCallEvent, BeforeToolCallEvent, Hook, HookError, HookEvent,
    HookEventKind, HookFuture, HookOrder, HookRegistry, HookResult, MessageAddedEvent,
    Registration, SkipReason, SyncHook, ToolCallSkippedEvent, async_hook,
};
pub use interrupt::{Interrupt, InterruptRaised, InterruptResponse, InterruptState, interrupt_id};
pub use message::{
    ContentBlock, Message, Role, ToolResult, ToolResultContent, ToolResultStatus, ToolUse,
};
pub use model::{
    AgentStop, BlockDelta, BlockStart, ChunkStream, Model, ModelError, ModelRequest,
    OwnedModelRequest, StreamChunk, Usage,
};
pub use scripted::{ScriptError, ScriptedModel};
pub use session::{AgentState, SessionError, SessionRepository, SessionSummary};
pub use tool::{
    MAX_TOOL_NAME_LEN, SharedTool, Tool, ToolContext, ToolError, ToolOutput, ToolSpec,
    is_valid_tool_name,
};
pub use tool_registry::{ToolRegistry, ToolRegistryError};
