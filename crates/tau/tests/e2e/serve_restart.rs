//! `tau serve` killed with SIGKILL while a question waits, and started again: the stored
//! question survives, runs once with exactly what was approved, and nothing else does.
//! A command's question that showed a script the model wrote keeps the script's SHA-256
//! with it: after the restart the command runs only while the script still has it, and
//! only in the sandbox the question named.
//! The model is a local OpenAI-compatible server that answers from the request alone, so
//! the restarted hub goes on exactly where the session's stored history stands.

use crate::common;

use common::model_server::ModelServer;
use common::{Tau, answer, tool_call};
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
    // The row is stored, then the turn's paused state is saved, and only then is the
    // question announced; the `turn_end` line says the turn paused. Killed before that,
    // the question is rightly cancelled at the next start (nobody waits on it), which is
    // not what these tests are about.
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
            .any(|l| l == "tau serve: 1 question still waits for an answer"),
        "{:?}",
        serve.banner
    );
    let pending = serve.get("/api/approvals?state=pending").json();
    assert_eq!(pending[0]["id"], json!(id));
    let approved = serve.approve(&id);
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
    let approved = serve.approve(&id);
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
            .any(|l| l == "tau serve: 1 question expired while tau was not running"),
        "{:?}",
        serve.banner
    );
    serve.until_answered(&session, "It expired.");
    let expired = serve.get("/api/approvals?state=expired").json();
    assert_eq!(expired[0]["id"], json!(id));
    assert_eq!(expired[0]["decided_by"], json!({"kind": "timeout"}));
    let late = serve.approve(&id);
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

const SCRIPT: &str = "echo original >> ran.txt\n";
const SCRIPT_SHA256: &str = "a88895d554802d1b118f11072946c6b61bf8dda0b34cb14dfe55094be31cd2cf";
const EDITED: &str = "echo edited >> ran.txt\n";
const EDITED_SHA256: &str = "18970fb32fc56edf0befa219dfbb1962adfdcb388696b0a292ca97be5b7e4e64";

/// The model writes `setup.sh` with `write_file` and, in the same turn, asks to run it.
fn script_model(tau: &Tau) -> String {
    tau.replay(&json!([
        tool_call(
            "t0",
            "write_file",
            &json!({"path": "setup.sh", "content": SCRIPT})
        ),
        tool_call("t1", "run_command", &json!({"command": "sh setup.sh"})),
        answer("Done."),
    ]))
}

/// Asks about `sh setup.sh` and kills the hub once the turn paused on the question; the
/// session and the stored question.
fn script_asked_and_killed(tau: &Tau, model: &str, config: &std::path::Path) -> (String, Value) {
    let serve = tau.serve(model, config);
    let session = serve.new_session();
    let row = serve.ask(&session, "set it up");
    serve.until(|_| paused(tau, &session));
    serve.kill_hard();
    (session, row)
}

/// A restarted hub, the stored question approved over the API, the turn's end awaited:
/// the stored messages and the audit line of the `run_command` call.
fn approved_after_restart(
    tau: &Tau,
    model: &str,
    config: &std::path::Path,
    session: &str,
    row: &Value,
) -> (Vec<Value>, Value) {
    let serve = tau.serve(model, config);
    let id = row["id"].as_str().unwrap();
    let approved = serve.approve(id);
    assert_eq!(approved.status, 200, "{approved:?}");
    let messages = serve.until_answered(session, "Done.");
    serve.kill_hard();
    let call = tau
        .audit()
        .into_iter()
        .find(|e| e["type"] == "tool_call" && e["tool"] == "run_command")
        .unwrap();
    (messages, call)
}

fn ran(tau: &Tau) -> Option<String> {
    std::fs::read_to_string(tau.workspace().join("ran.txt")).ok()
}

/// The audit line's summary is `text`, cut short with an ellipsis where it is long.
fn summarizes(call: &Value, text: &str) -> bool {
    let summary = call["result_summary"].as_str().unwrap();
    summary.len() > 100 && text.starts_with(summary.trim_end_matches('…'))
}

/// The text of the tool result the model was given for call `t1`.
fn result_of_t1(messages: &[Value]) -> String {
    let results: Vec<&Value> = messages
        .iter()
        .flat_map(|m| m["content"].as_array().unwrap())
        .filter_map(|block| block.get("toolResult"))
        .filter(|result| result["toolUseId"] == "t1")
        .collect();
    assert_eq!(results.len(), 1, "{messages:#?}");
    let mut texts = Vec::new();
    strings_in(&results[0]["content"], &mut texts);
    texts.join("\n")
}

fn strings_in(value: &Value, into: &mut Vec<String>) {
    match value {
        Value::String(text) => into.push(text.clone()),
        Value::Array(items) => items.iter().for_each(|v| strings_in(v, into)),
        Value::Object(fields) => fields.values().for_each(|v| strings_in(v, into)),
        _ => {}
    }
}

#[test]
fn a_script_shown_on_a_stored_question_runs_after_a_restart_when_unedited() {
    let tau = Tau::new();
    let model = script_model(&tau);
    let config = tau.serve_config("");
    let (session, row) = script_asked_and_killed(&tau, &model, &config);
    assert_eq!(
        row["card"]["shown_files"],
        json!([{"path": "setup.sh", "sha256": SCRIPT_SHA256}]),
        "the hash is stored with the question: {row:#}"
    );
    assert_eq!(ran(&tau), None);

    let (_, call) = approved_after_restart(&tau, &model, &config, &session, &row);
    assert_eq!(ran(&tau).as_deref(), Some("original\n"), "{call:#}");
    assert_eq!(call["status"], "success", "{call:#}");
    assert_eq!(call["approval"], "approved");
}

#[test]
fn a_script_edited_while_the_hub_was_down_does_not_run_after_the_yes() {
    let tau = Tau::new();
    let model = script_model(&tau);
    let config = tau.serve_config("");
    let (session, row) = script_asked_and_killed(&tau, &model, &config);
    std::fs::write(tau.workspace().join("setup.sh"), EDITED).unwrap();

    let (messages, call) = approved_after_restart(&tau, &model, &config, &session, &row);
    assert_eq!(ran(&tau), None, "the edited script must not run");
    let text = format!(
        "the command did not run: setup.sh changed after the user was shown it (SHA-256 \
         {SCRIPT_SHA256} then, {EDITED_SHA256} now)"
    );
    assert_eq!(call["status"], "error", "{call:#}");
    assert!(summarizes(&call, &format!("Error: {text}")), "{call:#}");
    assert!(result_of_t1(&messages).contains(&text), "{messages:#?}");
}

#[test]
fn a_stored_command_question_runs_only_in_the_sandbox_it_named() {
    let tau = Tau::new();
    let model = script_model(&tau);
    let config = tau.serve_config("");
    let (session, row) = script_asked_and_killed(&tau, &model, &config);
    assert_eq!(
        row["card"]["notes"][0],
        json!({"level": "info", "label": "sandbox", "text": "writes: workspace only · network: none"})
    );
    // The sandbox is turned off while the question waits.
    let config = tau.serve_config("[tools.command]\nsandbox = \"off\"\n");

    let (messages, call) = approved_after_restart(&tau, &model, &config, &session, &row);
    assert_eq!(
        ran(&tau),
        None,
        "it would run without the sandbox it was approved in"
    );
    let text = "the command did not run: its question said \"sandbox: writes: workspace only · \
                network: none\", but commands now run with \"runs without a sandbox\" (tau's \
                configuration changed since). Ask the user again if it is still needed.";
    assert_eq!(call["status"], "refused", "{call:#}");
    assert!(summarizes(&call, text), "{call:#}");
    assert!(result_of_t1(&messages).contains(text), "{messages:#?}");
    assert!(
        tau.audit()
            .iter()
            .any(|e| e["type"] == "error"
                && e["message"] == format!("stored approval refused: {text}")),
        "{:#?}",
        tau.audit()
    );
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
    let late = serve.approve(&id);
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
