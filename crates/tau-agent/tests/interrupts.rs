//! Interrupts: a before-tool-call callback asks the person; the invocation stops and is
//! resumed with the answers, running only what has no result yet.

#![cfg(test)]

mod common;

use std::sync::{Arc, Mutex};

use common::{Counter, RawModel, RawReply, assistant, results, text, tool_use};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tau_agent::{
    Agent, AgentResult, AgentStop, BeforeToolCallEvent, BlockDelta, BlockStart, Executor,
    HookOrder, HookRegistry, Input, Interrupt, InterruptResponse, InterruptState, Message,
    ScriptedModel, StreamChunk, SyncHook, TOOL_INTERRUPTED_TEXT, ToolResult, Usage,
};
use tau_protocol::SessionId;

const APPROVE_G1: &str = "v1:before_tool_call:g1:approve";

/// Asks before every call of `guarded`; a call the person refuses is cancelled.
/// Records every answer `interrupt` returned.
fn approval_hook(answers: &Arc<Mutex<Vec<Value>>>) -> HookRegistry {
    let answers = Arc::clone(answers);
    let mut hooks = HookRegistry::new();
    hooks
        .add(
            "approval",
            HookOrder::SDK_LAST,
            SyncHook(move |event: &mut BeforeToolCallEvent| {
                if event.tool_use.name != "guarded" {
                    return Ok(());
                }
                let reason = json!({"tool": event.tool_use.name, "input": event.tool_use.input});
                let answer = event.interrupt("approve", reason)?;
                answers.lock().unwrap().push(answer.clone());
                if answer != json!("yes") {
                    event.cancel_tool("The person said no.");
                }
                Ok(())
            }),
        )
        .unwrap();
    hooks
}

fn both_tools() -> Message {
    assistant(vec![
        text("Opening the door and noting it."),
        tool_use("g1", "guarded", json!({"door": "front"})),
        tool_use("f1", "free", json!({})),
    ])
}

fn approve_g1_pending() -> Interrupt {
    Interrupt {
        id: APPROVE_G1.into(),
        name: "approve".into(),
        reason: json!({"tool": "guarded", "input": {"door": "front"}}),
        response: None,
    }
}

fn answer(id: &str, response: Value) -> Input {
    Input::Resume(vec![InterruptResponse {
        interrupt_id: id.into(),
        response,
    }])
}

struct Fixture {
    agent: Agent,
    model: ScriptedModel,
    guarded: Arc<Counter>,
    free: Arc<Counter>,
    answers: Arc<Mutex<Vec<Value>>>,
}

async fn fixture(executor: Executor) -> Fixture {
    let model = ScriptedModel::new([both_tools(), Message::assistant_text("Done.")]).recording();
    let guarded = Counter::named("guarded");
    let free = Counter::named("free");
    let answers = Arc::default();
    let agent = Agent::builder(Arc::new(model.clone()))
        .tools([guarded.clone() as _, free.clone() as _])
        .hooks(approval_hook(&answers))
        .executor(executor)
        .build()
        .await
        .unwrap();
    Fixture {
        agent,
        model,
        guarded,
        free,
        answers,
    }
}

#[tokio::test]
async fn interrupt_stops_the_invocation_with_a_deterministic_id() {
    let mut f = fixture(Executor::Concurrent).await;

    let result = f.agent.invoke("open up", None).await.unwrap();

    assert_eq!(
        result,
        AgentResult {
            stop_reason: AgentStop::Interrupt,
            message: Some(both_tools()),
            usage: Usage::default(),
            model_calls: 1,
            interrupts: vec![approve_g1_pending()],
        }
    );
    assert_eq!(
        f.agent.messages(),
        [Message::user_text("open up"), both_tools()]
    );
    // The free call ran in the same batch; its result waits in the state.
    assert_eq!(
        *f.agent.interrupt_state(),
        InterruptState {
            activated: true,
            interrupts: [(APPROVE_G1.to_owned(), approve_g1_pending())].into(),
            tool_use_message: Some(both_tools()),
            tool_results: vec![ToolResult::success_text("f1", "call 1")],
        }
    );
    assert_eq!((f.guarded.calls.count(), f.free.calls.count()), (0, 1));
}

#[tokio::test]
async fn resume_runs_only_the_tool_uses_without_a_result_and_interrupt_returns_the_response() {
    let mut f = fixture(Executor::Concurrent).await;
    f.agent.invoke("open up", None).await.unwrap();

    let result = f
        .agent
        .invoke(answer(APPROVE_G1, json!("yes")), None)
        .await
        .unwrap();

    assert_eq!(
        result,
        AgentResult {
            stop_reason: AgentStop::EndTurn,
            message: Some(Message::assistant_text("Done.")),
            usage: Usage::default(),
            model_calls: 1,
            interrupts: vec![],
        }
    );
    assert_eq!(*f.answers.lock().unwrap(), vec![json!("yes")]);
    // The free tool finished before the pause and does not run twice.
    assert_eq!(
        (f.guarded.calls.all(), f.free.calls.count()),
        (vec![("g1".to_owned(), json!({"door": "front"}))], 1)
    );
    let history = vec![
        Message::user_text("open up"),
        both_tools(),
        results(vec![
            ToolResult::success_text("g1", "call 1"),
            ToolResult::success_text("f1", "call 1"),
        ]),
        Message::assistant_text("Done."),
    ];
    assert_eq!(f.agent.messages(), history);
    assert_eq!(f.model.requests()[1].messages, history[..3]);
    assert_eq!(*f.agent.interrupt_state(), InterruptState::default());
}

#[tokio::test]
async fn a_refusal_given_on_resume_reaches_the_model_as_the_cancel_text() {
    let mut f = fixture(Executor::Concurrent).await;
    f.agent.invoke("open up", None).await.unwrap();

    f.agent
        .invoke(answer(APPROVE_G1, json!("no")), None)
        .await
        .unwrap();

    assert_eq!(*f.answers.lock().unwrap(), vec![json!("no")]);
    assert_eq!(f.guarded.calls.count(), 0);
    assert_eq!(
        f.agent.messages()[2],
        results(vec![
            ToolResult::error_text("g1", "The person said no."),
            ToolResult::success_text("f1", "call 1"),
        ])
    );
}

#[tokio::test]
async fn resuming_with_some_answers_stops_again_on_the_rest() {
    let model = ScriptedModel::new([
        assistant(vec![
            tool_use("g1", "guarded", json!({"door": "front"})),
            tool_use("g2", "guarded", json!({"door": "back"})),
        ]),
        Message::assistant_text("Both open."),
    ])
    .recording();
    let answers = Arc::default();
    let mut agent = Agent::builder(Arc::new(model))
        .tool(Counter::named("guarded"))
        .hooks(approval_hook(&answers))
        .build()
        .await
        .unwrap();
    let first = agent.invoke("open both", None).await.unwrap();
    assert_eq!(
        first
            .interrupts
            .iter()
            .map(|i| i.id.as_str())
            .collect::<Vec<_>>(),
        [APPROVE_G1, "v1:before_tool_call:g2:approve"]
    );

    let second = agent
        .invoke(answer(APPROVE_G1, json!("yes")), None)
        .await
        .unwrap();

    assert_eq!(
        (second.stop_reason, second.interrupts),
        (
            AgentStop::Interrupt,
            vec![Interrupt {
                id: "v1:before_tool_call:g2:approve".into(),
                name: "approve".into(),
                reason: json!({"tool": "guarded", "input": {"door": "back"}}),
                response: None,
            }]
        )
    );
    assert_eq!(
        agent.interrupt_state().tool_results,
        vec![ToolResult::success_text("g1", "call 1")]
    );
    let third = agent
        .invoke(answer("v1:before_tool_call:g2:approve", json!("yes")), None)
        .await
        .unwrap();
    assert_eq!(third.stop_reason, AgentStop::EndTurn);
    assert_eq!(
        agent.messages()[2],
        results(vec![
            ToolResult::success_text("g1", "call 1"),
            ToolResult::success_text("g2", "call 2"),
        ])
    );
    assert_eq!(*answers.lock().unwrap(), vec![json!("yes"), json!("yes")]);
}

#[tokio::test]
async fn prompting_while_interrupted_is_an_error() {
    let mut f = fixture(Executor::Concurrent).await;
    f.agent.invoke("open up", None).await.unwrap();
    let state = f.agent.interrupt_state().clone();

    let error = f.agent.invoke("never mind", None).await.unwrap_err();

    assert_eq!(
        error.to_string(),
        format!(
            "the agent is waiting for answers to interrupts ({APPROVE_G1}); resume with responses"
        )
    );
    assert_eq!(
        f.agent.messages(),
        [Message::user_text("open up"), both_tools()]
    );
    assert_eq!(*f.agent.interrupt_state(), state);
}

#[tokio::test]
async fn resuming_with_an_unknown_id_is_an_error() {
    let mut f = fixture(Executor::Concurrent).await;
    f.agent.invoke("open up", None).await.unwrap();
    let state = f.agent.interrupt_state().clone();

    let error = f
        .agent
        .invoke(
            Input::Resume(vec![
                InterruptResponse {
                    interrupt_id: APPROVE_G1.into(),
                    response: json!("yes"),
                },
                InterruptResponse {
                    interrupt_id: "v1:before_tool_call:zz:approve".into(),
                    response: json!("yes"),
                },
            ]),
            None,
        )
        .await
        .unwrap_err();

    assert_eq!(
        error.to_string(),
        "no pending interrupt has the id 'v1:before_tool_call:zz:approve'"
    );
    // Nothing was taken from the refused answers, not even the valid one.
    assert_eq!(*f.agent.interrupt_state(), state);
    assert_eq!(f.guarded.calls.count(), 0);
}

#[tokio::test]
async fn resuming_with_nothing_pending_is_an_error() {
    let mut f = fixture(Executor::Concurrent).await;

    let error = f
        .agent
        .invoke(answer(APPROVE_G1, json!("yes")), None)
        .await
        .unwrap_err();

    assert_eq!(error.to_string(), "there is no interrupt to resume");
    assert_eq!(f.agent.messages(), []);
}

#[tokio::test]
async fn deactivating_clears_the_interrupt_state_and_the_next_prompt_repairs_the_history() {
    let mut f = fixture(Executor::Concurrent).await;
    f.agent.invoke("open up", None).await.unwrap();

    f.agent.deactivate_interrupts().unwrap();
    assert_eq!(*f.agent.interrupt_state(), InterruptState::default());
    f.agent.invoke("forget it", None).await.unwrap();

    let history = vec![
        Message::user_text("open up"),
        both_tools(),
        results(vec![
            ToolResult::error_text("g1", TOOL_INTERRUPTED_TEXT),
            ToolResult::error_text("f1", TOOL_INTERRUPTED_TEXT),
        ]),
        Message::user_text("forget it"),
    ];
    assert_eq!(f.model.requests()[1].messages, history);
    assert_eq!(f.guarded.calls.count(), 0);
}

#[tokio::test]
async fn interrupt_state_round_trips_through_sqlite_and_a_new_agent_resumes_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let id = SessionId::parse("front-door").unwrap();
    let guarded = Counter::named("guarded");
    let free = Counter::named("free");
    let answers = Arc::default();
    let saved_state = {
        let model = ScriptedModel::new([both_tools()]);
        let mut agent = Agent::builder(Arc::new(model))
            .tools([guarded.clone() as _, free.clone() as _])
            .hooks(approval_hook(&answers))
            .session(Arc::new(common::stored_sessions(&path)), id.clone())
            .build()
            .await
            .unwrap();
        let result = agent.invoke("open up", None).await.unwrap();
        assert_eq!(result.stop_reason, AgentStop::Interrupt);
        agent.state().clone()
    };

    // A new process would build a new agent on the same file.
    let model = ScriptedModel::new([Message::assistant_text("Done.")]).recording();
    let mut restored = Agent::builder(Arc::new(model.clone()))
        .tools([guarded.clone() as _, free.clone() as _])
        .hooks(approval_hook(&answers))
        .session(Arc::new(common::stored_sessions(&path)), id)
        .build()
        .await
        .unwrap();
    assert_eq!(*restored.state(), saved_state);
    assert_eq!(
        restored.messages(),
        [Message::user_text("open up"), both_tools()],
        "no repair while an interrupt waits"
    );
    let result = restored
        .invoke(answer(APPROVE_G1, json!("yes")), None)
        .await
        .unwrap();

    assert_eq!(result.stop_reason, AgentStop::EndTurn);
    assert_eq!((guarded.calls.count(), free.calls.count()), (1, 1));
    assert_eq!(
        model.requests()[0].messages,
        [
            Message::user_text("open up"),
            both_tools(),
            results(vec![
                ToolResult::success_text("g1", "call 1"),
                ToolResult::success_text("f1", "call 1"),
            ]),
        ]
    );
}

#[tokio::test]
async fn sequential_executor_runs_no_later_call_while_an_earlier_one_waits_for_an_answer() {
    let mut f = fixture(Executor::Sequential).await;

    let result = f.agent.invoke("open up", None).await.unwrap();

    assert_eq!(result.interrupts, vec![approve_g1_pending()]);
    assert_eq!((f.guarded.calls.count(), f.free.calls.count()), (0, 0));
    assert_eq!(f.agent.interrupt_state().tool_results, vec![]);

    f.agent
        .invoke(answer(APPROVE_G1, json!("yes")), None)
        .await
        .unwrap();

    assert_eq!((f.guarded.calls.count(), f.free.calls.count()), (1, 1));
    assert_eq!(
        f.agent.messages()[2],
        results(vec![
            ToolResult::success_text("g1", "call 1"),
            ToolResult::success_text("f1", "call 1"),
        ])
    );
}

#[tokio::test]
async fn a_call_refused_for_its_input_stays_refused_after_a_sequential_resume() {
    let tool_start = |id: &str, name: &str| StreamChunk::ContentBlockStart {
        start: BlockStart::ToolUse {
            tool_use_id: id.into(),
            name: name.into(),
        },
    };
    let input = |json: &str| StreamChunk::ContentBlockDelta {
        delta: BlockDelta::ToolUseInput { json: json.into() },
    };
    let model = RawModel::new(vec![RawReply::ends(vec![
        tool_start("g1", "guarded"),
        input(r#"{"door": "front"}"#),
        StreamChunk::ContentBlockStop,
        tool_start("f1", "free"),
        input("{broken"),
        StreamChunk::ContentBlockStop,
        StreamChunk::MessageStop {
            stop_reason: AgentStop::ToolUse,
        },
    ])]);
    let guarded = Counter::named("guarded");
    let free = Counter::named("free");
    let answers = Arc::default();
    let mut agent = Agent::builder(Arc::new(model))
        .tools([guarded.clone() as _, free.clone() as _])
        .hooks(approval_hook(&answers))
        .executor(Executor::Sequential)
        .build()
        .await
        .unwrap();
    agent.invoke("open up", None).await.unwrap();

    let _ = agent.invoke(answer(APPROVE_G1, json!("yes")), None).await;

    let parse_error = serde_json::from_str::<Value>("{broken").unwrap_err();
    assert_eq!(
        agent.messages()[2],
        results(vec![
            ToolResult::success_text("g1", "call 1"),
            ToolResult::error_text(
                "f1",
                format!(
                    "Error: the tool input is not valid JSON ({parse_error}). The tool was not run."
                )
            ),
        ])
    );
    assert_eq!(free.calls.count(), 0);
}
