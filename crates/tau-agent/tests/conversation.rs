//! Whole conversations with the scripted model: the history the person builds up, what the
//! model is sent each time, its Converse JSON shape, and the repair of unanswered calls.

#![cfg(test)]

mod common;

use std::sync::Arc;

use common::{Counter, Echo, assistant, results, spec, text, tool_use};
use pretty_assertions::assert_eq;
use serde_json::json;
use tau_agent::{
    Agent, AgentError, AgentResult, AgentStop, Message, ModelError, OwnedModelRequest,
    ScriptedModel, TOOL_INTERRUPTED_TEXT, ToolResult, ToolResultContent, ToolResultStatus, Usage,
};

fn echoed(id: &str, input: serde_json::Value) -> ToolResult {
    ToolResult {
        tool_use_id: id.into(),
        status: ToolResultStatus::Success,
        content: vec![ToolResultContent::Json(input)],
        source: None,
    }
}

fn ended(message: Message, model_calls: u32) -> AgentResult {
    AgentResult {
        stop_reason: AgentStop::EndTurn,
        message: Some(message),
        usage: Usage::default(),
        model_calls,
        interrupts: vec![],
    }
}

#[tokio::test]
async fn three_turn_conversation_builds_the_whole_history_and_sends_it_each_time() {
    let echo_ping = assistant(vec![
        text("Echoing."),
        tool_use("e1", "echo", json!({"say": "ping"})),
    ]);
    let both = assistant(vec![
        tool_use("e2", "echo", json!({"say": "pong"})),
        tool_use("c1", "counter", json!({})),
    ]);
    let model = ScriptedModel::new([
        Message::assistant_text("Hi! How can I help?"),
        echo_ping.clone(),
        Message::assistant_text("It said ping."),
        both.clone(),
        Message::assistant_text("Both done."),
    ])
    .recording();
    let echo = Echo::named("echo");
    let counter = Counter::named("counter");
    let mut agent = Agent::builder(Arc::new(model.clone()))
        .system_prompt("You are tau.")
        .tools([echo.clone() as _, counter.clone() as _])
        .build()
        .await
        .unwrap();

    let answers = [
        agent.invoke("hello", None).await.unwrap(),
        agent.invoke("echo ping", None).await.unwrap(),
        agent.invoke("both at once", None).await.unwrap(),
    ];

    assert_eq!(
        answers,
        [
            ended(Message::assistant_text("Hi! How can I help?"), 1),
            ended(Message::assistant_text("It said ping."), 2),
            ended(Message::assistant_text("Both done."), 2),
        ]
    );
    let history = vec![
        Message::user_text("hello"),
        Message::assistant_text("Hi! How can I help?"),
        Message::user_text("echo ping"),
        echo_ping,
        results(vec![echoed("e1", json!({"say": "ping"}))]),
        Message::assistant_text("It said ping."),
        Message::user_text("both at once"),
        both,
        results(vec![
            echoed("e2", json!({"say": "pong"})),
            ToolResult::success_text("c1", "call 1"),
        ]),
        Message::assistant_text("Both done."),
    ];
    assert_eq!(agent.messages(), history);
    // Each call is sent everything before its answer, the system prompt and the specs.
    let request = |len: usize| OwnedModelRequest {
        system_prompt: Some("You are tau.".into()),
        messages: history[..len].to_vec(),
        tool_specs: vec![spec("counter"), spec("echo")],
    };
    assert_eq!(
        model.requests(),
        [request(1), request(3), request(5), request(7), request(9)]
    );
    assert_eq!(
        (echo.calls.all(), counter.calls.all()),
        (
            vec![
                ("e1".to_owned(), json!({"say": "ping"})),
                ("e2".to_owned(), json!({"say": "pong"}))
            ],
            vec![("c1".to_owned(), json!({}))]
        )
    );
}

#[tokio::test]
async fn history_serializes_to_the_converse_shape() {
    let model = ScriptedModel::new([
        assistant(vec![
            text("Checking."),
            tool_use("t1", "counter", json!({})),
        ]),
        Message::assistant_text("One."),
    ]);
    let mut agent = Agent::builder(Arc::new(model))
        .tool(Counter::named("counter"))
        .build()
        .await
        .unwrap();

    agent.invoke("count", None).await.unwrap();

    assert_eq!(
        serde_json::to_value(agent.messages()).unwrap(),
        json!([
            {"role": "user", "content": [{"text": "count"}]},
            {"role": "assistant", "content": [
                {"text": "Checking."},
                {"toolUse": {"toolUseId": "t1", "name": "counter", "input": {}}}
            ]},
            {"role": "user", "content": [
                {"toolResult": {"toolUseId": "t1", "status": "success", "content": [{"text": "call 1"}]}}
            ]},
            {"role": "assistant", "content": [{"text": "One."}]}
        ])
    );
}

#[tokio::test]
async fn an_exhausted_script_is_a_clear_model_error() {
    let model = ScriptedModel::new([Message::assistant_text("only one")]);
    let mut agent = Agent::builder(Arc::new(model)).build().await.unwrap();
    agent.invoke("first", None).await.unwrap();

    let error = agent.invoke("second", None).await.unwrap_err();

    let AgentError::Model(error) = error else {
        panic!("expected a model error, got {error:?}")
    };
    assert_eq!(
        error,
        ModelError::other("the replay script has no more responses (all 1 were played)")
    );
    assert_eq!(
        agent.messages(),
        [
            Message::user_text("first"),
            Message::assistant_text("only one"),
            Message::user_text("second"),
        ]
    );
}

#[tokio::test]
async fn unanswered_tool_use_in_a_given_history_is_repaired_before_the_model_sees_it() {
    let dangling = assistant(vec![
        tool_use("t1", "counter", json!({})),
        tool_use("t2", "counter", json!({})),
    ]);
    let model = ScriptedModel::new([Message::assistant_text("Sorry about that.")]).recording();
    let counter = Counter::named("counter");
    let mut agent = Agent::builder(Arc::new(model.clone()))
        .tool(counter.clone())
        .messages(vec![Message::user_text("count twice"), dangling.clone()])
        .build()
        .await
        .unwrap();

    agent.invoke("what happened?", None).await.unwrap();

    assert_eq!(
        model.requests()[0].messages,
        [
            Message::user_text("count twice"),
            dangling,
            results(vec![
                ToolResult::error_text("t1", TOOL_INTERRUPTED_TEXT),
                ToolResult::error_text("t2", TOOL_INTERRUPTED_TEXT),
            ]),
            Message::user_text("what happened?"),
        ]
    );
    assert_eq!(counter.calls.count(), 0);
}
