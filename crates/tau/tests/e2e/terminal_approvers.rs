//! Approvers at the terminal, end to end: a tool that names `approvers` is theirs alone to
//! answer. Bob's yes typed at `tau chat` to a question only ana may answer approves
//! nothing: the card says so up front, the refusal names why in the hub's words, it is
//! audited as `answer_refused` naming bob, and the call does not run. Ana's yes runs it.

use crate::common;

use common::{Tau, answer, tool_call};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

const HOME: &str = "[[people]]\nname = \"ana\"\n\n[[people]]\nname = \"bob\"\n\n[tools.approvers]\nrun_command = [\"ana\"]\n";

/// `tau chat --person PERSON` asked to touch `file`, typing `answers` to its question.
fn chat_as(tau: &Tau, person: &str, file: &str, answers: &str) -> common::Run {
    let config = tau.config(HOME);
    let model = tau.replay(&json!([
        tool_call(
            "t1",
            "run_command",
            &json!({"command": format!("touch {file}")})
        ),
        answer("Done."),
    ]));
    tau.run_env(
        &[
            "--config",
            config.to_str().unwrap(),
            "--model",
            &model,
            "chat",
            "--answers-from-stdin",
            "--person",
            person,
        ],
        &[],
        &format!("do it\n{answers}"),
    )
}

fn of_type(tau: &Tau, kind: &str) -> Vec<Value> {
    tau.audit_events()
        .into_iter()
        .filter(|e| e["type"] == kind)
        .collect()
}

/// The transcript from the first question on.
fn from_question(stdout: &str) -> &str {
    let start = stdout.find("  ┌─ approval needed").unwrap_or(0);
    &stdout[start..]
}

#[test]
fn a_yes_from_someone_the_approvers_do_not_name_approves_nothing() {
    let tau = Tau::new();
    let run = chat_as(&tau, "bob", "bob.txt", "y\nalways\n");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!tau.workspace().join("bob.txt").exists(), "{}", run.stdout);
    insta::assert_snapshot!(from_question(&run.stdout));
    let refused = json!({"type": "answer_refused", "channel": "terminal", "approval_id": "ap_1", "person": "bob", "reason": "not yours: only ana may answer it"});
    assert_eq!(of_type(&tau, "answer_refused"), [refused.clone(), refused]);
    let calls: Vec<Value> = of_type(&tau, "tool_call")
        .into_iter()
        .map(|e| json!([e["status"], e["approval"], e["decided_by"]]))
        .collect();
    assert_eq!(
        calls,
        [json!(["refused", "rejected", {"kind": "end_of_input"}])]
    );
    assert_eq!(of_type(&tau, "grant_created"), Vec::<Value>::new());
}

#[test]
fn a_yes_from_an_approver_runs_the_call() {
    let tau = Tau::new();
    let run = chat_as(&tau, "ana", "ana.txt", "y\n");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(tau.workspace().join("ana.txt").exists(), "{}", run.stdout);
    assert!(!run.stdout.contains("not yours"), "{}", run.stdout);
    assert_eq!(of_type(&tau, "answer_refused"), Vec::<Value>::new());
    let decided: Vec<Value> = of_type(&tau, "approval")
        .into_iter()
        .map(|e| e["decided_by"].clone())
        .collect();
    assert_eq!(
        decided,
        [json!({"kind": "person", "channel": "terminal", "person": "ana"})]
    );
}
