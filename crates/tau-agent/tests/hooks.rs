//! Hooks: their order, what before-tool-call and after-tool-call callbacks may change,
//! and what the model and the tools then see.

#![cfg(test)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{
    AfterToolCallSeen, Counter, Echo, Failing, Sleeper, assistant, record_after_tool_calls,
    results, tool_use,
};
use pretty_assertions::assert_eq;
use serde_json::json;
use tau_agent::{
    AfterInvocationEvent, AfterToolCallEvent, BeforeInvocationEvent, BeforeModelCallEvent,
    MessageAddedEvent, ScriptedModel,
};
use tau_agent::{
    AfterModelCallEvent, Agent, AgentResult, AgentStop, BeforeToolCallEvent, HookEvent,
    HookEventKind, HookOrder, HookRegistry, Message, Registration, SyncHook, ToolResult, ToolUse,
    Usage,
};

type Log = Arc<Mutex<Vec<String>>>;

/// Registers four logging callbacks for `E`, deliberately out of order.
fn register_out_of_order<E: HookEvent>(hooks: &mut HookRegistry, log: &Log, event: &str) {
    for (name, order) in [
        ("late", HookOrder::SDK_LAST),
        ("one", HookOrder::DEFAULT),
        ("early", HookOrder::SDK_FIRST),
        ("two", HookOrder::DEFAULT),
    ] {
        let log = Arc::clone(log);
        let line = format!("{event}:{name}");
        hooks
            .add::<E>(
                name,
                order,
                SyncHook(move |_: &mut E| {
                    log.lock().unwrap().push(line.clone());
                    Ok(())
                }),
            )
            .unwrap();
    }
}

fn ended(model_calls: u32, message: Message) -> AgentResult {
    AgentResult {
        stop_reason: AgentStop::EndTurn,
        message: Some(message),
        usage: Usage::default(),
        model_calls,
        interrupts: Vec::new(),
    }
}

#[tokio::test]
async fn hooks_run_in_ascending_order_ties_in_registration_order_for_every_event() {
    let log = Log::default();
    let mut hooks = HookRegistry::new();
    register_out_of_order::<BeforeInvocationEvent>(&mut hooks, &log, "before_invocation");
    register_out_of_order::<BeforeModelCallEvent>(&mut hooks, &log, "before_model_call");
    register_out_of_order::<AfterModelCallEvent>(&mut hooks, &log, "after_model_call");
    register_out_of_order::<BeforeToolCallEvent>(&mut hooks, &log, "before_tool_call");
    register_out_of_order::<AfterToolCallEvent>(&mut hooks, &log, "after_tool_call");
    register_out_of_order::<MessageAddedEvent>(&mut hooks, &log, "message_added");
    register_out_of_order::<AfterInvocationEvent>(&mut hooks, &log, "after_invocation");
    let model = ScriptedModel::new([
        assistant(vec![tool_use("t1", "echo", json!({}))]),
        Message::assistant_text("done"),
    ]);
    let mut agent = Agent::builder(Arc::new(model))
        .tool(Echo::named("echo"))
        .hooks(hooks)
        .build()
        .await
        .unwrap();

    let kinds = [
        HookEventKind::BeforeInvocation,
        HookEventKind::BeforeModelCall,
        HookEventKind::AfterModelCall,
        HookEventKind::BeforeToolCall,
        HookEventKind::AfterToolCall,
        HookEventKind::MessageAdded,
        HookEventKind::AfterInvocation,
    ];
    let in_run_order = [
        ("early", -100.0),
        ("one", 0.0),
        ("two", 0.0),
        ("late", 100.0),
    ];
    let expected_registrations: Vec<Registration> = kinds
        .iter()
        .flat_map(|&event| {
            in_run_order.map(|(name, order)| Registration {
                event,
                name: name.to_owned(),
                order,
            })
        })
        .collect();
    assert_eq!(agent.hooks().registrations(), expected_registrations);

    agent.invoke("hi", None).await.unwrap();
    let fired = |events: &[&str]| -> Vec<String> {
        events
            .iter()
            .flat_map(|event| in_run_order.map(|(name, _)| format!("{event}:{name}")))
            .collect()
    };
    assert_eq!(
        *log.lock().unwrap(),
        fired(&[
            "before_invocation",
            "message_added", // the prompt
            "before_model_call",
            "after_model_call",
            "message_added", // the tool use
            "before_tool_call",
            "after_tool_call",
            "message_added", // the tool result
            "before_model_call",
            "after_model_call",
            "message_added", // the answer
            "after_invocation",
        ])
    );
}

#[tokio::test(start_paused = true)]
async fn tool_runs_with_the_tool_use_left_by_the_last_before_tool_call_callback() {
    let echo = Echo::named("echo");
    let mut hooks = HookRegistry::new();
    // Registered last-first: order, not registration, decides who has the last word.
    hooks
        .add(
            "last",
            10.0,
            SyncHook(|event: &mut BeforeToolCallEvent| {
                event.tool_use.input = json!({"text": "from last"});
                event.tool_use.tool_use_id = "renamed-by-hook".into();
                Ok(())
            }),
        )
        .unwrap();
    hooks
        .add(
            "first",
            -10.0,
            SyncHook(|event: &mut BeforeToolCallEvent| {
                event.tool_use.input = json!({"text": "from first"});
                Ok(())
            }),
        )
        .unwrap();
    let seen = record_after_tool_calls(&mut hooks);
    let model = ScriptedModel::new([
        assistant(vec![tool_use("t1", "echo", json!({"text": "original"}))]),
        Message::assistant_text("done"),
    ]);
    let mut agent = Agent::builder(Arc::new(model.clone()))
        .tool(echo.clone())
        .hooks(hooks)
        .build()
        .await
        .unwrap();

    agent.invoke("go", None).await.unwrap();

    // The tool got the last callback's input, once; the result still answers the model's id.
    assert_eq!(
        echo.calls.all(),
        vec![("t1".to_owned(), json!({"text": "from last"}))]
    );
    let result = ToolResult {
        tool_use_id: "t1".into(),
        status: tau_agent::ToolResultStatus::Success,
        content: vec![tau_agent::ToolResultContent::Json(
            json!({"text": "from last"}),
        )],
        source: None,
    };
    assert_eq!(
        agent.messages(),
        [
            Message::user_text("go"),
            assistant(vec![tool_use("t1", "echo", json!({"text": "original"}))]),
            results(vec![result.clone()]),
            Message::assistant_text("done"),
        ]
    );
    assert_eq!(
        *seen.lock().unwrap(),
        vec![AfterToolCallSeen {
            tool_use: ToolUse {
                tool_use_id: "renamed-by-hook".into(),
                name: "echo".into(),
                input: json!({"text": "from last"}),
            },
            selected_tool: Some("echo".into()),
            result,
            error: None,
            cancel_message: None,
            ran: true,
            duration: Duration::ZERO,
        }]
    );
}

#[tokio::test]
async fn before_tool_call_may_replace_the_selected_tool() {
    let registered = Echo::named("echo");
    let stand_in = Echo::named("echo");
    let mut hooks = HookRegistry::new();
    let replacement = Arc::clone(&stand_in);
    hooks
        .add(
            "swap",
            HookOrder::DEFAULT,
            SyncHook(move |event: &mut BeforeToolCallEvent| {
                event.selected_tool = Some(replacement.clone());
                Ok(())
            }),
        )
        .unwrap();
    let model = ScriptedModel::new([
        assistant(vec![tool_use("t1", "echo", json!({"n": 1}))]),
        Message::assistant_text("done"),
    ]);
    let mut agent = Agent::builder(Arc::new(model))
        .tool(registered.clone())
        .hooks(hooks)
        .build()
        .await
        .unwrap();

    agent.invoke("go", None).await.unwrap();

    assert_eq!(registered.calls.all(), vec![]);
    assert_eq!(
        stand_in.calls.all(),
        vec![("t1".to_owned(), json!({"n": 1}))]
    );
}

#[tokio::test]
async fn a_tool_use_renamed_away_from_the_selected_tool_runs_nothing() {
    let echo = Echo::named("echo");
    let counter = Counter::named("counter");
    let mut hooks = HookRegistry::new();
    hooks
        .add(
            "rename-only",
            HookOrder::DEFAULT,
            SyncHook(|event: &mut BeforeToolCallEvent| {
                event.tool_use.name = "counter".into();
                Ok(())
            }),
        )
        .unwrap();
    let model = ScriptedModel::new([
        assistant(vec![tool_use("t1", "echo", json!({}))]),
        Message::assistant_text("ok"),
    ])
    .recording();
    let mut agent = Agent::builder(Arc::new(model.clone()))
        .tools([echo.clone() as _, counter.clone() as _])
        .hooks(hooks)
        .build()
        .await
        .unwrap();

    agent.invoke("go", None).await.unwrap();

    assert_eq!((echo.calls.count(), counter.calls.count()), (0, 0));
    assert_eq!(
        model.requests()[1].messages[2],
        results(vec![ToolResult::error_text(
            "t1",
            "Error: the tool use names 'counter' but the selected tool is 'echo'; it was not run."
        )])
    );
}

#[tokio::test(start_paused = true)]
async fn cancelled_call_does_not_run_and_the_model_reads_exactly_the_cancel_text() {
    let counter = Counter::named("counter");
    let mut hooks = HookRegistry::new();
    hooks
        .add(
            "deny",
            HookOrder::DEFAULT,
            SyncHook(|event: &mut BeforeToolCallEvent| {
                event.cancel_tool("The person declined this call.");
                Ok(())
            }),
        )
        .unwrap();
    let model = ScriptedModel::new([
        assistant(vec![tool_use("t1", "counter", json!({}))]),
        Message::assistant_text("understood"),
    ])
    .recording();
    let mut agent = Agent::builder(Arc::new(model.clone()))
        .tool(counter.clone())
        .hooks(hooks)
        .build()
        .await
        .unwrap();

    let result = agent.invoke("count", None).await.unwrap();

    assert_eq!(counter.calls.count(), 0);
    let history = vec![
        Message::user_text("count"),
        assistant(vec![tool_use("t1", "counter", json!({}))]),
        results(vec![ToolResult::error_text(
            "t1",
            "The person declined this call.",
        )]),
    ];
    assert_eq!(model.requests()[1].messages, history);
    assert_eq!(result, ended(2, Message::assistant_text("understood")));
}

#[tokio::test(start_paused = true)]
async fn cancelled_call_still_fires_after_tool_call_with_the_cancel_message() {
    let mut hooks = HookRegistry::new();
    hooks
        .add(
            "deny",
            HookOrder::SDK_FIRST,
            SyncHook(|event: &mut BeforeToolCallEvent| {
                event.cancel_tool("no");
                Ok(())
            }),
        )
        .unwrap();
    hooks
        .add(
            "cannot-undo",
            HookOrder::SDK_LAST,
            SyncHook(|event: &mut BeforeToolCallEvent| {
                event.cancel_tool("a later, different text");
                Ok(())
            }),
        )
        .unwrap();
    let seen = record_after_tool_calls(&mut hooks);
    let model = ScriptedModel::new([
        assistant(vec![tool_use("t1", "counter", json!({"x": 1}))]),
        Message::assistant_text("ok"),
    ]);
    let mut agent = Agent::builder(Arc::new(model))
        .tool(Counter::named("counter"))
        .hooks(hooks)
        .build()
        .await
        .unwrap();

    agent.invoke("count", None).await.unwrap();

    assert_eq!(
        *seen.lock().unwrap(),
        vec![AfterToolCallSeen {
            tool_use: ToolUse {
                tool_use_id: "t1".into(),
                name: "counter".into(),
                input: json!({"x": 1}),
            },
            selected_tool: Some("counter".into()),
            result: ToolResult::error_text("t1", "no"),
            error: None,
            cancel_message: Some("no".into()),
            ran: false,
            duration: Duration::ZERO,
        }]
    );
}

#[tokio::test(start_paused = true)]
async fn after_tool_call_sees_the_tool_use_result_error_and_duration() {
    let mut hooks = HookRegistry::new();
    let seen = record_after_tool_calls(&mut hooks);
    let model = ScriptedModel::new([
        assistant(vec![
            tool_use("t1", "sleeper", json!({"ms": 250})),
            tool_use("t2", "failing", json!({})),
        ]),
        Message::assistant_text("ok"),
    ]);
    let mut agent = Agent::builder(Arc::new(model))
        .tools([
            Sleeper::named("sleeper") as _,
            Failing::named("failing") as _,
        ])
        .hooks(hooks)
        .build()
        .await
        .unwrap();

    agent.invoke("go", None).await.unwrap();

    // Concurrent: the failing tool finishes first, at once; the sleeper after 250 ms of
    // tokio's (paused) clock.
    assert_eq!(
        *seen.lock().unwrap(),
        vec![
            AfterToolCallSeen {
                tool_use: ToolUse {
                    tool_use_id: "t2".into(),
                    name: "failing".into(),
                    input: json!({}),
                },
                selected_tool: Some("failing".into()),
                result: ToolResult::error_text("t2", "Error: disk full"),
                error: Some("disk full".into()),
                cancel_message: None,
                ran: true,
                duration: Duration::ZERO,
            },
            AfterToolCallSeen {
                tool_use: ToolUse {
                    tool_use_id: "t1".into(),
                    name: "sleeper".into(),
                    input: json!({"ms": 250}),
                },
                selected_tool: Some("sleeper".into()),
                result: ToolResult::success_text("t1", "slept 250 ms"),
                error: None,
                cancel_message: None,
                ran: true,
                duration: Duration::from_millis(250),
            },
        ]
    );
}

#[tokio::test]
async fn after_tool_call_may_replace_the_result_and_the_model_receives_the_replacement() {
    let mut hooks = HookRegistry::new();
    hooks
        .add(
            "redact",
            HookOrder::DEFAULT,
            SyncHook(|event: &mut AfterToolCallEvent| {
                event.result = ToolResult::success_text("any id", "[redacted]");
                Ok(())
            }),
        )
        .unwrap();
    let model = ScriptedModel::new([
        assistant(vec![tool_use("t1", "echo", json!({"secret": "hunter2"}))]),
        Message::assistant_text("ok"),
    ])
    .recording();
    let mut agent = Agent::builder(Arc::new(model.clone()))
        .tool(Echo::named("echo"))
        .hooks(hooks)
        .build()
        .await
        .unwrap();

    agent.invoke("go", None).await.unwrap();

    let history = vec![
        Message::user_text("go"),
        assistant(vec![tool_use("t1", "echo", json!({"secret": "hunter2"}))]),
        results(vec![ToolResult::success_text("t1", "[redacted]")]),
    ];
    assert_eq!(model.requests()[1].messages, history);
    assert_eq!(agent.messages()[..3], history);
}

#[tokio::test(start_paused = true)]
async fn unknown_tool_gets_an_error_result_and_after_tool_call_fires() {
    let mut hooks = HookRegistry::new();
    let seen = record_after_tool_calls(&mut hooks);
    let model = ScriptedModel::new([
        assistant(vec![tool_use("t1", "ghost", json!({}))]),
        Message::assistant_text("sorry"),
    ])
    .recording();
    let mut agent = Agent::builder(Arc::new(model.clone()))
        .tool(Echo::named("echo"))
        .hooks(hooks)
        .build()
        .await
        .unwrap();

    agent.invoke("boo", None).await.unwrap();

    let result = ToolResult::error_text("t1", "Unknown tool: ghost");
    assert_eq!(
        model.requests()[1].messages[2],
        results(vec![result.clone()])
    );
    assert_eq!(
        *seen.lock().unwrap(),
        vec![AfterToolCallSeen {
            tool_use: ToolUse {
                tool_use_id: "t1".into(),
                name: "ghost".into(),
                input: json!({}),
            },
            selected_tool: None,
            result,
            error: None,
            cancel_message: None,
            ran: false,
            duration: Duration::ZERO,
        }]
    );
}
