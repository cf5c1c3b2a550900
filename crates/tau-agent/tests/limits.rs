//! Limits per invocation: checked before each model call. The last allowed call's tool uses
//! still run, its answer is kept whole, and the next invocation has a fresh budget.

#![cfg(test)]

mod common;

use std::sync::Arc;

use common::{Counter, assistant, results, tool_use};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tau_agent::{Agent, AgentResult, AgentStop, Limits, Message, ScriptedModel, ToolResult, Usage};

/// Every call reports 5 input and 10 output tokens, 15 in all.
const PER_CALL: Usage = Usage {
    input_tokens: 5,
    output_tokens: 10,
    total_tokens: 15,
};

fn usage_of(calls: u64) -> Usage {
    Usage {
        input_tokens: 5 * calls,
        output_tokens: 10 * calls,
        total_tokens: 15 * calls,
    }
}

fn counter_call(id: &str) -> Message {
    assistant(vec![tool_use(id, "counter", json!({}))])
}

fn counter_result(id: &str, n: usize) -> Message {
    results(vec![ToolResult::success_text(id, format!("call {n}"))])
}

/// Two counter calls, then an answer, each entry reporting [`PER_CALL`].
fn two_calls_then_answer() -> ScriptedModel {
    let entry = |message: Message| -> Value {
        let mut value = serde_json::to_value(message).unwrap();
        value["usage"] = serde_json::to_value(PER_CALL).unwrap();
        value
    };
    let script = Value::Array(vec![
        entry(counter_call("c1")),
        entry(counter_call("c2")),
        entry(Message::assistant_text("done")),
    ]);
    ScriptedModel::from_json(&script.to_string()).unwrap()
}

/// Runs `two_calls_then_answer` under `limits`; returns the result and the history.
async fn run_under(limits: Limits) -> (AgentResult, Vec<Message>) {
    let mut agent = Agent::builder(Arc::new(two_calls_then_answer()))
        .tool(Counter::named("counter"))
        .limits(limits)
        .build()
        .await
        .unwrap();
    let result = agent.invoke("count twice", None).await.unwrap();
    (result, agent.messages().to_vec())
}

/// What a run stopped by a limit after two calls looks like.
fn stopped_after_two_calls(reason: AgentStop) -> (AgentResult, Vec<Message>) {
    (
        AgentResult {
            stop_reason: reason,
            message: Some(counter_call("c2")),
            usage: usage_of(2),
            model_calls: 2,
            interrupts: vec![],
        },
        vec![
            Message::user_text("count twice"),
            counter_call("c1"),
            counter_result("c1", 1),
            counter_call("c2"),
            counter_result("c2", 2),
        ],
    )
}

/// What a run that got its third call looks like: the answer whole, past any budget.
fn answered_on_the_third_call() -> (AgentResult, Vec<Message>) {
    let (_, mut history) = stopped_after_two_calls(AgentStop::EndTurn);
    history.push(Message::assistant_text("done"));
    (
        AgentResult {
            stop_reason: AgentStop::EndTurn,
            message: Some(Message::assistant_text("done")),
            usage: usage_of(3),
            model_calls: 3,
            interrupts: vec![],
        },
        history,
    )
}

#[tokio::test]
async fn limit_turns_runs_the_last_allowed_calls_tools_then_stops() {
    let turns = |n| Limits {
        max_turns: Some(n),
        ..Limits::default()
    };
    assert_eq!(
        run_under(turns(2)).await,
        stopped_after_two_calls(AgentStop::LimitTurns)
    );
    assert_eq!(run_under(turns(3)).await, answered_on_the_third_call());
}

#[tokio::test]
async fn limit_turns_keeps_an_answer_given_on_the_last_allowed_call_whole() {
    let model = ScriptedModel::new([counter_call("c1"), Message::assistant_text("done")]);
    let mut agent = Agent::builder(Arc::new(model))
        .tool(Counter::named("counter"))
        .limits(Limits {
            max_turns: Some(2),
            ..Limits::default()
        })
        .build()
        .await
        .unwrap();

    let result = agent.invoke("count once", None).await.unwrap();

    assert_eq!(
        result,
        AgentResult {
            stop_reason: AgentStop::EndTurn,
            message: Some(Message::assistant_text("done")),
            usage: Usage::default(),
            model_calls: 2,
            interrupts: vec![],
        }
    );
    assert_eq!(
        agent.messages(),
        [
            Message::user_text("count once"),
            counter_call("c1"),
            counter_result("c1", 1),
            Message::assistant_text("done"),
        ]
    );
}

#[tokio::test]
async fn limit_output_tokens_stops_when_the_spent_tokens_reach_the_budget() {
    let output = |n| Limits {
        max_output_tokens: Some(n),
        ..Limits::default()
    };
    // Two calls spend 20 output tokens: a budget of 20 is spent, one of 21 is not.
    assert_eq!(
        run_under(output(20)).await,
        stopped_after_two_calls(AgentStop::LimitOutputTokens)
    );
    assert_eq!(run_under(output(21)).await, answered_on_the_third_call());
}

#[tokio::test]
async fn limit_total_tokens_stops_when_the_spent_tokens_reach_the_budget() {
    let total = |n| Limits {
        max_total_tokens: Some(n),
        ..Limits::default()
    };
    // Two calls spend 30 tokens in all: a budget of 30 is spent, one of 31 is not.
    assert_eq!(
        run_under(total(30)).await,
        stopped_after_two_calls(AgentStop::LimitTotalTokens)
    );
    assert_eq!(run_under(total(31)).await, answered_on_the_third_call());
}

#[tokio::test]
async fn next_invocation_starts_with_a_fresh_budget() {
    let model = ScriptedModel::new([
        counter_call("c1"),
        Message::assistant_text("first answer"),
        Message::assistant_text("second answer"),
    ]);
    let mut agent = Agent::builder(Arc::new(model))
        .tool(Counter::named("counter"))
        .limits(Limits {
            max_turns: Some(1),
            ..Limits::default()
        })
        .build()
        .await
        .unwrap();

    let first = agent.invoke("count", None).await.unwrap();
    let second = agent.invoke("go on", None).await.unwrap();
    let third = agent.invoke("and again", None).await.unwrap();

    let result = |stop_reason, message| AgentResult {
        stop_reason,
        message: Some(message),
        usage: Usage::default(),
        model_calls: 1,
        interrupts: vec![],
    };
    assert_eq!(
        [first, second, third],
        [
            result(AgentStop::LimitTurns, counter_call("c1")),
            result(AgentStop::EndTurn, Message::assistant_text("first answer")),
            result(AgentStop::EndTurn, Message::assistant_text("second answer")),
        ]
    );
}
