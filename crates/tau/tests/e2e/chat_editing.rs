//! `tau chat` at a real terminal (tmux): the prompt is edited with the arrows, Up brings
//! back earlier prompts (kept in `chat-history`, 0600, across runs), a spinner says the
//! model is thinking; and the terminal is given back as it was.

use crate::common;

use std::os::unix::fs::PermissionsExt;

use common::tmux::Terminal;
use common::{Tau, answer};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

fn user_prompts(tau: &Tau, session: &str) -> Vec<Value> {
    tau.session_json(session)
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"][0]["text"].clone())
        .collect()
}

fn chat(tau: &Tau, model: &str, session: &str) -> Option<Terminal> {
    Terminal::start(tau, &["--model", model, "chat", "--session", session])
}

#[test]
fn arrows_edit_the_prompt_and_up_brings_back_the_last_one() {
    let tau = Tau::new();
    let model = tau.replay(&json!([answer("first answer"), answer("second answer")]));
    let Some(terminal) = chat(&tau, &model, "s1") else {
        return;
    };
    terminal.wait_for("you>");
    // "helo", two steps left, an "l": "hello".
    terminal.type_text("helo");
    terminal.keys(&["Left", "Left"]);
    terminal.type_text("l");
    terminal.keys(&["Enter"]);
    // Keys typed before the prompt is back are a plain line's, echoed as such: wait.
    terminal.wait_for("tau> first answer\nyou>");
    // Up brings "hello" back; End and more text make a new prompt of it.
    terminal.keys(&["Up"]);
    terminal.wait_for("you> hello\n");
    terminal.keys(&["End"]);
    terminal.type_text(" again");
    terminal.keys(&["Enter"]);
    terminal.wait_for("tau> second answer\nyou>");
    terminal.keys(&["C-d"]);
    assert_eq!(terminal.exited(), 0);
    let screen = terminal.joined();
    assert!(!screen.contains("^["), "an arrow was printed:\n{screen}");
    assert_eq!(
        user_prompts(&tau, "s1"),
        vec![json!("hello"), json!("hello again")]
    );
    let history = tau.home().join("chat-history");
    assert_eq!(
        std::fs::read_to_string(&history).unwrap(),
        "\"hello\"\n\"hello again\"\n"
    );
    let mode = std::fs::metadata(&history).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
}

#[test]
fn the_history_outlives_the_chat_and_a_prompt_begun_with_a_space_is_not_kept() {
    let tau = Tau::new();
    let model = tau.replay(&json!([answer("one"), answer("two"), answer("three")]));
    let Some(first) = chat(&tau, &model, "s1") else {
        return;
    };
    first.wait_for("you>");
    first.type_text("lights on");
    first.keys(&["Enter"]);
    first.wait_for("tau> one\nyou>");
    first.type_text(" my secret");
    first.keys(&["Enter"]);
    first.wait_for("tau> two\nyou>");
    first.keys(&["C-d"]);
    assert_eq!(first.exited(), 0);
    drop(first);
    let Some(second) = chat(&tau, &model, "s2") else {
        return;
    };
    second.wait_for("you>");
    second.keys(&["Up"]);
    second.wait_for("you> lights on");
    second.keys(&["Enter"]);
    second.wait_for("tau> one\nyou>");
    second.keys(&["C-d"]);
    assert_eq!(second.exited(), 0);
    assert_eq!(user_prompts(&tau, "s2"), vec![json!("lights on")]);
    let kept = std::fs::read_to_string(tau.home().join("chat-history")).unwrap();
    assert!(!kept.contains("secret"), "{kept}");
}

#[test]
fn ctrl_c_clears_a_line_and_on_an_empty_one_ends_the_chat() {
    let tau = Tau::new();
    let model = tau.replay(&json!([answer("unused")]));
    let Some(terminal) = chat(&tau, &model, "s1") else {
        return;
    };
    terminal.wait_for("you>");
    terminal.type_text("half a thought");
    terminal.wait_for("you> half a thought");
    terminal.keys(&["C-c"]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while terminal.screen().contains("half a thought") {
        assert!(
            std::time::Instant::now() < deadline,
            "{}",
            terminal.screen()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    terminal.keys(&["C-c"]);
    assert_eq!(terminal.exited(), 0);
    assert_eq!(tau.session_json("s1"), json!([]));
}

#[test]
fn a_spinner_says_the_model_is_thinking_and_goes_when_it_answers() {
    let tau = Tau::new();
    let slow =
        json!({"role": "assistant", "content": [{"text": "Done thinking."}], "delayMs": 3000});
    let model = tau.replay(&json!([slow]));
    let Some(terminal) = chat(&tau, &model, "s1") else {
        return;
    };
    terminal.wait_for("you>");
    terminal.type_text("think hard");
    terminal.keys(&["Enter"]);
    terminal.wait_for("thinking…");
    let screen = terminal.wait_for("tau> Done thinking.\nyou>");
    assert!(!screen.contains("thinking…"), "{screen}");
    terminal.keys(&["C-d"]);
    assert_eq!(terminal.exited(), 0);
}

#[test]
fn a_pipe_gets_no_spinner_and_no_editor() {
    let tau = Tau::new();
    let model = tau.replay(&json!([answer("Hi.")]));
    let run = tau.run(&["--model", &model, "chat", "--session", "s1"], "hello\n");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, "new session s1\nyou> hello\ntau> Hi.\n");
    assert!(
        !tau.home().join("chat-history").exists() || {
            std::fs::read_to_string(tau.home().join("chat-history"))
                .unwrap()
                .is_empty()
        }
    );
}
