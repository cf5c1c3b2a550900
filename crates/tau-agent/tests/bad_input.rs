//! Bad input: what a model or a tool gets wrong becomes an error result or a typed error,
//! the history stays valid, and nothing panics.

#![cfg(test)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{
    AfterToolCallSeen, Counter, Echo, Panicker, RawModel, RawReply, assistant,
    record_after_tool_calls, results, tool_use,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tau_agent::{
    Agent, AgentError, AgentResult, AgentStop, BeforeToolCallEvent, BlockDelta, BlockStart,
    HOOK_FAILED_TEXT, HookOrder, HookRegistry, Limits, Message, ModelError, Role, ScriptedModel,
    StreamChunk, SyncHook, TOOL_PANICKED_TEXT, ToolResult, ToolUse, Usage,
};

fn message_start() -> StreamChunk {
    StreamChunk::MessageStart {
        role: Role::Assistant,
    }
}

fn tool_start(id: &str, name: &str) -> StreamChunk {
    StreamChunk::ContentBlockStart {
        start: BlockStart::ToolUse {
            tool_use_id: id.into(),
            name: name.into(),
        },
    }
}

fn tool_input(json: &str) -> StreamChunk {
    StreamChunk::ContentBlockDelta {
        delta: BlockDelta::ToolUseInput { json: json.into() },
    }
}

fn text_start() -> StreamChunk {
    StreamChunk::ContentBlockStart {
        start: BlockStart::Text,
    }
}

fn text_delta(text: &str) -> StreamChunk {
    StreamChunk::ContentBlockDelta {
        delta: BlockDelta::Text { text: text.into() },
    }
}

fn message_stop(stop_reason: AgentStop) -> StreamChunk {
    StreamChunk::MessageStop { stop_reason }
}

fn answer(text: &str) -> RawReply {
    RawReply::ends(vec![
        message_start(),
        text_start(),
        text_delta(text),
        StreamChunk::ContentBlockStop,
        message_stop(AgentStop::EndTurn),
    ])
}

#[tokio::test]
async fn malformed_tool_input_becomes_an_error_result_and_the_loop_goes_on() {
    let model = RawModel::new(vec![
        RawReply::ends(vec![
            message_start(),
            tool_start("t1", "echo"),
            tool_input(r#"{"say": "#),
            tool_input("oops"),
            StreamChunk::ContentBlockStop,
            message_stop(AgentStop::ToolUse),
        ]),
        answer("Let me try that again later."),
    ]);
    let echo = Echo::named("echo");
    let mut agent = Agent::builder(Arc::new(model.clone()))
        .tool(echo.clone())
        .build()
        .await
        .unwrap();

    let result = agent.invoke("say something", None).await.unwrap();

    let parse_error = serde_json::from_str::<Value>(r#"{"say": oops"#).unwrap_err();
    let history = vec![
        Message::user_text("say something"),
        assistant(vec![tool_use("t1", "echo", json!({}))]),
        results(vec![ToolResult::error_text(
            "t1",
            format!(
                "Error: the tool input is not valid JSON ({parse_error}). The tool was not run."
            ),
        )]),
        Message::assistant_text("Let me try that again later."),
    ];
    assert_eq!(agent.messages(), history);
    assert_eq!(model.requests()[1].messages, history[..3]);
    assert_eq!(echo.calls.count(), 0);
    assert_eq!(result.stop_reason, AgentStop::EndTurn);
}

#[tokio::test]
async fn tool_use_with_an_invalid_name_gets_an_error_result() {
    let long = "a".repeat(65);
    let model = ScriptedModel::new([
        assistant(vec![
            tool_use("t1", "rm -rf", json!({})),
            tool_use("t2", &long, json!({})),
            tool_use("t3", "echo", json!({"ok": true})),
        ]),
        Message::assistant_text("done"),
    ])
    .recording();
    let echo = Echo::named("echo");
    let mut agent = Agent::builder(Arc::new(model.clone()))
        .tool(echo.clone())
        .build()
        .await
        .unwrap();

    agent.invoke("go", None).await.unwrap();

    let invalid = |id: &str, shown: &str| {
        ToolResult::error_text(
            id,
            format!(
                "Error: tool name \"{shown}\" is invalid; names match ^[a-zA-Z0-9_-]{{1,64}}$. The tool was not run."
            ),
        )
    };
    let echoed = ToolResult {
        tool_use_id: "t3".into(),
        status: tau_agent::ToolResultStatus::Success,
        content: vec![tau_agent::ToolResultContent::Json(json!({"ok": true}))],
        source: None,
    };
    assert_eq!(
        model.requests()[1].messages[2],
        results(vec![invalid("t1", "rm -rf"), invalid("t2", &long), echoed])
    );
    assert_eq!(
        echo.calls.all(),
        vec![("t3".to_owned(), json!({"ok": true}))]
    );
}

#[tokio::test]
async fn stream_that_ends_early_is_an_incomplete_error_and_the_history_keeps_what_it_had() {
    let cases = [
        (
            "inside a tool-use block",
            vec![
                message_start(),
                tool_start("t1", "echo"),
                tool_input(r#"{"say":"#),
            ],
            "the stream ended inside a content block",
        ),
        (
            "before the message stopped",
            vec![
                message_start(),
                text_start(),
                text_delta("half an ans"),
                StreamChunk::ContentBlockStop,
            ],
            "the stream ended before the message stopped",
        ),
    ];
    for (case, chunks, message) in cases {
        let model = RawModel::new(vec![RawReply::ends(chunks)]);
        let echo = Echo::named("echo");
        let mut agent = Agent::builder(Arc::new(model))
            .tool(echo.clone())
            .messages(vec![
                Message::user_text("earlier"),
                Message::assistant_text("reply"),
            ])
            .build()
            .await
            .unwrap();

        let error = agent.invoke("now", None).await.unwrap_err();

        let AgentError::Model(error) = error else {
            panic!("{case}: expected a model error, got {error:?}")
        };
        assert_eq!(error, ModelError::incomplete(message), "{case}");
        assert_eq!(
            agent.messages(),
            [
                Message::user_text("earlier"),
                Message::assistant_text("reply"),
                Message::user_text("now"),
            ],
            "{case}"
        );
        assert_eq!(echo.calls.count(), 0, "{case}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_panicking_tool_gives_an_error_result() {
    let model = ScriptedModel::new([
        assistant(vec![tool_use("t1", "buggy", json!({}))]),
        Message::assistant_text("That tool is broken."),
    ])
    .recording();
    let mut hooks = HookRegistry::new();
    let seen = record_after_tool_calls(&mut hooks);
    let mut agent = Agent::builder(Arc::new(model.clone()))
        .tool(Panicker::named("buggy"))
        .hooks(hooks)
        .build()
        .await
        .unwrap();

    let result = agent.invoke("try it", None).await.unwrap();

    let failed = ToolResult::error_text("t1", TOOL_PANICKED_TEXT);
    assert_eq!(
        model.requests()[1].messages[2],
        results(vec![failed.clone()])
    );
    assert_eq!(
        *seen.lock().unwrap(),
        vec![AfterToolCallSeen {
            tool_use: ToolUse {
                tool_use_id: "t1".into(),
                name: "buggy".into(),
                input: json!({}),
            },
            selected_tool: Some("buggy".into()),
            result: failed,
            error: Some("the tool panicked".into()),
            cancel_message: None,
            ran: true,
            duration: Duration::ZERO,
        }]
    );
    assert_eq!(result.stop_reason, AgentStop::EndTurn);
}

#[tokio::test]
async fn a_model_cannot_claim_a_stop_reason_only_the_loop_gives() {
    for claimed in [
        AgentStop::Interrupt,
        AgentStop::Cancelled,
        AgentStop::LimitTurns,
        AgentStop::LimitOutputTokens,
        AgentStop::LimitTotalTokens,
    ] {
        let model = RawModel::new(vec![
            RawReply::ends(vec![
                message_start(),
                tool_start("t1", "echo"),
                tool_input("{}"),
                StreamChunk::ContentBlockStop,
                message_stop(claimed),
            ]),
            RawReply::ends(vec![
                message_start(),
                text_start(),
                text_delta("done"),
                StreamChunk::ContentBlockStop,
                message_stop(claimed),
            ]),
        ]);
        let echo = Echo::named("echo");
        let mut agent = Agent::builder(Arc::new(model))
            .tool(echo.clone())
            .build()
            .await
            .unwrap();

        let result = agent.invoke("go", None).await.unwrap();

        // The blocks decide, as for any stop reason that disagrees with them.
        assert_eq!(
            result,
            AgentResult {
                stop_reason: AgentStop::EndTurn,
                message: Some(Message::assistant_text("done")),
                usage: Usage::default(),
                model_calls: 2,
                interrupts: vec![],
            },
            "{claimed:?}"
        );
        assert_eq!(echo.calls.count(), 1, "{claimed:?}");
    }
}

/// A small deterministic generator, so a failing case can be replayed from its seed.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn pick<T: Clone>(&mut self, items: &[T]) -> T {
        items[(self.next() % items.len() as u64) as usize].clone()
    }
}

const ALL_STOP_REASONS: [AgentStop; 11] = [
    AgentStop::EndTurn,
    AgentStop::ToolUse,
    AgentStop::MaxTokens,
    AgentStop::StopSequence,
    AgentStop::ContentFiltered,
    AgentStop::GuardrailIntervened,
    AgentStop::Interrupt,
    AgentStop::Cancelled,
    AgentStop::LimitTurns,
    AgentStop::LimitOutputTokens,
    AgentStop::LimitTotalTokens,
];

fn random_item(rng: &mut XorShift) -> Result<StreamChunk, ModelError> {
    let long_name = "n".repeat(100);
    Ok(match rng.next() % 9 {
        0 => StreamChunk::MessageStart {
            role: rng.pick(&[Role::Assistant, Role::User]),
        },
        1 => text_start(),
        2 => tool_start(
            rng.pick(&["", "t", "t", "t2"]),
            rng.pick(&["echo", "echo", "", "rm -rf", "ghost", "é", &long_name]),
        ),
        3 => text_delta(rng.pick(&["", "hi", "ü", "\u{0}", "\u{feff}"])),
        4 => tool_input(rng.pick(&["{", "}", "\"a\":1", "[1]", "null", "{\"a\":1}", "\u{fffd}"])),
        5 => StreamChunk::ContentBlockStop,
        6 => message_stop(rng.pick(&ALL_STOP_REASONS)),
        7 => StreamChunk::Metadata {
            usage: Usage {
                input_tokens: rng.pick(&[0, 1, u64::MAX]),
                output_tokens: rng.pick(&[0, 7, u64::MAX]),
                total_tokens: rng.pick(&[0, 9, u64::MAX]),
            },
        },
        _ => return Err(ModelError::other("the connection broke")),
    })
}

/// Every assistant message with tool uses, except possibly the last message, is followed
/// by a user message answering exactly those uses, in order.
fn every_tool_use_is_answered(history: &[Message]) -> bool {
    history.windows(2).all(|pair| {
        let uses: Vec<_> = pair[0].tool_uses().map(|u| &u.tool_use_id).collect();
        let answers: Vec<_> = pair[1].tool_results().map(|r| &r.tool_use_id).collect();
        uses.is_empty() || (pair[1].role == Role::User && uses == answers)
    })
}

#[tokio::test]
async fn nothing_panics_on_model_output() {
    let mut rng = XorShift(0x5eed_1234_abcd_9876);
    for case in 0..400 {
        let replies = (0..3)
            .map(|_| {
                let len = rng.next() % 14;
                RawReply {
                    items: (0..len).map(|_| random_item(&mut rng)).collect(),
                    stall: false,
                }
            })
            .collect();
        let model = RawModel::new(replies);
        let mut agent = Agent::builder(Arc::new(model))
            .tool(Echo::named("echo"))
            .limits(Limits {
                max_turns: Some(3),
                ..Limits::default()
            })
            .build()
            .await
            .unwrap();

        let outcome = agent.invoke("go", None).await;

        let history = agent.messages();
        assert!(
            every_tool_use_is_answered(history),
            "case {case}: {history:#?}"
        );
        assert!(
            history
                .iter()
                .skip(1)
                .step_by(2)
                .all(|m| m.role == Role::Assistant),
            "case {case}: only the loop decides who spoke: {history:#?}"
        );
        if let Ok(result) = outcome {
            let loop_only = matches!(
                result.stop_reason,
                AgentStop::Interrupt
                    | AgentStop::Cancelled
                    | AgentStop::LimitOutputTokens
                    | AgentStop::LimitTotalTokens
            );
            assert!(!loop_only, "case {case}: {result:?}");
            if result.stop_reason == AgentStop::LimitTurns {
                assert_eq!(result.model_calls, 3, "case {case}");
            }
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_panicking_before_tool_call_hook_cancels_the_call() {
    let counter = Counter::named("counter");
    let mut hooks = HookRegistry::new();
    hooks
        .add(
            "buggy-policy",
            HookOrder::DEFAULT,
            SyncHook(|_: &mut BeforeToolCallEvent| -> tau_agent::HookResult {
                panic!("a bug in the policy")
            }),
        )
        .unwrap();
    let seen = record_after_tool_calls(&mut hooks);
    let model = ScriptedModel::new([
        assistant(vec![tool_use("t1", "counter", json!({}))]),
        Message::assistant_text("ok"),
    ])
    .recording();
    let mut agent = Agent::builder(Arc::new(model.clone()))
        .tool(counter.clone())
        .hooks(hooks)
        .build()
        .await
        .unwrap();

    agent.invoke("count", None).await.unwrap();

    assert_eq!(counter.calls.count(), 0);
    assert_eq!(
        model.requests()[1].messages[2],
        results(vec![ToolResult::error_text("t1", HOOK_FAILED_TEXT)])
    );
    assert_eq!(
        *seen.lock().unwrap(),
        vec![AfterToolCallSeen {
            tool_use: ToolUse {
                tool_use_id: "t1".into(),
                name: "counter".into(),
                input: json!({}),
            },
            selected_tool: Some("counter".into()),
            result: ToolResult::error_text("t1", HOOK_FAILED_TEXT),
            error: None,
            cancel_message: Some(HOOK_FAILED_TEXT.into()),
            ran: false,
            duration: Duration::ZERO,
        }]
    );
}
