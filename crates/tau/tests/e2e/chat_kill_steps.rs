//! `tau chat` killed with SIGKILL at each step of a call a person approved at the
//! terminal, then started again: the call is never run again, the next start closes it
//! as `effect_uncertain` with its audit line (as `tau serve` does its own), the person
//! is told, and the model reads, in the words a resumed hub turn uses, that it may or may
//! not have run. Another tau that opens the home first (a chat on another session, `tau
//! serve`) closes it the same way; the conversation still tells its model.
//!
//! The binary is stopped dead at the exact step by a failpoint that only test builds have
//! (`TAU_FAILPOINT`), then killed.

use crate::common;

use std::io::Write;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::Tau;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// What the model reads instead of the call's result; byte-exact (pinned in tau-core).
const UNCERTAIN: &str = "tau stopped while run_command was running and its result was lost: it may or may not have run. It was not run again. Tell the user, and do not assume either outcome.";

/// `tau chat` in session `s1` asked to make a file, the person's yes piped in, stopped
/// dead at `failpoint` (still holding its session). The process and the yes's approval id.
fn stopped_at(tau: &Tau, model: &str, failpoint: &str) -> (std::process::Child, String) {
    let mark = tau.home().join("failpoint-reached");
    let mut child = common::spawn(
        tau.command(&[
            "--model",
            model,
            "chat",
            "--session",
            "s1",
            "--answers-from-stdin",
        ])
        .env("TAU_FAILPOINT", failpoint)
        .env("TAU_FAILPOINT_MARK", &mark)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null()),
    );
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"make a file\ny\n")
        .unwrap();
    let started = Instant::now();
    while tau.at_failpoint(failpoint).is_none() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "never reached {failpoint}"
        );
        assert!(child.try_wait().unwrap().is_none(), "tau chat ended");
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = std::fs::remove_file(&mark);
    let approval = tau
        .audit()
        .into_iter()
        .find(|l| l["type"] == "approval")
        .unwrap();
    assert_eq!(approval["decision"], "approved");
    (child, approval["approval_id"].as_str().unwrap().to_owned())
}

/// [`stopped_at`], then SIGKILL.
fn killed_at(tau: &Tau, model: &str, failpoint: &str) -> String {
    let (mut child, id) = stopped_at(tau, model, failpoint);
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        tau.audit().iter().all(|l| l["type"] != "effect_uncertain"),
        "nothing is closed before the next start"
    );
    id
}

/// The `effect_uncertain` lines of the audit log.
fn uncertain_lines(tau: &Tau) -> Vec<Value> {
    tau.audit()
        .into_iter()
        .filter(|l| l["type"] == "effect_uncertain")
        .collect()
}

/// What session `s1` gave the model for call `t1`.
fn result_of_t1(tau: &Tau) -> Value {
    let messages = tau.session_json("s1");
    messages
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().unwrap().clone())
        .find(|block| block["toolResult"]["toolUseId"] == "t1")
        .map(|block| block["toolResult"].clone())
        .unwrap_or_else(|| panic!("no result for t1 in {messages:#?}"))
}

/// Killed at `failpoint`; `proof` is what the command wrote by then, `open` whether its
/// outcome was still unrecorded (then the next start writes its one `effect_uncertain`
/// line).
fn chat_cut_off_at(failpoint: &str, proof: Option<&str>, open: bool) {
    let tau = Tau::new();
    let model = tau.make_proof();
    let id = killed_at(&tau, &model, failpoint);
    assert_eq!(tau.proof().as_deref(), proof);

    let again = tau.run(
        &["--model", &model, "chat", "--session", "s1"],
        "what happened?\n",
    );
    assert_eq!(again.code, 0, "{}", again.stderr);
    insta::assert_snapshot!(format!("next_start_after_{failpoint}"), again.stdout);
    assert_eq!(tau.proof().as_deref(), proof, "never run a second time");
    assert_eq!(
        result_of_t1(&tau),
        json!({"toolUseId": "t1", "status": "error", "content": [{"text": UNCERTAIN}]})
    );
    let uncertain = uncertain_lines(&tau);
    assert_eq!(uncertain.len(), usize::from(open), "{uncertain:#?}");
    if open {
        assert_eq!(
            (
                &uncertain[0]["approval_id"],
                &uncertain[0]["tool"],
                &uncertain[0]["tool_use_id"],
                &uncertain[0]["session"],
                &uncertain[0]["channel"]
            ),
            (
                &json!(id),
                &json!("run_command"),
                &json!("t1"),
                &json!("s1"),
                &json!("terminal")
            )
        );
    }
    let calls: Vec<Value> = tau
        .audit()
        .into_iter()
        .filter(|l| l["type"] == "tool_call" && l["tool"] == "run_command")
        .collect();
    let last = calls.last().unwrap();
    assert_eq!(
        (
            &last["status"],
            &last["result_summary"],
            &last["approval_id"]
        ),
        (&json!("error"), &json!(UNCERTAIN), &json!(id))
    );

    // A third start has nothing to close or say.
    let third = tau.run(&["--model", &model, "chat", "--session", "s1"], "");
    assert_eq!(third.code, 0, "{}", third.stderr);
    assert!(!third.stdout.contains("may or may not"), "{}", third.stdout);
    assert_eq!(uncertain_lines(&tau).len(), usize::from(open));
    assert_eq!(tau.proof().as_deref(), proof);
    let verify = tau.run(&["audit", "verify"], "");
    assert_eq!(verify.code, 0, "{}{}", verify.stdout, verify.stderr);
}

#[test]
fn a_chat_killed_after_the_yes_let_the_call_through_never_runs_it() {
    chat_cut_off_at("dispatched", None, true);
}

#[test]
fn a_chat_killed_while_the_approved_call_ran_never_runs_it_again() {
    chat_cut_off_at("ran", Some("made\n"), true);
}

#[test]
fn a_chat_killed_after_the_call_s_result_was_recorded_never_runs_it_again() {
    chat_cut_off_at("finished", Some("made\n"), false);
}

#[test]
fn a_chat_killed_between_the_call_s_audit_line_and_the_anchor_never_runs_it_again() {
    chat_cut_off_at("audit_line", Some("made\n"), true);
}

/// Another chat opens the home first: it closes the call of the session nobody has open,
/// says so, and the session's own next start still tells its model.
#[test]
fn another_chat_closes_a_killed_chat_s_call_and_the_session_still_tells_its_model() {
    let tau = Tau::new();
    let model = tau.make_proof();
    let id = killed_at(&tau, &model, "ran");
    let other = tau.run(&["--model", &model, "chat", "--session", "s2"], "");
    assert_eq!(other.code, 0, "{}", other.stderr);
    assert_eq!(
        other.stderr,
        format!(
            "tau: run_command was running in session s1 when tau stopped: it may or may not have run, and is not run again (question {id})\n"
        )
    );
    let uncertain = uncertain_lines(&tau);
    assert_eq!(uncertain.len(), 1);
    assert_eq!(
        (&uncertain[0]["approval_id"], &uncertain[0]["session"]),
        (&json!(id), &json!("s1"))
    );

    let again = tau.run(
        &["--model", &model, "chat", "--session", "s1"],
        "what happened?\n",
    );
    assert_eq!(again.code, 0, "{}", again.stderr);
    insta::assert_snapshot!("next_start_after_another_closed_it", again.stdout);
    assert_eq!(result_of_t1(&tau)["content"][0]["text"], json!(UNCERTAIN));
    assert_eq!(uncertain_lines(&tau).len(), 1, "said once");
    assert_eq!(tau.proof().as_deref(), Some("made\n"));
}

/// `tau serve` started after a killed chat closes its call as it closes its own.
#[test]
fn tau_serve_closes_a_killed_chat_s_call_at_its_start() {
    let tau = Tau::new();
    let model = tau.make_proof();
    let id = killed_at(&tau, &model, "dispatched");
    let serve = tau.serve(&model, &tau.serve_config(""));
    assert!(
        serve.banner.iter().any(|l| l
            == "tau serve: 1 approved call was running when tau stopped: it may or may not have run, and is not run again"),
        "{:?}",
        serve.banner
    );
    serve.kill_hard();
    let uncertain = uncertain_lines(&tau);
    assert_eq!(
        (uncertain.len(), &uncertain[0]["approval_id"]),
        (1, &json!(id))
    );
    let again = tau.run(
        &["--model", &model, "chat", "--session", "s1"],
        "what happened?\n",
    );
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert_eq!(result_of_t1(&tau)["content"][0]["text"], json!(UNCERTAIN));
    assert_eq!(tau.proof(), None, "never run");
}

/// A chat whose approved call still runs holds its session: another tau that opens the
/// home leaves that call alone; once the chat is killed, the next one closes it.
#[test]
fn a_running_chat_s_call_is_not_closed_by_another_tau() {
    let tau = Tau::new();
    let model = tau.make_proof();
    let (mut chat, id) = stopped_at(&tau, &model, "ran");
    let other = tau.run(&["--model", &model, "chat", "--session", "s2"], "");
    assert_eq!((other.code, other.stderr.as_str()), (0, ""));
    let serve = tau.serve(&model, &tau.serve_config(""));
    assert!(
        !serve
            .banner
            .iter()
            .any(|l| l.contains("running when tau stopped")),
        "{:?}",
        serve.banner
    );
    serve.kill_hard();
    assert!(uncertain_lines(&tau).is_empty());

    chat.kill().unwrap();
    chat.wait().unwrap();
    let other = tau.run(&["--model", &model, "chat", "--session", "s2"], "");
    assert!(other.stderr.contains(&id), "{}", other.stderr);
    assert_eq!(uncertain_lines(&tau).len(), 1);
}
