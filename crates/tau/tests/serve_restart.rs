//! `tau serve` killed with SIGKILL while a question waits, and started again: the stored
//! question survives, runs once with exactly what was approved, and nothing else does.
//! The model is a local OpenAI-compatible server that answers from the request alone, so
//! the restarted hub goes on exactly where the session's stored history stands.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use common::Tau;
use common::model_server::ModelServer;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

fn model(answer: &str) -> ModelServer {
    ModelServer::start(
        "run_command",
        &json!({"command": "echo made >> proof.txt"}),
        answer,
    )
}

/// Starts a hub, asks, kills it with SIGKILL; returns the session and the approval id.
/// The turn of `session` ended paused on its question (its state is saved).
fn paused(tau: &Tau, session: &str) -> Option<()> {
    tau.audit()
        .iter()
        .any(|l| {
            l["type"] == "turn_end" && l["session"] == session && l["stop_reason"] == "interrupt"
        })
        .then_some(())
}

fn ask_and_kill(tau: &Tau, model: &str, config: &std::path::Path) -> (String, String) {
    let serve = tau.serve(model, config);
    let session = serve.new_session();
    let row = serve.ask(&session, "make a file");
    // The row is stored before the question is shown; the turn's paused state is saved
    // when the turn ends. Killed between the two, the question is rightly cancelled at the
    // next start (nobody waits on it), which is not what these tests are about.
    serve.until(|_| paused(tau, &session));
    serve.kill_hard();
    (session, row["id"].as_str().unwrap().to_owned())
}

#[test]
fn a_question_survives_sigkill_and_runs_once_after_the_restart() {
    let tau = Tau::new();
    let server = model("Done after the restart.");
    let model = server.spec();
    let config = tau.serve_config("");
    let (session, id) = ask_and_kill(&tau, &model, &config);

    let serve = tau.serve(&model, &config);
    assert!(
        serve
            .banner
            .iter()
            .any(|l| l == "tau serve: 1 question(s) still wait for an answer"),
        "{:?}",
        serve.banner
    );
    let pending = serve.get("/api/approvals?state=pending").json();
    assert_eq!(pending[0]["id"], json!(id));
    let approved = serve.post(&format!("/api/approvals/{id}"), r#"{"decision":"approve"}"#);
    assert_eq!(approved.status, 200, "{approved:?}");
    let messages = serve.until_answered(&session, "Done after the restart.");
    assert_eq!(messages.len(), 4);
    assert_eq!(
        tau.proof().as_deref(),
        Some("made\n"),
        "ran once, as approved"
    );
    let calls: Vec<Value> = tau
        .audit()
        .into_iter()
        .filter(|e| e["type"] == "tool_call")
        .collect();
    assert_eq!(calls.len(), 1);
    assert_eq!(
        calls[0]["arguments"],
        json!({"command": "echo made >> proof.txt"})
    );
    assert_eq!(
        calls[0]["decided_by"],
        json!({"kind": "person", "channel": "web"})
    );
    assert_eq!(calls[0]["session"], json!(session));
    serve.kill_hard();

    // A third start has nothing to run.
    let serve = tau.serve(&model, &config);
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(tau.proof().as_deref(), Some("made\n"));
    assert_eq!(serve.get("/api/approvals?state=pending").json(), json!([]));
    serve.kill_hard();
}

#[test]
fn arguments_changed_in_the_store_while_the_hub_was_down_are_refused() {
    let tau = Tau::new();
    let server = model("Not done.");
    let model = server.spec();
    let config = tau.serve_config("");
    let (session, id) = ask_and_kill(&tau, &model, &config);
    // Someone with the database rewrites the paused call.
    let db = rusqlite::Connection::open(tau.home().join("state.db")).unwrap();
    let body: String = db
        .query_row(
            "SELECT body FROM agent_state WHERE session_id = ?1",
            [&session],
            |row| row.get(0),
        )
        .unwrap();
    assert!(body.contains("echo made >> proof.txt"), "{body}");
    let tampered = body.replace("echo made >> proof.txt", "echo evil >> proof.txt");
    db.execute(
        "UPDATE agent_state SET body = ?2 WHERE session_id = ?1",
        [&session, &tampered],
    )
    .unwrap();
    drop(db);

    let serve = tau.serve(&model, &config);
    let approved = serve.post(&format!("/api/approvals/{id}"), r#"{"decision":"approve"}"#);
    assert_eq!(
        approved.status, 200,
        "the person approved what they were shown"
    );
    serve.until_answered(&session, "Not done.");
    assert_eq!(tau.proof(), None, "what runs must be what was approved");
    let audit = tau.audit();
    assert!(
        audit.iter().any(|e| e["type"] == "error"
            && e["message"]
                == "stored approval refused: the arguments differ from the approved ones"),
        "{audit:#?}"
    );
    let call = audit.iter().find(|e| e["type"] == "tool_call").unwrap();
    assert_eq!(call["status"], "refused");
    serve.kill_hard();
}

#[test]
fn a_question_that_expired_while_the_hub_was_down_is_refused_and_shown_expired() {
    let tau = Tau::new();
    let server = model("It expired.");
    let model = server.spec();
    let config = tau.serve_config("[approval]\nremote_timeout_seconds = 1\n");
    let (session, id) = ask_and_kill(&tau, &model, &config);
    std::thread::sleep(std::time::Duration::from_millis(1200));

    let serve = tau.serve(&model, &config);
    assert!(
        serve
            .banner
            .iter()
            .any(|l| l == "tau serve: 1 question(s) expired while tau was not running"),
        "{:?}",
        serve.banner
    );
    serve.until_answered(&session, "It expired.");
    let expired = serve.get("/api/approvals?state=expired").json();
    assert_eq!(expired[0]["id"], json!(id));
    assert_eq!(expired[0]["decided_by"], json!({"kind": "timeout"}));
    let late = serve.post(&format!("/api/approvals/{id}"), r#"{"decision":"approve"}"#);
    assert_eq!(late.status, 409);
    assert_eq!(late.json()["error"], "the question was already expired");
    assert_eq!(tau.proof(), None);
    let call = tau
        .audit()
        .into_iter()
        .find(|e| e["type"] == "tool_call")
        .unwrap();
    assert_eq!(
        (&call["approval"], &call["decided_by"]),
        (&json!("timeout"), &json!({"kind": "timeout"}))
    );
    serve.kill_hard();
}

#[test]
fn sigterm_stops_the_hub_and_keeps_the_question() {
    let tau = Tau::new();
    let server = model("Done.");
    let model = server.spec();
    let config = tau.serve_config("");
    let serve = tau.serve(&model, &config);
    let session = serve.new_session();
    let row = serve.ask(&session, "make a file");
    serve.until(|_| paused(&tau, &session));
    let (code, said) = serve.terminate();
    assert_eq!(code, 0);
    assert_eq!(
        said.last().unwrap(),
        "tau serve: stopped; pending questions stay pending"
    );
    let serve = tau.serve(&model, &config);
    assert_eq!(
        serve.get("/api/approvals?state=pending").json()[0]["id"],
        row["id"]
    );
    assert_eq!(tau.proof(), None);
    serve.kill_hard();
}

/// Runs `sql` on the home's `state.db` as another program would, `?1` bound to `id`.
fn edit_state_db(tau: &Tau, sql: &str, id: &str) {
    let db = rusqlite::Connection::open(tau.home().join("state.db")).unwrap();
    assert_eq!(db.execute(sql, [id]).unwrap(), 1, "{sql}");
}

/// `tau audit verify`'s exit code.
fn audit_verifies(tau: &Tau) -> bool {
    tau.run(&["audit", "verify"], "").code == 0
}

#[test]
fn an_approval_written_into_state_db_while_the_hub_was_down_is_refused_never_run() {
    let tau = Tau::new();
    let server = model("Not done.");
    let model = server.spec();
    let config = tau.serve_config("");
    let (session, id) = ask_and_kill(&tau, &model, &config);
    // A local program approves the question as if the person had; nobody answered it.
    edit_state_db(
        &tau,
        r#"UPDATE approvals SET state = 'approved',
           decided_by = '{"kind":"person","channel":"web"}',
           decided_at = '2026-01-01T00:00:00Z' WHERE id = ?1"#,
        &id,
    );
    assert!(audit_verifies(&tau), "the log itself was not touched");

    let serve = tau.serve(&model, &config);
    let said = format!(
        "tau serve: question {id} (run_command) refused, never run: it is approved in state.db but the audit log records no answer to it (edited while tau was not running)"
    );
    assert!(serve.banner.contains(&said), "{:?}", serve.banner);
    serve.until(|_| {
        tau.audit()
            .iter()
            .any(|l| l["type"] == "tool_call" && l["session"] == session)
            .then_some(())
    });
    assert_eq!(tau.proof(), None, "never run");
    let audit = tau.audit();
    let call = audit.iter().find(|e| e["type"] == "tool_call").unwrap();
    assert_eq!(
        (&call["status"], &call["decided_by"]),
        (&json!("refused"), &json!({"kind": "approver_failed"}))
    );
    assert!(
        audit.iter().any(|e| e["type"] == "error"
            && e["session"] == session
            && e["message"]
                == "stored approval refused at start: it is approved in state.db but the audit log records no answer to it (edited while tau was not running)"),
        "{audit:#?}"
    );
    assert!(
        audit.iter().any(|e| e["type"] == "approval"
            && e["approval_id"] == id
            && e["approver"] == "start_check"
            && e["decision"] == "rejected"),
        "{audit:#?}"
    );
    // TauBar shows it closed, by tau, and an answer now changes nothing.
    let closed = serve.get("/api/approvals?state=cancelled").json();
    assert_eq!(
        (&closed[0]["id"], &closed[0]["decided_by"]),
        (&json!(id), &json!({"kind": "approver_failed"}))
    );
    let late = serve.post(&format!("/api/approvals/{id}"), r#"{"decision":"approve"}"#);
    assert_eq!(late.status, 409, "{late:?}");
    assert_eq!(tau.proof(), None);
    serve.kill_hard();
    assert!(audit_verifies(&tau));
}

#[test]
fn an_arguments_column_edited_while_the_hub_was_down_is_refused_never_shown() {
    let tau = Tau::new();
    let server = model("Not done.");
    let model = server.spec();
    let config = tau.serve_config("");
    let (session, id) = ask_and_kill(&tau, &model, &config);
    // The card would show this harmless command while the hash of the stored call is
    // what the gate checks.
    edit_state_db(
        &tau,
        r#"UPDATE approvals SET arguments = '{"command":"echo harmless"}' WHERE id = ?1"#,
        &id,
    );

    let serve = tau.serve(&model, &config);
    let said = format!(
        "tau serve: question {id} (run_command) refused, never run: its arguments in state.db do not hash to its stored hash (edited while tau was not running)"
    );
    assert!(serve.banner.contains(&said), "{:?}", serve.banner);
    assert!(
        !serve
            .banner
            .iter()
            .any(|l| l.contains("still wait for an answer")),
        "{:?}",
        serve.banner
    );
    assert_eq!(serve.get("/api/approvals?state=pending").json(), json!([]));
    serve.until(|_| {
        tau.audit()
            .iter()
            .any(|l| l["type"] == "tool_call" && l["session"] == session)
            .then_some(())
    });
    assert_eq!(tau.proof(), None, "never run");
    serve.kill_hard();
}
