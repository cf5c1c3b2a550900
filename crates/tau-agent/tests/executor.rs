//! Executors: concurrent calls keep the model's order in their results; sequential calls
//! never overlap.

#![cfg(test)]

mod common;

use std::sync::Arc;

use common::{Sleeper, assistant, results, tool_use};
use pretty_assertions::assert_eq;
use serde_json::json;
use tau_agent::{Agent, Executor, Message, ScriptedModel, ToolResult};

/// Three calls whose sleeps make the later ones finish first.
fn three_sleeps() -> ScriptedModel {
    ScriptedModel::new([
        assistant(vec![
            tool_use("a", "sleeper", json!({"ms": 30})),
            tool_use("b", "sleeper", json!({"ms": 20})),
            tool_use("c", "sleeper", json!({"ms": 10})),
        ]),
        Message::assistant_text("rested"),
    ])
    .recording()
}

fn results_in_tool_use_order() -> Message {
    results(vec![
        ToolResult::success_text("a", "slept 30 ms"),
        ToolResult::success_text("b", "slept 20 ms"),
        ToolResult::success_text("c", "slept 10 ms"),
    ])
}

#[tokio::test(start_paused = true)]
async fn concurrent_results_reach_the_model_in_tool_use_order_even_when_later_tools_finish_first() {
    let sleeper = Sleeper::named("sleeper");
    let model = three_sleeps();
    let mut agent = Agent::builder(Arc::new(model.clone()))
        .tool(sleeper.clone())
        .build()
        .await
        .unwrap();
    assert_eq!(agent.executor(), Executor::Concurrent, "the default");

    agent.invoke("rest", None).await.unwrap();

    assert_eq!(
        sleeper.timeline.lines(),
        ["start a", "start b", "start c", "end c", "end b", "end a"]
    );
    assert_eq!(
        model.requests()[1].messages.last(),
        Some(&results_in_tool_use_order())
    );
}

#[tokio::test(start_paused = true)]
async fn sequential_calls_never_overlap() {
    let sleeper = Sleeper::named("sleeper");
    let model = three_sleeps();
    let mut agent = Agent::builder(Arc::new(model.clone()))
        .tool(sleeper.clone())
        .executor(Executor::Sequential)
        .build()
        .await
        .unwrap();

    agent.invoke("rest", None).await.unwrap();

    assert_eq!(
        sleeper.timeline.lines(),
        ["start a", "end a", "start b", "end b", "start c", "end c"]
    );
    assert_eq!(
        model.requests()[1].messages.last(),
        Some(&results_in_tool_use_order())
    );
}
