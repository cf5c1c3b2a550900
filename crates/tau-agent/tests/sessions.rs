//! Sessions in SQLite: a conversation and the agent's state survive a new agent, and a
//! process killed in the middle of a turn loses nothing it had written.

#![cfg(test)]

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{Blocker, Echo, assistant, results, tool_use};
use pretty_assertions::assert_eq;
use serde_json::json;
use tau_agent::{
    Agent, AgentBuilder, Message, ScriptedModel, SessionRepository, SlidingWindow,
    TOOL_INTERRUPTED_TEXT, ToolResult, ToolResultContent, ToolResultStatus,
};
use tau_protocol::SessionId;

/// How the parent test tells its child process where the database is.
const CHILD_DB: &str = "TAU_AGENT_TEST_SESSION_DB";
const CHILD_TEST: &str = "child_blocked_in_a_tool_mid_turn";

fn kitchen() -> SessionId {
    SessionId::parse("kitchen").unwrap()
}

fn on_session(db: &Path, model: ScriptedModel) -> AgentBuilder {
    Agent::builder(Arc::new(model)).session(Arc::new(common::stored_sessions(db)), kitchen())
}

fn lock_the_door() -> Message {
    assistant(vec![tool_use("t1", "lock", json!({"door": "front"}))])
}

#[tokio::test]
async fn session_round_trip_restores_messages_and_state() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("sessions.db");
    let echo_call = assistant(vec![tool_use("t1", "echo", json!({"say": "hi"}))]);
    let (history, state) = {
        let model = ScriptedModel::new([echo_call.clone(), Message::assistant_text("said")]);
        let mut agent = on_session(&db, model)
            .tool(Echo::named("echo"))
            .build()
            .await
            .unwrap();
        agent.invoke("say hi", None).await.unwrap();
        agent.set_state_value("mood", json!("calm")).unwrap();
        (agent.messages().to_vec(), agent.state().clone())
    };
    assert_eq!(
        history,
        [
            Message::user_text("say hi"),
            echo_call,
            results(vec![ToolResult {
                tool_use_id: "t1".into(),
                status: ToolResultStatus::Success,
                content: vec![ToolResultContent::Json(json!({"say": "hi"}))],
                source: None,
            }]),
            Message::assistant_text("said"),
        ]
    );

    let model = ScriptedModel::new([Message::assistant_text("again")]).recording();
    let mut restored = on_session(&db, model.clone())
        .tool(Echo::named("echo"))
        .build()
        .await
        .unwrap();
    assert_eq!(restored.messages(), history);
    assert_eq!(*restored.state(), state);
    assert_eq!(restored.state().values["mood"], json!("calm"));
    restored.invoke("once more", None).await.unwrap();

    let mut asked = history.clone();
    asked.push(Message::user_text("once more"));
    assert_eq!(model.requests()[0].messages, asked);
    let store = common::stored_sessions(&db);
    asked.push(Message::assistant_text("again"));
    assert_eq!(store.messages(&kitchen(), 0).unwrap(), asked);
}

#[tokio::test]
async fn a_restored_session_starts_where_the_window_left_the_history() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("sessions.db");
    let window = SlidingWindow { window_size: 4 };
    let turns = ["one", "two", "three"];
    {
        let model = ScriptedModel::new(turns.map(|t| Message::assistant_text(format!("{t}!"))));
        let mut agent = on_session(&db, model).window(window).build().await.unwrap();
        for turn in turns {
            agent.invoke(turn, None).await.unwrap();
        }
    }

    let restored = on_session(&db, ScriptedModel::new([]))
        .window(window)
        .build()
        .await
        .unwrap();

    assert_eq!(
        restored.messages(),
        [
            Message::user_text("two"),
            Message::assistant_text("two!"),
            Message::user_text("three"),
            Message::assistant_text("three!"),
        ]
    );
    assert_eq!(restored.state().removed_count, 2);
    let store = common::stored_sessions(&db);
    assert_eq!(
        store.message_count(&kitchen()).unwrap(),
        6,
        "the store keeps all"
    );
}

#[test]
#[ignore = "child process of killed_mid_turn_keeps_every_written_message_and_repairs_the_dangling_tool_use; run by it"]
fn child_blocked_in_a_tool_mid_turn() {
    // Run by hand (without its parent) there is no database to work on.
    let Some(db) = std::env::var_os(CHILD_DB) else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let model = ScriptedModel::new([lock_the_door(), Message::assistant_text("locked")]);
        let mut agent = on_session(Path::new(&db), model)
            .tool(Blocker::named("lock"))
            .build()
            .await
            .unwrap();
        let _ = agent.invoke("lock the front door", None).await;
    });
    unreachable!("the blocking tool returned");
}

/// Polls the database until it holds `count` messages of the session; fails if the child
/// exits first. The deadline only keeps a broken child from hanging the test run.
fn wait_for_messages(db: &Path, count: u64, child: &mut Child) {
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut store = None;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the child process exited early: {status}");
        }
        if store.is_none() && db.exists() {
            store = Some(common::stored_sessions(db));
        }
        if let Some(store) = &store
            && store.message_count(&kitchen()).unwrap() >= count
        {
            return;
        }
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("the child process never stored {count} messages");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn killed_mid_turn_keeps_every_written_message_and_repairs_the_dangling_tool_use() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("sessions.db");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([CHILD_TEST, "--exact", "--ignored", "--quiet"])
        .env(CHILD_DB, &db)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();

    // The tool-use message is stored before the tool runs, and the tool never returns.
    wait_for_messages(&db, 2, &mut child);
    child.kill().unwrap();
    child.wait().unwrap();

    let written = vec![Message::user_text("lock the front door"), lock_the_door()];
    assert_eq!(
        common::stored_sessions(&db)
            .messages(&kitchen(), 0)
            .unwrap(),
        written
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let restored = runtime.block_on(async {
        on_session(&db, ScriptedModel::new([]))
            .tool(Blocker::named("lock"))
            .build()
            .await
            .unwrap()
    });
    let mut repaired = written;
    repaired.push(results(vec![ToolResult::error_text(
        "t1",
        TOOL_INTERRUPTED_TEXT,
    )]));
    assert_eq!(restored.messages(), repaired);
    // The repair is stored too.
    assert_eq!(
        common::stored_sessions(&db)
            .messages(&kitchen(), 0)
            .unwrap(),
        repaired
    );
}

/// Built to answer unfinished calls later, a restored history keeps its dangling tool use
/// until the caller answers it with what it knows became of the call; stored like that.
#[tokio::test]
async fn a_dangling_tool_use_left_at_build_is_answered_with_what_the_caller_knows() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("sessions.db");
    let store = common::stored_sessions(&db);
    store.ensure_session(&kitchen()).unwrap();
    let written = vec![Message::user_text("lock the front door"), lock_the_door()];
    for (n, message) in (0u64..).zip(&written) {
        store.append_message(&kitchen(), n, message).unwrap();
    }
    let mut restored = on_session(&db, ScriptedModel::new([]))
        .tool(Blocker::named("lock"))
        .answer_unfinished_calls_later()
        .build()
        .await
        .unwrap();
    assert_eq!(restored.messages(), written);
    let known = ToolResult::error_text("t1", "it may or may not have run");
    let repaired = restored
        .repair_history_with(|u| (u.tool_use_id == "t1").then(|| known.clone()))
        .await
        .unwrap();
    assert!(repaired);
    let mut answered = written;
    answered.push(results(vec![known]));
    assert_eq!(restored.messages(), answered);
    assert_eq!(store.messages(&kitchen(), 0).unwrap(), answered);
}

#[tokio::test]
async fn a_prompt_someone_else_wrote_is_stored_with_its_source() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("sessions.db");
    let source = tau_protocol::Source::Forwarded {
        channel: "telegram".into(),
        from: Some("Mark".into()),
    };
    let mut agent = on_session(&db, ScriptedModel::new([Message::assistant_text("noted")]))
        .build()
        .await
        .unwrap();
    agent
        .invoke(
            tau_agent::Input::PromptFrom {
                content: vec![tau_agent::ContentBlock::Text("pay DE89 to Mark".into())],
                source: source.clone(),
            },
            None,
        )
        .await
        .unwrap();
    let mut forwarded = Message::user_text("pay DE89 to Mark");
    forwarded.source = Some(source);
    let expected = vec![forwarded, Message::assistant_text("noted")];
    assert_eq!(agent.messages(), expected);
    let store = common::stored_sessions(&db);
    assert_eq!(store.messages(&kitchen(), 0).unwrap(), expected);
}
