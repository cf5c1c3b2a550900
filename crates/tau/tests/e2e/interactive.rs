//! `tau chat` and `tau demo` as a person drives them: Ctrl-C, a question nobody answers,
//! the demo with real answers.

use crate::common;

use std::io::{Read, Write};
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::Tau;
use pretty_assertions::assert_eq;
use serde_json::json;

/// A running tau whose stdout is collected as it comes.
struct Live {
    child: Child,
    out: Arc<Mutex<String>>,
}

impl Live {
    fn start(tau: &Tau, args: &[&str]) -> Self {
        let mut child = tau
            .command(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let out = Arc::new(Mutex::new(String::new()));
        let sink = Arc::clone(&out);
        std::thread::spawn(move || {
            let mut buffer = [0u8; 4096];
            while let Ok(n) = stdout.read(&mut buffer) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buffer[..n]));
            }
        });
        Self { child, out }
    }

    fn send(&mut self, text: &str) {
        let stdin = self.child.stdin.as_mut().unwrap();
        stdin.write_all(text.as_bytes()).unwrap();
        stdin.flush().unwrap();
    }

    /// Waits (up to a generous bound, so a slow machine does not fail it) for `text`.
    fn wait_for(&self, text: &str) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !self.out.lock().unwrap().contains(text) {
            assert!(
                Instant::now() < deadline,
                "never saw {text:?} in:\n{}",
                self.out.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn interrupt(&self) {
        let status = std::process::Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }

    fn finish(mut self) -> (i32, String) {
        drop(self.child.stdin.take());
        let status = self.child.wait().unwrap();
        let out = self.out.lock().unwrap().clone();
        (status.code().unwrap_or(-1), out)
    }
}

#[test]
fn ctrl_c_cancels_the_turn_and_eof_then_exits_0() {
    let tau = Tau::new();
    let slow = json!({"role": "assistant", "content": [{"text": "This answer streams slowly and will be cut."}], "delayMs": 2000});
    let model = tau.replay(&json!([slow]));
    let mut live = Live::start(&tau, &["--model", &model, "chat", "--session", "s1"]);
    live.send("tell me a story\n");
    live.wait_for("you> tell me a story\n");
    std::thread::sleep(Duration::from_millis(300));
    live.interrupt();
    live.wait_for("  ! Cancelled.\n");
    let (code, _) = live.finish();
    assert_eq!(code, 0);
    assert_eq!(
        tau.session_json("s1"),
        json!([
            {"role": "user", "content": [{"text": "tell me a story"}]},
            {"role": "assistant", "content": [{"text": "Cancelled by user"}]},
        ])
    );
}

#[test]
fn a_second_ctrl_c_at_the_prompt_exits_0() {
    let tau = Tau::new();
    let model = tau.replay(&json!([{"role": "assistant", "content": [{"text": "Hi."}]}]));
    let mut live = Live::start(&tau, &["--model", &model, "chat", "--session", "s1"]);
    live.send("hello\n");
    live.wait_for("tau> Hi.\n");
    std::thread::sleep(Duration::from_millis(100));
    live.interrupt();
    let status = live.child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
}

#[test]
fn a_question_nobody_answers_is_withdrawn_at_the_gate_timeout() {
    let tau = Tau::new();
    let config = tau.config("[approval]\ntimeout_seconds = 0.5\n");
    let model = tau.replay(&json!([
        {"role": "assistant", "content": [{"toolUse": {"toolUseId": "t1", "name": "run_command", "input": {"command": "touch proof.txt"}}}]},
        {"role": "assistant", "content": [{"text": "Not run."}]},
        {"role": "assistant", "content": [{"text": "Still here."}]},
    ]));
    let mut live = Live::start(
        &tau,
        &[
            "--config",
            config.to_str().unwrap(),
            "--model",
            &model,
            "chat",
            "--answers-from-stdin",
            "--session",
            "s1",
        ],
    );
    live.send("make a file\n");
    live.wait_for("  ! No answer in time: run_command was not run.\n");
    live.wait_for("tau> Not run.\n");
    // The line typed after the withdrawal is a prompt, not a late answer.
    live.send("y\n");
    live.wait_for("tau> Still here.\n");
    let (code, out) = live.finish();
    assert_eq!(code, 0, "{out}");
    assert!(!tau.workspace().join("proof.txt").exists());
    let events = tau.audit_events();
    assert_eq!(
        (
            events[0]["type"].as_str(),
            events[0]["deadline"].as_str(),
            events[1]["type"].as_str(),
            events[1]["decision"].as_str(),
            &events[1]["decided_by"]
        ),
        (
            Some("approval_requested"),
            Some("<deadline>"),
            Some("approval"),
            Some("timeout"),
            &json!({"kind": "timeout"})
        )
    );
    assert_eq!(
        (
            events[3]["status"].as_str(),
            events[3]["approval"].as_str(),
            &events[3]["decided_by"]
        ),
        (
            Some("refused"),
            Some("timeout"),
            &json!({"kind": "timeout"})
        )
    );
    assert_eq!(
        tau.session_json("s1")[4],
        json!({"role": "user", "content": [{"text": "y"}]})
    );
}

#[test]
fn the_demo_runs_offline_with_real_answers_and_ends_with_what_the_audit_log_recorded() {
    let tau = Tau::new();
    let run = tau.run(&["demo", "--answers-from-stdin"], "y\nn\n");
    assert_eq!(run.code, 0, "{}", run.stderr);
    let (chat, summary) = run.stdout.split_once("\nThe audit log recorded").unwrap();
    // The lamp is a device of tau's registry: its card and the lamp's own line say so.
    assert!(
        chat.contains("  [demo lamp] the living-room lamp is now ON\n"),
        "{chat}"
    );
    insta::assert_snapshot!(mask_clock(chat));
    // A line per call, read back from the log, and the next command: no raw JSON.
    insta::assert_snapshot!(format!("The audit log recorded{summary}"));
    assert!(!summary.contains('{'), "{summary}");
    assert!(
        !tau.home().exists(),
        "the demo keeps its files in a temporary folder"
    );
}

#[test]
fn ctrl_c_stops_a_running_approved_command_and_everything_it_started() {
    let tau = Tau::new();
    // Left alone it would write `written.txt` after a minute, and its sleeper, in a session
    // of its own behind a parent that is gone, would live on.
    // Found by their command lines: in the sandbox's PID namespace `$$` says nothing here.
    let command = "touch sh.ready; ( setsid sh -c 'touch bg.ready; exec sleep 60.7071' </dev/null >/dev/null 2>&1 & ); sleep 60.7072; touch written.txt";
    let model = tau.replay(&json!([
        common::tool_call("t1", "run_command", &json!({"command": command})),
        common::answer("never asked"),
    ]));
    let mut live = Live::start(
        &tau,
        &[
            "--model",
            &model,
            "chat",
            "--answers-from-stdin",
            "--session",
            "s1",
        ],
    );
    live.send("run it\n");
    live.wait_for("run it? [y/N]");
    live.send("y\n");
    let workspace = tau.workspace();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !(workspace.join("sh.ready").exists() && workspace.join("bg.ready").exists()) {
        assert!(Instant::now() < deadline, "the command never started");
        std::thread::sleep(Duration::from_millis(10));
    }
    live.interrupt();
    live.wait_for("  ! Cancelled.\n");
    assert_eq!(
        common::sandbox::gone("60.707"),
        Ok(()),
        "the command outlived the cancel"
    );
    let (code, _) = live.finish();
    assert_eq!(code, 0);
    assert!(!workspace.join("written.txt").exists());
    assert_eq!(
        tau.session_json("s1")[2],
        json!({"role": "user", "content": [{"toolResult": {"toolUseId": "t1", "status": "error", "content": [{"text": "Error: the turn was cancelled, so the command was stopped with everything it started"}],
               "source": {"type": "tool_result", "tool": "run_command", "call_id": "t1"}}}]})
    );
}

/// The device's output says when its state was seen and how long ago: `<time>`, `<n>`.
fn mask_clock(text: &str) -> String {
    let mut out = text.to_owned();
    for (key, mask) in [("seen_since ", "<time>"), ("age_seconds ", "<n>")] {
        if let Some(at) = out.find(key) {
            let start = at + key.len();
            let end = out[start..]
                .find([' ', '\n'])
                .map_or(out.len(), |i| start + i);
            out.replace_range(start..end, mask);
        }
    }
    out
}
