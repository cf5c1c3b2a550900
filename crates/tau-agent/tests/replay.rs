//! The `replay:` model reads its place from the session's own history: several sessions
//! share one script, and a resumed session, or a new process, goes on where its history
//! stopped, however much of it the window dropped.

#![cfg(test)]

mod common;

use std::path::Path;
use std::sync::Arc;

use common::{Counter, assistant, results, tool_use};
use futures::StreamExt;
use pretty_assertions::assert_eq;
use serde_json::json;
use tau_agent::{
    Agent, BlockDelta, Message, Model, OwnedModelRequest, ScriptedModel, SessionRepository,
    SlidingWindow, StreamChunk, ToolResult,
};
use tau_protocol::SessionId;

/// Each prompt gets a counter call, then an answer; a throttled entry sits in between
/// (never stored, so it must not shift what comes after).
const SCRIPT: &str = r#"[
    {"role": "assistant", "content": [{"toolUse": {"toolUseId": "c1", "name": "counter", "input": {}}}]},
    {"role": "assistant", "content": [{"text": "first answer"}]},
    {"error": {"type": "throttled", "retryAfterMs": 1}},
    {"role": "assistant", "content": [{"text": "second answer"}]},
    {"role": "assistant", "content": [{"text": "third answer"}]}
]"#;

fn id(name: &str) -> SessionId {
    SessionId::parse(name).unwrap()
}

/// An agent on session `name` of `store`, its model made for what the session holds.
async fn agent_on(
    script: &ScriptedModel,
    store: &Arc<tau_core::StoredSessions>,
    name: &str,
) -> Agent {
    store.ensure_session(&id(name)).unwrap();
    let stored = store.messages(&id(name), 0).unwrap();
    let model = script.for_session(&stored).unwrap();
    Agent::builder(model)
        .tool(Counter::named("counter"))
        .window(SlidingWindow { window_size: 2 })
        .session(Arc::clone(store) as _, id(name))
        .build()
        .await
        .unwrap()
}

async fn answer(agent: &mut Agent, prompt: &str) -> Message {
    agent.invoke(prompt, None).await.unwrap().message.unwrap()
}

fn first_turn() -> Vec<Message> {
    vec![
        Message::user_text("one"),
        assistant(vec![tool_use("c1", "counter", json!({}))]),
        results(vec![ToolResult::success_text("c1", "call 1")]),
        Message::assistant_text("first answer"),
    ]
}

fn open(db: &Path) -> Arc<tau_core::StoredSessions> {
    Arc::new(common::stored_sessions(db))
}

#[tokio::test(start_paused = true)]
async fn two_sessions_share_one_script_each_at_its_own_place() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("state.db"));
    let script = ScriptedModel::from_json(SCRIPT).unwrap();
    let mut kitchen = agent_on(&script, &store, "kitchen").await;
    let mut garden = agent_on(&script, &store, "garden").await;

    assert_eq!(
        answer(&mut kitchen, "one").await,
        Message::assistant_text("first answer")
    );
    // The kitchen played three entries; the garden still starts at the first.
    assert_eq!(
        answer(&mut garden, "one").await,
        Message::assistant_text("first answer")
    );
    assert_eq!(
        answer(&mut kitchen, "two").await,
        Message::assistant_text("second answer")
    );
    assert_eq!(
        answer(&mut garden, "two").await,
        Message::assistant_text("second answer")
    );
    for name in ["kitchen", "garden"] {
        let mut expected = first_turn();
        expected.extend([
            Message::user_text("two"),
            Message::assistant_text("second answer"),
        ]);
        assert_eq!(store.messages(&id(name), 0).unwrap(), expected, "{name}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_resumed_session_continues_the_script_past_what_the_window_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("state.db");
    // Each block is a new process: a new script, a new store, the same file.
    {
        let script = ScriptedModel::from_json(SCRIPT).unwrap();
        let mut agent = agent_on(&script, &open(&db), "kitchen").await;
        answer(&mut agent, "one").await;
    }
    {
        let script = ScriptedModel::from_json(SCRIPT).unwrap().recording();
        let mut agent = agent_on(&script, &open(&db), "kitchen").await;
        assert_eq!(agent.messages(), first_turn());
        assert_eq!(
            answer(&mut agent, "two").await,
            Message::assistant_text("second answer")
        );
        // The throttled entry after the first answer was played, and retried past.
        assert_eq!(script.requests().len(), 2);
        // The window of 2 kept only the last turn.
        assert_eq!(agent.messages().len(), 2);
        assert_eq!(agent.state().removed_count, 4);
    }
    let script = ScriptedModel::from_json(SCRIPT).unwrap().recording();
    let mut agent = agent_on(&script, &open(&db), "kitchen").await;
    // One assistant message is live, three are stored: the script goes on after the third.
    assert_eq!(
        agent.messages(),
        [
            Message::user_text("two"),
            Message::assistant_text("second answer")
        ]
    );
    assert_eq!(
        answer(&mut agent, "three").await,
        Message::assistant_text("third answer")
    );
    assert_eq!(script.requests().len(), 1);
    assert_eq!(script.remaining(), 5, "the script itself never moves");
}

#[tokio::test]
async fn a_session_that_holds_every_reply_gets_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("state.db"));
    let script = ScriptedModel::new([Message::assistant_text("only")]);
    let mut agent = agent_on(&script, &store, "kitchen").await;
    answer(&mut agent, "one").await;
    let mut resumed = agent_on(&script, &store, "kitchen").await;
    let error = resumed.invoke("two", None).await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "model error: the replay script has no more responses (all 1 were played)"
    );
}

fn next_request() -> OwnedModelRequest {
    OwnedModelRequest {
        messages: vec![Message::user_text("next?")],
        ..OwnedModelRequest::default()
    }
}

/// What each of `calls` calls plays: the reply's text, or the error.
async fn play(model: &dyn Model, calls: usize) -> Vec<String> {
    let mut played = Vec::new();
    for _ in 0..calls {
        played.push(match model.stream(next_request().as_request()).await {
            Ok(stream) => stream
                .map(|chunk| match chunk.unwrap() {
                    StreamChunk::ContentBlockDelta {
                        delta: BlockDelta::Text { text },
                    } => text,
                    _ => String::new(),
                })
                .collect::<Vec<_>>()
                .await
                .concat(),
            Err(error) => error.to_string(),
        });
    }
    played
}

const ERRORS_BETWEEN: &str = r#"[
    {"error":{"type":"throttled"}},
    {"role":"assistant","content":[{"text":"one"}]},
    {"role":"assistant","content":[{"text":"two"}]},
    {"error":{"type":"other","message":"down"}},
    {"role":"assistant","content":[{"text":"three"}]}
]"#;

fn stored(replies: usize) -> Vec<Message> {
    (0..replies)
        .flat_map(|i| {
            [
                Message::user_text(format!("q{i}")),
                Message::assistant_text(format!("a{i}")),
            ]
        })
        .collect()
}

#[tokio::test]
async fn a_script_continues_after_the_replies_it_holds() {
    let script = ScriptedModel::from_json(ERRORS_BETWEEN).unwrap();
    let throttled = "the model provider is throttling requests: scripted throttling";
    let exhausted = "model error: the replay script has no more responses (all 5 were played)";
    let cases: [(usize, Vec<&str>); 5] = [
        (
            0,
            vec![throttled, "one", "two", "model error: down", "three"],
        ),
        // The error entries after the k-th reply are played before the next reply.
        (1, vec!["two", "model error: down", "three", exhausted]),
        (2, vec!["model error: down", "three", exhausted]),
        (3, vec![exhausted]),
        (7, vec![exhausted]),
    ];
    for (replies, expected) in cases {
        let model = script.for_session(&stored(replies)).unwrap();
        assert_eq!(
            play(model.as_ref(), expected.len()).await,
            expected,
            "{replies}"
        );
    }
    // Each session has its own place; the script itself was not moved.
    assert_eq!(script.remaining(), 5);
}

#[tokio::test]
async fn requests_are_kept_only_when_recording_and_shared_with_sessions() {
    let quiet = ScriptedModel::from_json(ERRORS_BETWEEN).unwrap();
    play(&quiet, 2).await;
    assert_eq!(quiet.requests(), vec![]);

    let recording = ScriptedModel::from_json(ERRORS_BETWEEN)
        .unwrap()
        .recording();
    let session = recording.for_session(&stored(1)).unwrap();
    play(session.as_ref(), 1).await;
    assert_eq!(recording.requests(), vec![next_request()]);
}
