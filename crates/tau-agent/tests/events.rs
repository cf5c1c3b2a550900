//! Turn events: what a caller watching an invocation sees, in the order it happened.

#![cfg(test)]

mod common;

use std::sync::Arc;

use common::{Reporter, drain};
use pretty_assertions::assert_eq;
use serde_json::json;
use tau_agent::{
    Agent, AgentStop, EventSink, ScriptedModel, ToolResult, ToolUse, TurnEvent, Usage,
};

#[tokio::test]
async fn one_turn_streams_text_tool_use_progress_result_and_stop() {
    let model = ScriptedModel::from_json(
        r#"[
            {"role": "assistant",
             "content": [{"text": "Checking."}, {"toolUse": {"toolUseId": "r1", "name": "report", "input": {"deep": true}}}],
             "usage": {"inputTokens": 10, "outputTokens": 5, "totalTokens": 15}},
            {"role": "assistant",
             "content": [{"text": "All good."}],
             "usage": {"inputTokens": 20, "outputTokens": 3, "totalTokens": 23}}
        ]"#,
    )
    .unwrap();
    let mut agent = Agent::builder(Arc::new(model))
        .tool(Reporter::named("report"))
        .build()
        .await
        .unwrap();
    let (sink, mut events) = EventSink::channel();

    agent.invoke("check the house", Some(&sink)).await.unwrap();

    let progress = |message: &str| TurnEvent::ToolProgress {
        tool_use_id: "r1".into(),
        name: "report".into(),
        message: message.into(),
    };
    assert_eq!(
        drain(&mut events),
        [
            TurnEvent::TextDelta {
                text: "Chec".into()
            },
            TurnEvent::TextDelta {
                text: "king.".into()
            },
            TurnEvent::ToolUse {
                tool_use: ToolUse {
                    tool_use_id: "r1".into(),
                    name: "report".into(),
                    input: json!({"deep": true}),
                }
            },
            progress("halfway"),
            progress("almost"),
            TurnEvent::ToolResult {
                result: ToolResult::success_text("r1", "done")
            },
            TurnEvent::TextDelta {
                text: "All ".into()
            },
            TurnEvent::TextDelta {
                text: "good.".into()
            },
            TurnEvent::Stop {
                reason: AgentStop::EndTurn,
                usage: Usage {
                    input_tokens: 30,
                    output_tokens: 8,
                    total_tokens: 38
                }
            },
        ]
    );
}

#[test]
fn turn_events_serialize_as_tagged_lines() {
    let event = TurnEvent::Stop {
        reason: AgentStop::LimitTurns,
        usage: Usage::default(),
    };
    assert_eq!(
        serde_json::to_string(&event).unwrap(),
        r#"{"type":"stop","reason":"limit_turns","usage":{"inputTokens":0,"outputTokens":0,"totalTokens":0}}"#
    );
}
