//! An answer counts only for the question on screen: on a real terminal, lines typed
//! before a question could be read are not answers; with prompts from a pipe the answers
//! come from the controlling terminal, and with no terminal at all tier-2 calls are refused
//! unless `--answers-from-stdin` says the pipe holds them.

use crate::common;

use std::time::Duration;

use common::pty::Pty;
use common::{Tau, answer, tool_call};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

const QUESTION: &str = "run it? [y/N]";
const IGNORED: &str = "ignored: typed before the question could be read";
/// Comfortably longer than the guard after a question is drawn (300 ms), so a line typed
/// after it is an answer.
const PAST_THE_GUARD: Duration = Duration::from_millis(800);
/// Ctrl-D at the start of a line: the end of input.
const END: &str = "\u{4}";

/// A model that asks to run two commands, one after the other, then talks.
fn two_commands(tau: &Tau) -> String {
    tau.replay(&json!([
        tool_call("t1", "run_command", &json!({"command": "touch a.txt"})),
        tool_call("t2", "run_command", &json!({"command": "touch b.txt"})),
        answer("done"),
        answer("more"),
        answer("more"),
    ]))
}

/// Each approval's id, decision and who decided, in order.
fn decisions(tau: &Tau) -> Vec<(String, String, Value)> {
    tau.audit_events()
        .into_iter()
        .filter(|e| e["type"] == "approval")
        .map(|e| {
            (
                e["approval_id"].as_str().unwrap().to_owned(),
                e["decision"].as_str().unwrap().to_owned(),
                e["decided_by"].clone(),
            )
        })
        .collect()
}

fn decided(id: &str, decision: &str, decided_by: &Value) -> (String, String, Value) {
    (id.to_owned(), decision.to_owned(), decided_by.clone())
}

fn person() -> Value {
    json!({"kind": "person", "channel": "terminal"})
}

fn ran(tau: &Tau, file: &str) -> bool {
    tau.workspace().join(file).exists()
}

/// The attack: the person answers the first question with `y` and, a moment later, types
/// `y` again. The second question has opened by then; the second `y` must not approve it.
fn double_y(delay: Option<Duration>) -> (Tau, String) {
    let tau = Tau::new();
    let model = two_commands(&tau);
    let mut pty = Pty::start(&tau, &["--model", &model, "chat", "--session", "s1"]);
    pty.wait_for("you> ");
    pty.type_keys("go\n");
    pty.wait_for(QUESTION);
    std::thread::sleep(PAST_THE_GUARD);
    pty.type_keys("y\n");
    match delay {
        // 1-100 ms later, as a person's fingers do.
        Some(delay) => {
            std::thread::sleep(delay);
            pty.type_keys("y\n");
            pty.wait_for_nth(QUESTION, 2);
        }
        // The worst case: the instant the second question is on screen.
        None => {
            pty.wait_for_nth(QUESTION, 2);
            pty.type_keys("y\n");
        }
    }
    std::thread::sleep(PAST_THE_GUARD);
    pty.type_keys("n\n");
    pty.wait_for("tau> done");
    pty.type_keys(END);
    let (code, screen) = pty.finish();
    assert_eq!(code, 0, "{screen}");
    (tau, screen)
}

#[test]
fn on_a_terminal_a_y_typed_as_the_next_question_appears_does_not_approve_it() {
    let (tau, screen) = double_y(None);
    assert!(ran(&tau, "a.txt"), "{screen}");
    assert!(!ran(&tau, "b.txt"), "the second y approved b:\n{screen}");
    assert_eq!(
        decisions(&tau),
        vec![
            decided("ap_1", "approved", &person()),
            decided("ap_2", "rejected", &person()),
        ]
    );
    assert!(screen.contains(IGNORED), "{screen}");
}

#[test]
fn on_a_terminal_a_second_y_typed_moments_after_the_first_does_not_approve_the_next_question() {
    for delay in [1, 30, 100] {
        let (tau, screen) = double_y(Some(Duration::from_millis(delay)));
        assert!(ran(&tau, "a.txt"), "{delay} ms: {screen}");
        assert!(
            !ran(&tau, "b.txt"),
            "{delay} ms: the second y approved b:\n{screen}"
        );
        assert_eq!(
            decisions(&tau),
            vec![
                decided("ap_1", "approved", &person()),
                decided("ap_2", "rejected", &person()),
            ],
            "{delay} ms"
        );
    }
}

#[test]
fn on_a_terminal_a_y_meant_for_a_withdrawn_question_does_not_approve_the_next_one() {
    let tau = Tau::new();
    let config = tau.config("[approval]\ntimeout_seconds = 1\n");
    let model = two_commands(&tau);
    let mut pty = Pty::start(
        &tau,
        &[
            "--config",
            config.to_str().unwrap(),
            "--model",
            &model,
            "chat",
            "--session",
            "s1",
        ],
    );
    pty.wait_for("you> ");
    pty.type_keys("go\n");
    pty.wait_for(QUESTION);
    pty.wait_for("No answer in time: run_command was not run.");
    // The person, late for the first question, says yes as the second one opens.
    pty.wait_for_nth(QUESTION, 2);
    pty.type_keys("y\n");
    pty.wait_for("tau> done");
    pty.type_keys(END);
    let (code, screen) = pty.finish();
    assert_eq!(code, 0, "{screen}");
    assert!(!ran(&tau, "a.txt") && !ran(&tau, "b.txt"), "{screen}");
    let timeout = json!({"kind": "timeout"});
    assert_eq!(
        decisions(&tau),
        vec![
            decided("ap_1", "timeout", &timeout),
            decided("ap_2", "timeout", &timeout),
        ]
    );
    assert!(screen.contains(IGNORED), "{screen}");
}

#[test]
fn with_prompts_from_a_pipe_a_yes_prompt_is_a_prompt_and_the_terminal_answers() {
    let tau = Tau::new();
    let model = tau.replay(&json!([
        tool_call("t1", "run_command", &json!({"command": "touch a.txt"})),
        answer("not run"),
        answer("you said yes"),
    ]));
    let mut pty = Pty::start_with_prompts_from(
        &tau,
        &["--model", &model, "chat", "--session", "s1"],
        "go\nyes\n",
    );
    pty.wait_for(QUESTION);
    std::thread::sleep(PAST_THE_GUARD);
    pty.type_keys("n\n");
    pty.wait_for("tau> you said yes");
    let (code, screen) = pty.finish();
    assert_eq!(code, 0, "{screen}");
    assert!(!ran(&tau, "a.txt"), "the piped yes approved:\n{screen}");
    assert_eq!(
        decisions(&tau),
        vec![decided("ap_1", "rejected", &person())]
    );
    assert_eq!(
        tau.session_json("s1")[4],
        json!({"role": "user", "content": [{"text": "yes"}]})
    );
}

#[test]
fn with_prompts_from_a_pipe_a_y_typed_on_the_terminal_approves() {
    let tau = Tau::new();
    let model = tau.replay(&json!([
        tool_call("t1", "run_command", &json!({"command": "touch a.txt"})),
        answer("ran it"),
    ]));
    let mut pty = Pty::start_with_prompts_from(
        &tau,
        &["--model", &model, "chat", "--session", "s1"],
        "go\n",
    );
    pty.wait_for(QUESTION);
    std::thread::sleep(PAST_THE_GUARD);
    pty.type_keys("y\n");
    pty.wait_for("tau> ran it");
    let (code, screen) = pty.finish();
    assert_eq!(code, 0, "{screen}");
    assert!(ran(&tau, "a.txt"), "{screen}");
    assert_eq!(
        decisions(&tau),
        vec![decided("ap_1", "approved", &person())]
    );
}

#[test]
fn with_no_terminal_and_no_flag_a_piped_yes_approves_nothing_and_the_call_is_refused() {
    let tau = Tau::new();
    let model = tau.replay(&json!([
        tool_call("t1", "run_command", &json!({"command": "touch a.txt"})),
        answer("not run"),
        answer("you said yes"),
    ]));
    let run = tau.run(&["--model", &model, "chat", "--session", "s1"], "go\nyes\n");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!ran(&tau, "a.txt"), "{}", run.stdout);
    let events = tau.audit_events();
    assert_eq!(
        decisions(&tau),
        vec![decided(
            "ap_1",
            "rejected",
            &json!({"kind": "approver_failed"})
        )]
    );
    let error = events.iter().find(|e| e["type"] == "error").unwrap();
    assert_eq!(
        (&error["where"], &error["message"]),
        (
            &json!("approver"),
            &json!(
                "approver 'terminal' failed: no terminal to ask on: stdin is not a terminal, there is no controlling terminal, and answers from stdin were not allowed (--answers-from-stdin)"
            )
        ),
        "{error}"
    );
    insta::assert_snapshot!(run.stdout);
    assert_eq!(
        tau.session_json("s1")[4],
        json!({"role": "user", "content": [{"text": "yes"}]})
    );
}

#[test]
fn with_the_flag_the_piped_answer_answers() {
    let tau = Tau::new();
    let model = tau.replay(&json!([
        tool_call("t1", "run_command", &json!({"command": "touch a.txt"})),
        answer("ran it"),
    ]));
    let run = tau.run(
        &[
            "--model",
            &model,
            "chat",
            "--answers-from-stdin",
            "--session",
            "s1",
        ],
        "go\nyes\n",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(ran(&tau, "a.txt"), "{}", run.stdout);
    assert_eq!(
        decisions(&tau),
        vec![decided("ap_1", "approved", &person())]
    );
}

#[test]
fn the_demo_without_a_terminal_or_the_flag_switches_nothing() {
    let tau = Tau::new();
    let run = tau.run(&["demo"], "y\ny\n");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!run.stdout.contains("[demo lamp]"), "{}", run.stdout);
    assert_eq!(
        run.stdout
            .matches("refused: the approval could not be asked")
            .count(),
        2,
        "{}",
        run.stdout
    );
}
