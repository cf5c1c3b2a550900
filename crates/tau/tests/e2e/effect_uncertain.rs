//! An approved call that `tau serve` let through, killed with SIGKILL before the call's
//! result was stored: the next start never runs it again. It closes the call as
//! `effect_uncertain`, says so when it starts, the model reads that it may or may not have
//! run, and the audit log has one line for it and still verifies. Killed later (the result
//! recorded but not in the turn; the audit line written but not anchored), the call is
//! never run again either, and the log verifies.
//!
//! The binary is stopped dead at the exact step by a failpoint that only test builds have
//! (`TAU_FAILPOINT`), then killed with SIGKILL.

use crate::common;

use common::Tau;
use common::model_server::ModelServer;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// What the model reads instead of the call's result; byte-exact (pinned in tau-core).
const UNCERTAIN: &str = "tau stopped while run_command was running and its result was lost: it may or may not have run. It was not run again. Tell the user, and do not assume either outcome.";

/// Asks, approves, and lets `tau serve` stop dead at `failpoint`; then SIGKILL, a second
/// start, and everything that must hold after it. `proof` is what the command wrote by
/// then: nothing when stopped before it started, one line when stopped after it ran.
fn cut_off_at(failpoint: &str, proof: Option<&str>) {
    let tau = Tau::new();
    let server = ModelServer::start(
        "run_command",
        &json!({"command": "echo made >> proof.txt"}),
        "It may or may not have run.",
    );
    let model = server.spec();
    let config = tau.serve_config("");
    let serve = tau.serve_at_failpoint(&model, &config, failpoint);
    let session = serve.new_session();
    let row = serve.ask(&session, "make a file");
    let id = row["id"].as_str().unwrap().to_owned();
    let approved = serve.approve(&id);
    assert_eq!(approved.status, 200, "{approved:?}");
    serve.until(|_| tau.at_failpoint(failpoint));
    serve.kill_hard();
    assert_eq!(tau.proof().as_deref(), proof);
    assert!(
        tau.audit().iter().all(|l| l["type"] != "effect_uncertain"),
        "nothing is closed before the restart"
    );

    let serve = tau.serve(&model, &config);
    assert!(
        serve.banner.iter().any(|l| l
            == "tau serve: 1 approved call was running when tau stopped: it may or may not have run, and is not run again"),
        "{:?}",
        serve.banner
    );
    let messages = serve.until_answered(&session, "It may or may not have run.");
    assert_eq!(tau.proof().as_deref(), proof, "never run a second time");
    // The model read it as the call's result.
    let last_request = server.requests.lock().unwrap().last().cloned().unwrap();
    let tool_message = last_request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rfind(|m| m["role"] == "tool")
        .cloned()
        .unwrap();
    assert_eq!(tool_message["content"], json!(UNCERTAIN), "{messages:#?}");
    let approved = serve.get("/api/approvals?state=approved").json();
    assert_eq!(
        (&approved[0]["id"], &approved[0]["outcome"]),
        (&json!(id), &json!("effect_uncertain")),
        "{approved}"
    );

    let audit = tau.audit();
    let uncertain: Vec<&Value> = audit
        .iter()
        .filter(|l| l["type"] == "effect_uncertain")
        .collect();
    assert_eq!(uncertain.len(), 1, "{audit:#?}");
    assert_eq!(
        (
            &uncertain[0]["approval_id"],
            &uncertain[0]["tool"],
            &uncertain[0]["session"],
            &uncertain[0]["channel"]
        ),
        (
            &json!(id),
            &json!("run_command"),
            &json!(session),
            &json!("web")
        )
    );
    let calls: Vec<&Value> = audit.iter().filter(|l| l["type"] == "tool_call").collect();
    let last_call = calls.last().unwrap();
    assert_eq!(
        (&last_call["status"], &last_call["result_summary"]),
        (&json!("error"), &json!(UNCERTAIN))
    );
    serve.kill_hard();

    // A third start finds nothing to close, and the log verifies.
    let serve = tau.serve(&model, &config);
    assert!(
        !serve.banner.iter().any(|l| l.contains("approved call")),
        "{:?}",
        serve.banner
    );
    serve.kill_hard();
    assert_eq!(tau.proof().as_deref(), proof);
    let verify = tau.run(&["audit", "verify"], "");
    assert_eq!(verify.code, 0, "{}{}", verify.stdout, verify.stderr);
}

#[test]
fn a_call_let_through_and_killed_before_it_started_is_never_run() {
    cut_off_at("dispatched", None);
}

#[test]
fn a_call_killed_after_it_ran_and_before_its_result_was_stored_is_never_run_again() {
    cut_off_at("ran", Some("made\n"));
}

/// Killed after the call's result was recorded (its audit line, its question marked
/// finished) and before the turn stored it: the next start never runs the call again, the
/// turn ends, and the log verifies.
#[test]
fn a_call_killed_after_its_result_was_recorded_is_never_run_again() {
    let tau = Tau::new();
    let server = ModelServer::start(
        "run_command",
        &json!({"command": "echo made >> proof.txt"}),
        "Done or not, it ran once.",
    );
    let model = server.spec();
    let config = tau.serve_config("");
    let serve = tau.serve_at_failpoint(&model, &config, "finished");
    let session = serve.new_session();
    let row = serve.ask(&session, "make a file");
    let id = row["id"].as_str().unwrap().to_owned();
    let approved = serve.approve(&id);
    assert_eq!(approved.status, 200, "{approved:?}");
    serve.until(|_| tau.at_failpoint("finished"));
    serve.kill_hard();
    assert_eq!(tau.proof().as_deref(), Some("made\n"));

    let serve = tau.serve(&model, &config);
    let messages = serve.until_answered(&session, "Done or not, it ran once.");
    assert_eq!(
        tau.proof().as_deref(),
        Some("made\n"),
        "never run a second time"
    );
    let pending = serve.get("/api/approvals?state=pending").json();
    assert_eq!(pending, json!([]), "{messages:#?}");
    serve.kill_hard();
    let verify = tau.run(&["audit", "verify"], "");
    assert_eq!(verify.code, 0, "{}{}", verify.stdout, verify.stderr);
    let calls = tau
        .audit()
        .into_iter()
        .filter(|l| l["type"] == "tool_call" && l["tool"] == "run_command")
        .filter(|l| l["status"] == "success")
        .count();
    assert_eq!(calls, 1, "one call ran, one line says so");
}

/// Killed after the approved call's `tool_call` line was written and before the chain's
/// anchor moved past it: the next start never runs the call again, `tau audit verify`
/// passes (one line past the anchor is what a kill leaves), and the next line anchors it.
#[test]
fn a_call_killed_between_its_audit_line_and_the_anchor_is_never_run_again() {
    let tau = Tau::new();
    let server = ModelServer::start(
        "run_command",
        &json!({"command": "echo made >> proof.txt"}),
        "It ran once.",
    );
    let model = server.spec();
    let config = tau.serve_config("");
    let serve = tau.serve_at_failpoint(&model, &config, "audit_line");
    let session = serve.new_session();
    let row = serve.ask(&session, "make a file");
    let id = row["id"].as_str().unwrap().to_owned();
    let approved = serve.approve(&id);
    assert_eq!(approved.status, 200, "{approved:?}");
    serve.until(|_| tau.at_failpoint("audit_line"));
    serve.kill_hard();
    assert_eq!(tau.proof().as_deref(), Some("made\n"));
    let verify = tau.run(&["audit", "verify"], "");
    assert_eq!(verify.code, 0, "{}{}", verify.stdout, verify.stderr);

    let serve = tau.serve(&model, &config);
    serve.until_answered(&session, "It ran once.");
    assert_eq!(
        tau.proof().as_deref(),
        Some("made\n"),
        "never run a second time"
    );
    serve.kill_hard();
    let verify = tau.run(&["audit", "verify"], "");
    assert_eq!(verify.code, 0, "{}{}", verify.stdout, verify.stderr);
    let ran = tau
        .audit()
        .into_iter()
        .filter(|l| l["type"] == "tool_call" && l["status"] == "success")
        .count();
    assert_eq!(ran, 1);
}
