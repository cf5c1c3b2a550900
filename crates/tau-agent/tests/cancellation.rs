//! Cancellation: a `CancelHandle` stops the running invocation, while the model streams or
//! before the tools run, and leaves a history the model can read.

#![cfg(test)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{Counter, RawModel, RawReply, assistant, drain, results, tool_use};
use pretty_assertions::assert_eq;
use serde_json::json;
use tau_agent::{
    Agent, AgentResult, AgentStop, BlockDelta, BlockStart, CANCELLED_BY_USER_TEXT, EventSink,
    HookOrder, Message, MessageAddedEvent, Model, Role, ScriptedModel, StreamChunk, SyncHook,
    TOOL_CANCELLED_TEXT, ToolResult, ToolUse, TurnEvent, Usage,
};

fn cancelled_while_streaming() -> AgentResult {
    AgentResult {
        stop_reason: AgentStop::Cancelled,
        message: Some(Message::assistant_text(CANCELLED_BY_USER_TEXT)),
        usage: Usage::default(),
        model_calls: 1,
        interrupts: vec![],
    }
}

/// Runs one invocation of `model` and cancels it after `after` of tokio's clock.
async fn cancel_after(
    model: Arc<dyn Model>,
    after: Duration,
) -> (AgentResult, Agent, Vec<TurnEvent>) {
    let mut agent = Agent::builder(model).build().await.unwrap();
    let handle = agent.cancel_handle();
    let (sink, mut events) = EventSink::channel();
    let (result, ()) = tokio::join!(agent.invoke("tell me", Some(&sink)), async {
        tokio::time::sleep(after).await;
        handle.cancel();
    });
    (result.unwrap(), agent, drain(&mut events))
}

#[tokio::test(start_paused = true)]
async fn cancel_while_a_replay_streams_stores_cancelled_by_user() {
    // One chunk every 100 ms: the first half of the text arrives at 300 ms, the rest at 400.
    let model = ScriptedModel::from_json(
        r#"[{"role":"assistant","content":[{"text":"a long answer"}],"delayMs":100}]"#,
    )
    .unwrap();

    let (result, agent, events) = cancel_after(Arc::new(model), Duration::from_millis(350)).await;

    assert_eq!(result, cancelled_while_streaming());
    assert_eq!(
        agent.messages(),
        [
            Message::user_text("tell me"),
            Message::assistant_text("Cancelled by user")
        ]
    );
    assert_eq!(
        events,
        [
            TurnEvent::TextDelta {
                text: "a long".into()
            },
            TurnEvent::Stop {
                reason: AgentStop::Cancelled,
                usage: Usage::default()
            },
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn cancel_while_the_model_stream_pends_forever_stores_cancelled_by_user() {
    let model = RawModel::new(vec![RawReply::stalls(vec![
        StreamChunk::MessageStart {
            role: Role::Assistant,
        },
        StreamChunk::ContentBlockStart {
            start: BlockStart::Text,
        },
        StreamChunk::ContentBlockDelta {
            delta: BlockDelta::Text {
                text: "thinking".into(),
            },
        },
    ])]);

    let (result, agent, events) = cancel_after(Arc::new(model), Duration::from_secs(60)).await;

    assert_eq!(result, cancelled_while_streaming());
    assert_eq!(
        agent.messages(),
        [
            Message::user_text("tell me"),
            Message::assistant_text("Cancelled by user")
        ]
    );
    assert_eq!(
        events,
        [
            TurnEvent::TextDelta {
                text: "thinking".into()
            },
            TurnEvent::Stop {
                reason: AgentStop::Cancelled,
                usage: Usage::default()
            },
        ]
    );
}

#[tokio::test]
async fn cancel_before_tools_run_gives_every_pending_tool_use_the_cancelled_result() {
    let two_calls = assistant(vec![
        tool_use("t1", "counter", json!({})),
        tool_use("t2", "counter", json!({})),
    ]);
    let model = ScriptedModel::new([two_calls.clone(), Message::assistant_text("never asked")]);
    let counter = Counter::named("counter");
    let mut agent = Agent::builder(Arc::new(model.clone()))
        .tool(counter.clone())
        .build()
        .await
        .unwrap();
    // The person cancels the moment the model's tool calls are in the history.
    let handle = agent.cancel_handle();
    agent
        .hooks_mut()
        .add(
            "cancel-on-tool-use",
            HookOrder::DEFAULT,
            SyncHook(move |event: &mut MessageAddedEvent| {
                if event.message.tool_uses().next().is_some() {
                    handle.cancel();
                }
                Ok(())
            }),
        )
        .unwrap();
    let (sink, mut events) = EventSink::channel();

    let result = agent.invoke("count twice", Some(&sink)).await.unwrap();

    assert_eq!(
        result,
        AgentResult {
            stop_reason: AgentStop::Cancelled,
            message: Some(two_calls.clone()),
            usage: Usage::default(),
            model_calls: 1,
            interrupts: vec![],
        }
    );
    let cancelled = |id: &str| ToolResult::error_text(id, TOOL_CANCELLED_TEXT);
    assert_eq!(
        agent.messages(),
        [
            Message::user_text("count twice"),
            two_calls,
            results(vec![cancelled("t1"), cancelled("t2")]),
        ]
    );
    assert_eq!(counter.calls.count(), 0);
    assert_eq!(model.remaining(), 1, "the model is not called again");
    let tool_use_event = |id: &str| TurnEvent::ToolUse {
        tool_use: ToolUse {
            tool_use_id: id.into(),
            name: "counter".into(),
            input: json!({}),
        },
    };
    assert_eq!(
        drain(&mut events),
        [
            tool_use_event("t1"),
            tool_use_event("t2"),
            TurnEvent::ToolResult {
                result: cancelled("t1")
            },
            TurnEvent::ToolResult {
                result: cancelled("t2")
            },
            TurnEvent::Stop {
                reason: AgentStop::Cancelled,
                usage: Usage::default()
            },
        ]
    );
}

#[tokio::test]
async fn a_cancel_before_an_invocation_does_not_carry_into_it() {
    let model = ScriptedModel::new([Message::assistant_text("hello")]);
    let mut agent = Agent::builder(Arc::new(model)).build().await.unwrap();
    agent.cancel_handle().cancel();

    let result = agent.invoke("hi", None).await.unwrap();

    assert_eq!(
        result,
        AgentResult {
            stop_reason: AgentStop::EndTurn,
            message: Some(Message::assistant_text("hello")),
            usage: Usage::default(),
            model_calls: 1,
            interrupts: vec![],
        }
    );
}

/// Runs until the turn is cancelled, then says it was stopped; says so too if it ever ends
/// on its own, which a test then sees.
struct StopsOnCancel {
    spec: tau_agent::ToolSpec,
    started: tokio::sync::Notify,
}

#[async_trait::async_trait]
impl tau_agent::Tool for StopsOnCancel {
    fn spec(&self) -> &tau_agent::ToolSpec {
        &self.spec
    }

    async fn run(
        &self,
        _input: serde_json::Value,
        context: tau_agent::ToolContext,
    ) -> Result<tau_agent::ToolOutput, tau_agent::ToolError> {
        self.started.notify_one();
        tokio::select! {
            () = context.cancelled() => Err(tau_agent::ToolError::new("stopped by the cancel")),
            () = tokio::time::sleep(Duration::from_secs(3600)) => {
                Ok(tau_agent::ToolOutput::text("finished unseen"))
            }
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_cancel_reaches_the_tool_that_is_running() {
    let call = assistant(vec![tool_use("t1", "long", json!({}))]);
    let model = ScriptedModel::new([call.clone(), Message::assistant_text("never asked")]);
    let tool = Arc::new(StopsOnCancel {
        spec: common::spec("long"),
        started: tokio::sync::Notify::new(),
    });
    let mut agent = Agent::builder(Arc::new(model))
        .tool(tool.clone())
        .build()
        .await
        .unwrap();
    let handle = agent.cancel_handle();

    let (result, ()) = tokio::join!(agent.invoke("run it", None), async {
        tool.started.notified().await;
        handle.cancel();
    });

    assert_eq!(
        result.unwrap(),
        AgentResult {
            stop_reason: AgentStop::Cancelled,
            message: Some(call.clone()),
            usage: Usage::default(),
            model_calls: 1,
            interrupts: vec![],
        }
    );
    assert_eq!(
        agent.messages(),
        [
            Message::user_text("run it"),
            call,
            results(vec![ToolResult::error_text(
                "t1",
                "Error: stopped by the cancel"
            )]),
        ]
    );
}
