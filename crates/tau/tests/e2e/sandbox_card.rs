//! The question of a command says what the sandbox allows it, and shows the content of a
//! file it names that the model wrote a step earlier, with its length and SHA-256; the
//! command runs only while the file still hashes to what was shown. The positive control:
//! the same question answered without an edit runs the script.

use crate::common;

use std::io::{Read, Write};
use std::sync::{Arc, Mutex};

use common::sandbox::{Probe, User, until};
use common::{answer, tool_call};
use pretty_assertions::assert_eq;
use serde_json::json;

const SCRIPT: &str = "echo original > ran.txt\n";
const SCRIPT_SHA256: &str = "7de8fd30578f927061c724a5b4bbe01ad7692a0141ec29847f0638b25a321987";

/// The model writes `setup.sh`, then asks to run it (with `extra` arguments); `edit` runs
/// once the question is on screen, before the answer `y`. Returns what tau printed.
fn ask(probe: &Probe, extra: &serde_json::Value, edit: impl FnOnce()) -> String {
    let mut input = json!({"command": "sh setup.sh"});
    for (key, value) in extra.as_object().unwrap() {
        input[key] = value.clone();
    }
    let model = probe.tau.replay(&json!([
        tool_call(
            "t0",
            "write_file",
            &json!({"path": "setup.sh", "content": SCRIPT})
        ),
        tool_call("t1", "run_command", &input),
        answer("Done."),
    ]));
    let mut child = probe.spawn(probe.chat(&model));
    let mut stdout = child.stdout.take().unwrap();
    let printed = Arc::new(Mutex::new(String::new()));
    let reader = {
        let printed = Arc::clone(&printed);
        std::thread::spawn(move || {
            let mut buffer = [0u8; 4096];
            while let Ok(n) = stdout.read(&mut buffer) {
                if n == 0 {
                    break;
                }
                printed
                    .lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buffer[..n]));
            }
        })
    };
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"go\n").unwrap();
    until("the question", || {
        printed.lock().unwrap().contains("run it? [y/N]")
    });
    edit();
    stdin.write_all(b"y\n").unwrap();
    drop(stdin);
    assert!(child.wait().unwrap().success());
    reader.join().unwrap();
    printed.lock().unwrap().clone()
}

#[test]
fn the_card_shows_the_sandbox_and_the_script_and_an_edited_script_does_not_run() {
    let probe = Probe::new(User::Invoker, true, "");
    let printed = ask(&probe, &json!({}), || {});
    for row in [
        "  │ · sandbox: writes: workspace only · network: none\n",
        "  │ ⚠ file: setup.sh · 24 bytes, written by the model · SHA-256 ",
        SCRIPT_SHA256,
        "  │   ┊ echo original > ran.txt\n",
    ] {
        assert!(printed.contains(row), "{row:?} in\n{printed}");
    }
    let ran = probe.tau.workspace().join("ran.txt");
    assert_eq!(
        std::fs::read_to_string(&ran).ok().as_deref(),
        Some("original\n"),
        "the positive control: unedited, it runs"
    );

    let probe = Probe::new(User::Invoker, true, "");
    let script = probe.tau.workspace().join("setup.sh");
    let printed = ask(&probe, &json!({}), || {
        std::fs::write(&script, "echo edited > ran.txt\n").unwrap();
    });
    assert!(printed.contains("echo original > ran.txt"), "{printed}");
    let outcome = probe.outcome();
    assert_eq!(outcome.status, "error");
    let text = outcome.text();
    assert!(
        text.starts_with(&format!(
            "Error: the command did not run: setup.sh changed after the user was shown it \
             (SHA-256 {SCRIPT_SHA256} then, "
        )),
        "{text}"
    );
    assert!(!probe.tau.workspace().join("ran.txt").exists());
}

#[test]
fn network_and_no_sandbox_are_warnings_on_the_card() {
    let probe = Probe::new(User::Invoker, true, "");
    let printed = ask(&probe, &json!({"network": true}), || {});
    assert!(
        printed.contains("  │ ⚠ sandbox: writes: workspace only · network: with network access\n"),
        "{printed}"
    );
    let probe = Probe::new(User::Invoker, false, "");
    let printed = ask(&probe, &json!({}), || {});
    assert!(
        printed.contains("  │ ⚠ sandbox: runs without a sandbox\n"),
        "{printed}"
    );
}
