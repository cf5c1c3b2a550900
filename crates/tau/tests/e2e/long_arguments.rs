//! An argument longer than the screen cannot be answered unseen: `tau chat` on an 80x24
//! terminal asks about a 117 KB command whose payload sits in its middle. The question
//! shows a page at a time and says which rows are on screen, with the command's length
//! and SHA-256 next to it; a `y` before its end was on screen is no answer, and only after
//! paging to the end does a `y` approve.

use crate::common;

use std::time::Duration;

use common::pty::Pty;
use common::{Tau, answer, tool_call};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const QUESTION: &str = "run it? [y/N] ";
/// Past the 300 ms a newly drawn page takes before a line can answer it.
const PAST_THE_GUARD: Duration = Duration::from_millis(800);
/// A page is read quicker than that; an Enter that comes too soon is typed again.
const READING: Duration = Duration::from_millis(350);
const TOO_SOON: &str = "ignored: typed before the question could be read";

/// Presses Enter for the next page, again when it came too soon; returns where the next
/// page's status row starts to be read from.
fn next_page(pty: &mut Pty, mut from: usize) -> usize {
    const STATUS: &str = "  ├─ rows ";
    loop {
        std::thread::sleep(READING);
        pty.type_keys("\n");
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            let screen = pty.screen();
            let rest = &screen[from..];
            if let Some(at) = rest.find(STATUS) {
                return from + at + STATUS.len();
            }
            if let Some(at) = rest.find(TOO_SOON) {
                from += at + TOO_SOON.len();
                break;
            }
            assert!(std::time::Instant::now() < deadline, "no next page: {rest}");
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// `echo` at both ends, harmless assignments around, and one `touch` in the middle: 117 KB.
fn long_command() -> String {
    let filler = |n: usize| format!("a={};", "x".repeat(140)).repeat(n);
    let half = filler(409);
    let command = format!("echo start;{half} touch payload.txt;{half} echo end");
    assert!(
        command.len() > 117_000 && command.len() < 118_000,
        "{}",
        command.len()
    );
    command
}

/// `117,523`
fn grouped(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(d);
    }
    out
}

fn decisions(tau: &Tau) -> Vec<Value> {
    tau.audit_events()
        .into_iter()
        .filter(|e| e["type"] == "approval")
        .map(|e| json!([e["decision"], e["decided_by"]["kind"]]))
        .collect()
}

#[test]
fn a_command_longer_than_the_screen_is_approved_only_after_its_end_was_shown() {
    let tau = Tau::new();
    let command = long_command();
    let model = tau.replay(&json!([
        tool_call("t1", "run_command", &json!({"command": command})),
        answer("Not run."),
        tool_call("t2", "run_command", &json!({"command": command})),
        answer("Ran it."),
    ]));
    let mut pty = Pty::start_sized(
        &tau,
        &["--model", &model, "chat", "--session", "s1"],
        80,
        24,
    );
    pty.wait_for("you> ");
    pty.type_keys("go\n");
    let mut at = pty.wait_for_after("  ├─ rows 1–", 0);
    at = pty.wait_for_after(QUESTION, at);
    // The length and the hash stand next to the question.
    let hash: String = Sha256::digest(command.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let screen = pty.screen();
    let shown_length = format!(
        "command: {} chars · SHA-256:",
        grouped(command.chars().count())
    );
    assert!(screen.contains(&shown_length), "{screen}");
    assert!(screen.contains(&format!("  │   {hash}\r\n")), "{screen}");
    assert!(
        !screen.contains("payload.txt"),
        "the payload is further down"
    );
    // A yes on the first page is no answer; the question stays open.
    std::thread::sleep(PAST_THE_GUARD);
    pty.type_keys("y\n");
    at = pty.wait_for_after(
        "not an answer yet: y counts once the end of the question was on screen",
        at,
    );
    at = pty.wait_for_after(QUESTION, at);
    // The person refuses without reading on.
    std::thread::sleep(PAST_THE_GUARD);
    pty.type_keys("n\n");
    at = pty.wait_for_after("tau> Not run.", at);
    assert_eq!(decisions(&tau), vec![json!(["rejected", "person"])]);

    // The second time the person reads it to its end, a page at a time.
    pty.type_keys("again\n");
    at = pty.wait_for_after("  ├─ rows 1–", at);
    let mut pages = 1;
    loop {
        let page_end = pty.wait_for_after(QUESTION, at);
        let page = pty.screen()[at..page_end].to_owned();
        at = page_end;
        if page.contains(": the end\r\n") {
            break;
        }
        at = next_page(&mut pty, at);
        pages += 1;
        assert!(pages < 200, "the pages never end");
    }
    assert!(pages > 50, "{pages} pages");
    assert!(
        pty.screen().contains("payload.txt"),
        "the payload was on screen"
    );
    std::thread::sleep(PAST_THE_GUARD);
    pty.type_keys("y\n");
    let at = pty.wait_for_after("tau> Ran it.", at);
    // Ctrl-D at the next prompt: a key typed while the answer is still printed is dropped
    // with the rest of what was typed ahead.
    pty.wait_for_after("you> ", at);
    pty.type_keys("\u{4}");
    let (code, _) = pty.finish();
    assert_eq!(code, 0);
    assert_eq!(
        decisions(&tau),
        vec![json!(["rejected", "person"]), json!(["approved", "person"])]
    );
    assert!(tau.workspace().join("payload.txt").exists());
}
