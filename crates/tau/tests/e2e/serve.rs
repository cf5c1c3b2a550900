//! `tau serve` end to end: the real binary, a replay model, TauBar's API over HTTP.

use crate::common;

use common::serve::Events;
use common::{Tau, answer, tool_call};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

const REFUSAL: &str =
    "The user did not approve this action: run_command. Do not perform it; tell the user briefly.";

#[test]
fn an_approval_through_the_api_runs_the_call_once() {
    let tau = Tau::new();
    let serve = tau.serve(&tau.make_proof(), &tau.serve_config(""));
    let session = serve.new_session();
    let mut events = Events::open(&serve, &session);
    let row = serve.ask(&session, "make a file");
    let asked = events.until_turn_ends("interrupt");
    assert_eq!(
        asked[0],
        json!({"event": "prompt", "data": {"text": "make a file"}})
    );
    assert!(asked.iter().any(
        |e| e["data"]["type"] == "approval_requested" && e["data"]["approval_id"] == row["id"]
    ));
    let id = row["id"].as_str().unwrap();
    assert_eq!(
        (
            &row["tool"],
            &row["tier"],
            &row["arguments"],
            &row["state"],
            &row["channel"]
        ),
        (
            &json!("run_command"),
            &json!(2),
            &json!(r#"{"command":"echo made >> proof.txt"}"#),
            &json!("pending"),
            &json!("web")
        )
    );
    assert_eq!(tau.proof(), None, "nothing runs before the answer");

    let approved = serve.approve(id);
    assert_eq!(approved.status, 200, "{approved:?}");
    assert_eq!(approved.json()["state"], "approved");
    assert_eq!(
        approved.json()["decided_by"],
        json!({"kind": "person", "channel": "web"})
    );
    let went_on = events.until_turn_ends("end_turn");
    let kinds: Vec<&str> = went_on
        .iter()
        .map(|e| e["data"]["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds[..2], ["approval_decided", "tool_call_finished"]);
    assert_eq!(went_on[1]["data"]["status"], "success");

    // Answering again, either way, changes nothing and says how it was decided.
    for decision in ["approve", "reject"] {
        let again = serve.answer(id, &json!({ "decision": decision }));
        assert_eq!(again.status, 409, "{again:?}");
        assert_eq!(again.json()["error"], "the question was already approved");
        assert_eq!(again.json()["approval"]["state"], "approved");
        assert!(again.json()["approval"]["consumed_at"].is_string());
    }
    let messages = serve.until_answered(&session, "Done.");
    assert_eq!(messages.len(), 4);
    assert_eq!(tau.proof().as_deref(), Some("made\n"), "ran exactly once");
    assert_eq!(
        serve.get("/api/approvals?state=pending").json(),
        json!([]),
        "nothing waits any more"
    );
    let (code, said) = serve.terminate();
    assert_eq!(code, 0);
    assert_eq!(
        said.last().unwrap(),
        "tau serve: stopped; pending questions stay pending"
    );
    let audit: Vec<Value> = tau
        .audit()
        .into_iter()
        .filter(|e| e["type"] == "approval" || e["type"] == "tool_call")
        .collect();
    assert_eq!(audit.len(), 2, "{audit:#?}");
    for line in &audit {
        assert_eq!(line["session"], json!(session), "lines carry their session");
        assert_eq!(
            line["decided_by"],
            json!({"kind": "person", "channel": "web"})
        );
    }
}

#[test]
fn a_rejection_through_the_api_runs_nothing_and_the_model_is_told() {
    let tau = Tau::new();
    let model = tau.replay(&json!([
        tool_call(
            "t1",
            "run_command",
            &json!({"command": "echo made >> proof.txt"})
        ),
        answer("I did not run it."),
    ]));
    let serve = tau.serve(&model, &tau.serve_config(""));
    let session = serve.new_session();
    let row = serve.ask(&session, "make a file");
    let id = row["id"].as_str().unwrap();
    let rejected = serve.post(&format!("/api/approvals/{id}"), r#"{"decision":"reject"}"#);
    assert_eq!(rejected.status, 200, "{rejected:?}");
    assert_eq!(rejected.json()["state"], "rejected");
    let messages = serve.until_answered(&session, "I did not run it.");
    assert_eq!(
        messages[2]["content"][0]["toolResult"]["content"][0]["text"],
        REFUSAL
    );
    let late = serve.approve(id);
    assert_eq!(late.status, 409);
    assert_eq!(late.json()["error"], "the question was already rejected");
    assert_eq!(tau.proof(), None);
    serve.kill_hard();
}

#[test]
fn a_new_message_supersedes_a_pending_question() {
    let tau = Tau::new();
    let model = tau.replay(&json!([
        tool_call(
            "t1",
            "run_command",
            &json!({"command": "echo made >> proof.txt"})
        ),
        answer("It is ten."),
    ]));
    let serve = tau.serve(&model, &tau.serve_config(""));
    let session = serve.new_session();
    let mut events = Events::open(&serve, &session);
    let row = serve.ask(&session, "make a file");
    events.until_turn_ends("interrupt");
    let reply = serve.post(
        &format!("/api/sessions/{session}/messages"),
        r#"{"text":"what time is it?"}"#,
    );
    assert_eq!(reply.status, 202);
    let closed = events.until_turn_ends("superseded");
    assert_eq!(closed[1]["data"]["type"], "approval_decided");
    assert_eq!(
        closed[1]["data"]["decided_by"],
        json!({"kind": "superseded"})
    );
    serve.until_answered(&session, "It is ten.");
    let id = row["id"].as_str().unwrap();
    let late = serve.approve(id);
    assert_eq!(late.status, 409);
    assert_eq!(
        late.json()["approval"]["decided_by"],
        json!({"kind": "superseded"})
    );
    assert_eq!(
        serve.get("/api/approvals?state=superseded").json()[0]["id"],
        json!(id)
    );
    assert_eq!(tau.proof(), None);
    serve.kill_hard();
}

#[test]
fn the_hub_and_tau_chat_never_hold_one_session_at_once() {
    let tau = Tau::new();
    let serve = tau.serve(&tau.make_proof(), &tau.serve_config(""));
    let session = serve.new_session();
    serve.ask(&session, "make a file");
    let chat = tau.run(
        &["--model", &tau.make_proof(), "chat", "--session", &session],
        "hi\n",
    );
    assert_eq!(chat.code, 2, "{}", chat.stderr);
    assert!(
        chat.stderr.contains("is already open in another tau"),
        "{}",
        chat.stderr
    );
    serve.kill_hard();
}

#[test]
fn a_session_open_in_tau_chat_is_refused_by_the_hub() {
    use std::io::BufRead;
    let tau = Tau::new();
    let model = tau.make_proof();
    let serve = tau.serve(&model, &tau.serve_config(""));
    let session = serve.new_session();
    // tau chat opens the hub's conversation first and keeps it open.
    let mut chat = tau
        .command(&["--model", &model, "chat", "--session", &session])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufReader::new(chat.stdout.as_mut().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.contains(&session), "{first}");
    let reply = serve.post(
        &format!("/api/sessions/{session}/messages"),
        r#"{"text":"make a file"}"#,
    );
    assert_eq!(reply.status, 409, "{reply:?}");
    let error = reply.json()["error"].as_str().unwrap().to_owned();
    assert!(error.contains("is already open in another tau"), "{error}");
    chat.kill().unwrap();
    chat.wait().unwrap();
    // Once the chat is gone, the hub takes it.
    let reply = serve.post(
        &format!("/api/sessions/{session}/messages"),
        r#"{"text":"make a file"}"#,
    );
    assert_eq!(reply.status, 202, "{reply:?}");
    serve.kill_hard();
}

#[test]
fn print_token_prints_the_token_and_exits() {
    let tau = Tau::new();
    let first = tau.run(&["serve", "--print-token"], "");
    assert_eq!(first.code, 0, "{}", first.stderr);
    let token = first.stdout.trim();
    assert_eq!(token.len(), 64);
    assert_eq!(
        tau.run(&["serve", "--print-token"], "").stdout.trim(),
        token
    );
    assert_eq!(common::mode(&tau.home().join("web-token")), 0o600);
}

#[test]
fn an_unanswered_question_expires_and_every_view_says_so() {
    let tau = Tau::new();
    let model = tau.replay(&json!([
        tool_call(
            "t1",
            "run_command",
            &json!({"command": "echo made >> proof.txt"})
        ),
        answer("Nobody answered, so I did not run it."),
    ]));
    let serve = tau.serve(
        &model,
        &tau.serve_config("[approval]\nremote_timeout_seconds = 1\n"),
    );
    let session = serve.new_session();
    let mut events = Events::open(&serve, &session);
    let row = serve.ask(&session, "make a file");
    let went_on = events.until_turn_ends("end_turn");
    let decided = went_on
        .iter()
        .find(|e| e["data"]["type"] == "approval_decided")
        .unwrap();
    assert_eq!(
        (&decided["data"]["decision"], &decided["data"]["decided_by"]),
        (&json!("timeout"), &json!({"kind": "timeout"}))
    );
    let finished = went_on
        .iter()
        .find(|e| e["data"]["type"] == "tool_call_finished")
        .unwrap();
    assert_eq!(finished["data"]["approval"], "timeout");
    serve.until_answered(&session, "Nobody answered, so I did not run it.");
    let expired = serve.get("/api/approvals?state=expired").json();
    assert_eq!(expired[0]["id"], row["id"]);
    let id = row["id"].as_str().unwrap();
    let late = serve.approve(id);
    assert_eq!(late.status, 409);
    assert_eq!(late.json()["error"], "the question was already expired");
    assert_eq!(tau.proof(), None);
    serve.kill_hard();
}
