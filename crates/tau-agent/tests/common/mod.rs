//! What the integration tests share: small test tools that record what they received,
//! test models that stream raw chunks, and builders for the messages a test expects.
//!
//! Each test binary uses only part of this module. Every test file, and this module, opens
//! with `#![cfg(test)]`: that lets the workspace's allowances for test code (unwrap, expect,
//! panic, indexing) cover plain functions as well as `#[test]` functions.
#![cfg(test)]
#![allow(dead_code)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use serde_json::{Value, json};
use tau_agent::{
    AfterToolCallEvent, ChunkStream, ContentBlock, HookOrder, HookRegistry, Message, Model,
    ModelError, ModelRequest, OwnedModelRequest, Role, StreamChunk, SyncHook, Tool, ToolContext,
    ToolError, ToolOutput, ToolResult, ToolSpec, ToolUse, TurnEvent,
};
use tokio::sync::mpsc::UnboundedReceiver;

// ---- messages -------------------------------------------------------------------------

pub fn text(text: &str) -> ContentBlock {
    ContentBlock::Text(text.to_owned())
}

pub fn tool_use(id: &str, name: &str, input: Value) -> ContentBlock {
    ContentBlock::ToolUse(ToolUse {
        tool_use_id: id.to_owned(),
        name: name.to_owned(),
        input,
    })
}

pub fn assistant(content: Vec<ContentBlock>) -> Message {
    Message {
        role: Role::Assistant,
        content,
        source: None,
    }
}

/// The user message that carries tool results back to the model.
pub fn results(results: Vec<ToolResult>) -> Message {
    Message {
        role: Role::User,
        content: results.into_iter().map(ContentBlock::ToolResult).collect(),
        source: None,
    }
}

pub fn spec(name: &str) -> ToolSpec {
    ToolSpec {
        name: name.to_owned(),
        description: format!("the {name} test tool"),
        input_schema: json!({"type": "object"}),
        annotations: serde_json::Map::new(),
    }
}

/// Every event sent so far, in order.
pub fn drain(receiver: &mut UnboundedReceiver<TurnEvent>) -> Vec<TurnEvent> {
    let mut events = Vec::new();
    while let Ok(event) = receiver.try_recv() {
        events.push(event);
    }
    events
}

// ---- tools ----------------------------------------------------------------------------

/// What a test tool received, one `(tool use id, input)` per call, in call order.
#[derive(Clone, Default)]
pub struct Calls(Arc<Mutex<Vec<(String, Value)>>>);

impl Calls {
    fn record(&self, context: &ToolContext, input: &Value) {
        self.0
            .lock()
            .unwrap()
            .push((context.tool_use_id().to_owned(), input.clone()));
    }

    pub fn all(&self) -> Vec<(String, Value)> {
        self.0.lock().unwrap().clone()
    }

    pub fn count(&self) -> usize {
        self.0.lock().unwrap().len()
    }
}

/// Answers with its input as JSON, so the model (and the test) sees what the tool got.
pub struct Echo {
    spec: ToolSpec,
    pub calls: Calls,
}

impl Echo {
    pub fn named(name: &str) -> Arc<Self> {
        Arc::new(Self {
            spec: spec(name),
            calls: Calls::default(),
        })
    }
}

#[async_trait]
impl Tool for Echo {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn run(&self, input: Value, context: ToolContext) -> Result<ToolOutput, ToolError> {
        self.calls.record(&context, &input);
        Ok(ToolOutput::json(input))
    }
}

/// Answers `call N`, N counting its calls from 1.
pub struct Counter {
    spec: ToolSpec,
    pub calls: Calls,
}

impl Counter {
    pub fn named(name: &str) -> Arc<Self> {
        Arc::new(Self {
            spec: spec(name),
            calls: Calls::default(),
        })
    }
}

#[async_trait]
impl Tool for Counter {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn run(&self, input: Value, context: ToolContext) -> Result<ToolOutput, ToolError> {
        self.calls.record(&context, &input);
        Ok(ToolOutput::text(format!("call {}", self.calls.count())))
    }
}

/// What happened when, as `start <id>` and `end <id>` lines.
#[derive(Clone, Default)]
pub struct Timeline(Arc<Mutex<Vec<String>>>);

impl Timeline {
    fn push(&self, line: String) {
        self.0.lock().unwrap().push(line);
    }

    pub fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

/// Sleeps `{"ms": N}` on tokio's clock (paused in tests), noting its start and end.
pub struct Sleeper {
    spec: ToolSpec,
    pub timeline: Timeline,
}

impl Sleeper {
    pub fn named(name: &str) -> Arc<Self> {
        Arc::new(Self {
            spec: spec(name),
            timeline: Timeline::default(),
        })
    }
}

#[async_trait]
impl Tool for Sleeper {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn run(&self, input: Value, context: ToolContext) -> Result<ToolOutput, ToolError> {
        let ms = input["ms"].as_u64().unwrap_or(0);
        self.timeline
            .push(format!("start {}", context.tool_use_id()));
        tokio::time::sleep(Duration::from_millis(ms)).await;
        self.timeline.push(format!("end {}", context.tool_use_id()));
        Ok(ToolOutput::text(format!("slept {ms} ms")))
    }
}

/// Fails with `disk full`.
pub struct Failing {
    spec: ToolSpec,
}

impl Failing {
    pub fn named(name: &str) -> Arc<Self> {
        Arc::new(Self { spec: spec(name) })
    }
}

#[async_trait]
impl Tool for Failing {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn run(&self, _input: Value, _context: ToolContext) -> Result<ToolOutput, ToolError> {
        Err(ToolError::new("disk full"))
    }
}

/// Never returns.
pub struct Blocker {
    spec: ToolSpec,
    pub calls: Calls,
}

impl Blocker {
    pub fn named(name: &str) -> Arc<Self> {
        Arc::new(Self {
            spec: spec(name),
            calls: Calls::default(),
        })
    }
}

#[async_trait]
impl Tool for Blocker {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn run(&self, input: Value, context: ToolContext) -> Result<ToolOutput, ToolError> {
        self.calls.record(&context, &input);
        std::future::pending().await
    }
}

/// Panics when run.
pub struct Panicker {
    spec: ToolSpec,
}

impl Panicker {
    pub fn named(name: &str) -> Arc<Self> {
        Arc::new(Self { spec: spec(name) })
    }
}

#[async_trait]
impl Tool for Panicker {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn run(&self, _input: Value, _context: ToolContext) -> Result<ToolOutput, ToolError> {
        panic!("a bug in the tool")
    }
}

/// Reports progress twice, then answers `done`.
pub struct Reporter {
    spec: ToolSpec,
}

impl Reporter {
    pub fn named(name: &str) -> Arc<Self> {
        Arc::new(Self { spec: spec(name) })
    }
}

#[async_trait]
impl Tool for Reporter {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn run(&self, _input: Value, context: ToolContext) -> Result<ToolOutput, ToolError> {
        context.progress("halfway");
        context.progress("almost");
        Ok(ToolOutput::text("done"))
    }
}

// ---- hooks ----------------------------------------------------------------------------

/// What one after-tool-call callback was shown.
#[derive(Debug, Clone, PartialEq)]
pub struct AfterToolCallSeen {
    pub tool_use: ToolUse,
    pub selected_tool: Option<String>,
    pub result: ToolResult,
    pub error: Option<String>,
    pub cancel_message: Option<String>,
    pub ran: bool,
    pub duration: Duration,
}

/// Registers an after-tool-call callback that records what it is shown.
pub fn record_after_tool_calls(hooks: &mut HookRegistry) -> Arc<Mutex<Vec<AfterToolCallSeen>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    hooks
        .add(
            "record-after-tool-call",
            HookOrder::DEFAULT,
            SyncHook(move |event: &mut AfterToolCallEvent| {
                log.lock().unwrap().push(AfterToolCallSeen {
                    tool_use: event.tool_use.clone(),
                    selected_tool: event.selected_tool.clone(),
                    result: event.result.clone(),
                    error: event.error.clone(),
                    cancel_message: event.cancel_message.clone(),
                    ran: event.ran,
                    duration: event.duration,
                });
                Ok(())
            }),
        )
        .unwrap();
    seen
}

// ---- models ---------------------------------------------------------------------------

/// One call's raw stream: chunks (or errors) in order, then either the end of the stream
/// or a stall that never ends.
#[derive(Clone)]
pub struct RawReply {
    pub items: Vec<Result<StreamChunk, ModelError>>,
    pub stall: bool,
}

impl RawReply {
    pub fn ends(chunks: Vec<StreamChunk>) -> Self {
        Self {
            items: chunks.into_iter().map(Ok).collect(),
            stall: false,
        }
    }

    pub fn stalls(chunks: Vec<StreamChunk>) -> Self {
        Self {
            items: chunks.into_iter().map(Ok).collect(),
            stall: true,
        }
    }
}

/// Streams raw chunks the scripted model never would: broken streams, stalls, garbage.
/// Records every request; when the replies run out it answers with a model error.
#[derive(Clone, Default)]
pub struct RawModel {
    replies: Arc<Mutex<std::collections::VecDeque<RawReply>>>,
    requests: Arc<Mutex<Vec<OwnedModelRequest>>>,
}

impl RawModel {
    pub fn new(replies: Vec<RawReply>) -> Self {
        Self {
            replies: Arc::new(Mutex::new(replies.into())),
            requests: Arc::default(),
        }
    }

    pub fn requests(&self) -> Vec<OwnedModelRequest> {
        self.requests.lock().unwrap().clone()
    }
}

#[async_trait]
impl Model for RawModel {
    async fn stream(&self, request: ModelRequest<'_>) -> Result<ChunkStream, ModelError> {
        self.requests.lock().unwrap().push(request.into());
        let Some(reply) = self.replies.lock().unwrap().pop_front() else {
            return Err(ModelError::other("no more raw replies"));
        };
        let items = futures::stream::iter(reply.items);
        if reply.stall {
            Ok(Box::pin(items.chain(futures::stream::pending())))
        } else {
            Ok(Box::pin(items))
        }
    }
}

// ---- sessions -------------------------------------------------------------------------

/// The sessions of the SQLite file at `path`, as tau keeps them (`state.db` under the
/// loop's repository).
pub fn stored_sessions(path: &std::path::Path) -> tau_core::StoredSessions {
    tau_core::StoredSessions::new(tau_state::StateDb::open(path).unwrap().sessions())
}
