//! `tau serve` killed with SIGKILL at the steps of a question before its call is let
//! through, then started again: nothing runs without a yes, nothing a person saw is
//! cancelled behind their back, and the audit log verifies. (The steps after the call was
//! let through are `effect_uncertain.rs`'s.)
//!
//! The binary is stopped dead at the exact step by a failpoint that only test builds have
//! (`TAU_FAILPOINT`), then killed.

use crate::common;

use common::Tau;
use common::model_server::ModelServer;
use common::serve::{Serve, request};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tau_state::{ApprovalState, StateDb};

fn model() -> ModelServer {
    ModelServer::start(
        "run_command",
        &json!({"command": "echo made >> proof.txt"}),
        "Done.",
    )
}

/// Every question row, shown or not, straight from `state.db`.
/// `tau serve` stopped dead at `step` of a web turn that asks to make a file.
fn stopped_in_a_turn(tau: &Tau, model: &str, config: &std::path::Path, step: &str) -> Serve {
    let serve = tau.serve_at_failpoint(model, config, step);
    let session = serve.new_session();
    let sent = serve.post(
        &format!("/api/sessions/{session}/messages"),
        r#"{"text": "make a file"}"#,
    );
    assert_eq!(sent.status, 202, "{sent:?}");
    serve.until(|_| tau.at_failpoint(step));
    serve
}

fn rows(tau: &Tau) -> Vec<tau_state::ApprovalRow> {
    StateDb::open(&tau.home().join("state.db"))
        .unwrap()
        .approvals()
        .all_approvals(None)
        .unwrap()
}

/// Killed after the question was stored and before the turn's paused state was saved: no
/// channel ever showed it and nobody could answer it; the next start cancels it.
#[test]
fn a_question_stored_before_its_turn_was_saved_is_never_shown_and_cancelled_at_start() {
    let tau = Tau::new();
    let server = model();
    let model = server.spec();
    let config = tau.serve_config("");
    let serve = stopped_in_a_turn(&tau, &model, &config, "asked");

    // The row is there, and shown to nobody: not on the page, not to `tau approvals`.
    let stored = rows(&tau);
    assert_eq!(stored.len(), 1, "{stored:#?}");
    let id = stored[0].id.to_string();
    assert_eq!(serve.get("/api/approvals?state=pending").json(), json!([]));
    assert_eq!(
        serve.get("/api/approvals?state=pending&channel=all").json(),
        json!([])
    );
    assert_eq!(
        tau.run(&["approvals"], "").stdout,
        "nothing waits for you\n"
    );
    // An answer to it finds nothing to answer, so nothing is approved.
    let forged = serve.approve(&id);
    assert_eq!(forged.status, 404, "{forged:?}");
    assert_eq!(rows(&tau)[0].state, ApprovalState::Pending);
    serve.kill_hard();
    assert!(
        tau.audit()
            .iter()
            .all(|l| l["type"] != "approval_requested"),
        "never announced"
    );

    let serve = tau.serve(&model, &config);
    assert!(
        serve
            .banner
            .iter()
            .any(|l| l.contains("1 question cancelled")),
        "{:?}",
        serve.banner
    );
    let row = rows(&tau)
        .into_iter()
        .find(|r| r.id.to_string() == id)
        .unwrap();
    assert_eq!(row.state, ApprovalState::Cancelled);
    assert_eq!(serve.get("/api/approvals?state=pending").json(), json!([]));
    serve.kill_hard();
    assert_eq!(tau.proof(), None, "nothing ran");
    let verify = tau.run(&["audit", "verify"], "");
    assert_eq!(verify.code, 0, "{}{}", verify.stdout, verify.stderr);
}

/// Killed after the turn's paused state was saved and before its question was shown: the
/// next start shows the question a saved turn waits on (it was never on any channel
/// before), a person answers it, and the call runs once.
#[test]
fn a_question_whose_turn_was_saved_is_shown_at_the_next_start_and_runs_once() {
    let tau = Tau::new();
    let server = model();
    let model = server.spec();
    let config = tau.serve_config("");
    let serve = stopped_in_a_turn(&tau, &model, &config, "saved");
    // Stored, its turn saved, and still shown to nobody.
    assert_eq!(rows(&tau).len(), 1);
    assert_eq!(serve.get("/api/approvals?state=pending").json(), json!([]));
    serve.kill_hard();

    let serve = tau.serve(&model, &config);
    let pending = serve.until(|serve| {
        let pending = serve.get("/api/approvals?state=pending").json();
        (!pending.as_array().unwrap().is_empty()).then_some(pending)
    });
    let id = pending[0]["id"].as_str().unwrap().to_owned();
    assert_eq!(id, rows(&tau)[0].id.to_string(), "the same question");
    let approved = serve.approve(&id);
    assert_eq!(approved.status, 200, "{approved:?}");
    serve.until(|_| tau.proof().filter(|p| p == "made\n"));
    std::thread::sleep(std::time::Duration::from_millis(300));
    serve.kill_hard();
    assert_eq!(tau.proof().as_deref(), Some("made\n"), "ran once");
    let verify = tau.run(&["audit", "verify"], "");
    assert_eq!(verify.code, 0, "{}{}", verify.stdout, verify.stderr);
}

/// Killed after a person's yes was stored and before its `approval` line was written:
/// the start-up cross-check finds a yes the audit log never heard of and refuses it; the
/// call never runs.
#[test]
fn a_yes_stored_without_its_audit_line_is_refused_at_start_and_never_runs() {
    let tau = Tau::new();
    let server = model();
    let model = server.spec();
    let config = tau.serve_config("");
    let serve = tau.serve_at_failpoint(&model, &config, "answered");
    let session = serve.new_session();
    let row = serve.ask(&session, "make a file");
    let id = row["id"].as_str().unwrap().to_owned();
    // The answer's request never returns: the hub stops dead inside it.
    let (addr, host, token) = (serve.addr, serve.host(), serve.token.clone());
    let path = format!("/api/approvals/{id}");
    let yes = json!({"decision": "approve", "card_sha256": row["card_sha256"]}).to_string();
    std::thread::spawn(move || {
        let bearer = format!("Bearer {token}");
        request(
            addr,
            "POST",
            &path,
            &[("Host", host.as_str()), ("Authorization", bearer.as_str())],
            Some(&yes),
        )
    });
    serve.until(|_| tau.at_failpoint("answered"));
    serve.kill_hard();
    let approved = rows(&tau);
    assert_eq!(
        approved[0].state,
        ApprovalState::Approved,
        "the yes was stored"
    );
    assert!(
        tau.audit().iter().all(|l| l["type"] != "approval"),
        "its line was not"
    );

    let serve = tau.serve(&model, &config);
    assert!(
        serve.banner.iter().any(|l| l.starts_with(&format!(
            "tau serve: question {id} (run_command) refused, never run: "
        ))),
        "{:?}",
        serve.banner
    );
    let lines: Vec<Value> = serve.until(|_| {
        let lines: Vec<Value> = tau
            .audit()
            .into_iter()
            .filter(|l| l["type"] == "approval" && l["approval_id"] == json!(id))
            .collect();
        (!lines.is_empty()).then_some(lines)
    });
    assert_eq!(
        (
            &lines[0]["decision"],
            &lines[0]["decided_by"],
            &lines[0]["approver"]
        ),
        (
            &json!("rejected"),
            &json!({"kind": "approver_failed"}),
            &json!("start_check")
        )
    );
    serve.kill_hard();
    assert_eq!(tau.proof(), None, "the unrecorded yes ran nothing");
    let verify = tau.run(&["audit", "verify"], "");
    assert_eq!(verify.code, 0, "{}{}", verify.stdout, verify.stderr);
}
