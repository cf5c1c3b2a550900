//! One owner per conversation across restarts: a web conversation whose question waits
//! belongs to `tau serve` until the question ends. After a restart of the hub (which then
//! has the session closed, so no lock keeps others off it) `tau chat`, `tau sessions
//! delete` and `tau routines`-like openers refuse it with why and what to do and touch
//! nothing; the yes on TauBar then runs the call exactly once. A yes to a question whose
//! paused turn was given up behind the hub's back (by a tau from before this rule) is not
//! used: 409, the question closed with its lines, and a notice in the conversation.

use crate::common;

use common::Tau;
use common::serve::{Events, Serve};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tau_agent::SessionRepository;
use tau_core::StoredSessions;
use tau_protocol::SessionId;
use tau_state::StateDb;

/// What every refusal of a conversation whose TauBar question waits ends with.
const WHAT_TO_DO: &str = ", and only tau serve runs the call a yes approves. Answer it on TauBar or let it expire, then open the session again\n";

/// A web conversation whose question waits, under a hub started again since it asked:
/// the hub, the session and the question's row.
fn asked_before_a_restart(tau: &Tau, model: &str) -> (Serve, String, Value) {
    let config = tau.serve_config("");
    let first = tau.serve(model, &config);
    let session = first.new_session();
    let row = first.ask(&session, "make a file");
    let (code, _) = first.terminate();
    assert_eq!(code, 0);
    let serve = tau.serve(model, &config);
    assert!(
        serve
            .banner
            .iter()
            .any(|l| l == "tau serve: 1 question still waits for an answer"),
        "{:?}",
        serve.banner
    );
    (serve, session, row)
}

fn refused(run: &common::Run, session: &str, id: &str) {
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    let start = format!(
        "tau: session {session} is held by tau serve: its question {id} (run_command) waits for an answer on TauBar until "
    );
    assert!(
        run.stderr.starts_with(&start) && run.stderr.ends_with(WHAT_TO_DO),
        "{}",
        run.stderr
    );
}

#[test]
fn a_restarted_hub_keeps_its_waiting_conversation_and_the_yes_runs_once() {
    let tau = Tau::new();
    let model = tau.make_proof();
    let (serve, session, row) = asked_before_a_restart(&tau, &model);
    let id = row["id"].as_str().unwrap().to_owned();
    let audit_before = tau.audit().len();
    let messages_before = serve
        .get(&format!("/api/sessions/{session}/messages"))
        .json();

    // Before this rule, `tau chat` opened it, refused the paused turn and answered.
    let chat = tau.run(
        &["--model", &model, "chat", "--session", &session],
        "hello\n",
    );
    refused(&chat, &session, &id);
    let delete = tau.run(&["sessions", "delete", &session], "");
    refused(&delete, &session, &id);
    // Nothing was touched: no line, no message, the question waits as it did.
    assert_eq!(tau.audit().len(), audit_before);
    assert_eq!(
        serve
            .get(&format!("/api/sessions/{session}/messages"))
            .json(),
        messages_before
    );
    let pending = serve.get("/api/approvals?state=pending").json();
    assert_eq!(pending[0]["id"], json!(id), "{pending}");

    let approved = serve.approve(&id);
    assert_eq!(approved.status, 200, "{approved:?}");
    let messages = serve.until_answered(&session, "Done.");
    assert_eq!(tau.proof().as_deref(), Some("made\n"), "{messages:#?}");
    let calls: Vec<Value> = tau
        .audit()
        .into_iter()
        .filter(|l| l["type"] == "tool_call" && l["tool"] == "run_command")
        .collect();
    assert_eq!(calls.len(), 1, "{calls:#?}");
    assert_eq!(
        (&calls[0]["status"], &calls[0]["approval_id"]),
        (&json!("success"), &json!(id))
    );

    // Once the turn went on, the conversation is anybody's again.
    serve.kill_hard();
    let chat = tau.run(&["--model", &model, "chat", "--session", &session], "");
    assert_eq!(chat.code, 0, "{}", chat.stderr);
}

#[test]
fn a_conversation_is_held_while_its_turn_waits_on_an_answered_question() {
    let tau = Tau::new();
    let model = tau.make_proof();
    let config = tau.serve_config("");
    let serve = tau.serve(&model, &config);
    let session = serve.new_session();
    let row = serve.ask(&session, "make a file");
    let id = row["id"].as_str().unwrap().to_owned();
    serve.kill_hard();
    // Answered as the hub records it, and the hub gone before the turn went on.
    let store = StateDb::open(&tau.home().join("state.db")).unwrap();
    let approval = tau_protocol::ApprovalId::parse(&id).unwrap();
    store
        .approvals()
        .decide_approval(
            &approval,
            tau_state::ApprovalState::Rejected,
            &tau_protocol::DecidedBy::person("web"),
            jiff::Timestamp::now(),
        )
        .unwrap();
    let chat = tau.run(
        &["--model", &model, "chat", "--session", &session],
        "hello\n",
    );
    assert_eq!(chat.code, 2, "{}", chat.stderr);
    assert_eq!(
        chat.stderr,
        format!(
            "tau: session {session} is held by tau serve: its turn is paused on question {id} (run_command), rejected, and goes on only in tau serve. Start tau serve (it goes on at once), then open the session again\n"
        )
    );
    // The hub goes on with it at its start, and then lets it go.
    let serve = tau.serve(&model, &config);
    serve.until_answered(&session, "Done.");
    serve.kill_hard();
    assert_eq!(tau.proof(), None, "rejected: never run");
    let chat = tau.run(&["--model", &model, "chat", "--session", &session], "");
    assert_eq!(chat.code, 0, "{}", chat.stderr);
}

#[test]
fn a_yes_whose_turn_was_given_up_behind_the_hub_s_back_is_not_used() {
    let tau = Tau::new();
    let model = tau.make_proof();
    let (serve, session, row) = asked_before_a_restart(&tau, &model);
    let id = row["id"].as_str().unwrap().to_owned();
    // A tau from before this rule opened the conversation and gave its paused turn up.
    let store = StoredSessions::new(
        StateDb::open(&tau.home().join("state.db"))
            .unwrap()
            .sessions(),
    );
    let sid = SessionId::parse(&session).unwrap();
    let mut state = store.load_state(&sid).unwrap().unwrap();
    state.interrupt_state.deactivate();
    store.save_state(&sid, &state).unwrap();

    let mut events = Events::open(&serve, &session);
    let answered = serve.approve(&id);
    assert_eq!(answered.status, 409, "{answered:?}");
    let body = answered.json();
    assert_eq!(
        (&body["refused"], &body["approval"]["state"], &body["error"]),
        (
            &json!("not_awaited"),
            &json!("cancelled"),
            &json!(
                "nothing waits for this answer any more (no paused turn is left to run the call), so it was not used and nothing ran; the question is closed"
            )
        )
    );
    // The page hears the card close, then the notice.
    let (_, closed) = events.next();
    assert_eq!(
        (&closed["type"], &closed["decided_by"]),
        (&json!("approval_decided"), &json!({"kind": "cancelled"}))
    );
    let (_, notice) = events.next();
    insta::assert_snapshot!(
        "answer_not_used_notice",
        format!(
            "{}: {}",
            notice["kind"].as_str().unwrap(),
            notice["text"].as_str().unwrap()
        )
    );
    let lines: Vec<Value> = tau
        .audit_events()
        .into_iter()
        .filter(|l| l["type"] == "answer_refused" || l["type"] == "approval")
        .collect();
    insta::assert_json_snapshot!("answer_not_used_lines", lines);
    serve.kill_hard();
    assert_eq!(tau.proof(), None, "nothing ran");
    let verify = tau.run(&["audit", "verify"], "");
    assert_eq!(verify.code, 0, "{}{}", verify.stdout, verify.stderr);
}
