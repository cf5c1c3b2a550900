//! What a person reads of untrusted text, end to end: `tau sessions show` of a session a
//! hostile model wrote, and the start-up warning about a hostile MCP server. No raw
//! control, format or invisible character reaches the terminal.

use crate::common;

use common::peers;
use common::{Tau, answer, tool_call};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// Characters that must never reach a terminal raw.
const RAW: [char; 12] = [
    '\u{1b}',
    '\u{7}',
    '\u{9b}',
    '\u{7f}',
    '\u{202e}',
    '\u{200b}',
    '\u{34f}',
    '\u{fe0f}',
    '\u{e0041}',
    '\u{3164}',
    '\u{2800}',
    '\u{2028}',
];

fn assert_no_raw(what: &str, text: &str) {
    for raw in RAW {
        assert!(
            !text.contains(raw),
            "raw {raw:?} reached the terminal in {what}:\n{text}"
        );
    }
}

/// A session where the model chose a hostile tool name, hostile arguments and a hostile
/// answer.
fn hostile_session(tau: &Tau) {
    let name = "evil\u{1b}]0;title\u{7}\u{202e}exe.sh\u{34f}";
    let input = json!({
        "command": format!("sh setup.sh\u{34f}{}rm -rf ~", " ".repeat(20)),
        "key\u{9b}31m": "\u{7f}\u{2800}\u{e0041}",
    });
    let model = tau.replay(&json!([
        tool_call("t1", name, &input),
        answer("done\u{200b}\u{fe0f}\u{3164}\u{2028}\u{1b}[2J"),
    ]));
    let run = tau.run(&["--model", &model, "chat", "--session", "s1"], "go\n");
    assert_eq!(run.code, 0, "{}", run.stderr);
}

#[test]
fn sessions_show_escapes_what_the_model_chose() {
    let tau = Tau::new();
    hostile_session(&tau);
    let run = tau.run(&["sessions", "show", "s1"], "");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_no_raw("sessions show", &run.stdout);
    insta::assert_snapshot!(run.stdout);
}

#[test]
fn sessions_show_json_escapes_for_the_terminal_and_still_parses_to_the_same_messages() {
    let tau = Tau::new();
    hostile_session(&tau);
    let run = tau.run(&["sessions", "show", "s1", "--json"], "");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_no_raw("sessions show --json", &run.stdout);
    let messages: Value = serde_json::from_str(&run.stdout).unwrap();
    let calls: Vec<&Value> = messages
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().unwrap())
        .filter_map(|block| block.get("toolUse"))
        .collect();
    assert_eq!(calls.len(), 1);
    assert_eq!(
        calls[0]["name"],
        "evil\u{1b}]0;title\u{7}\u{202e}exe.sh\u{34f}"
    );
    assert_eq!(calls[0]["input"]["key\u{9b}31m"], "\u{7f}\u{2800}\u{e0041}");
}

#[test]
fn a_hostile_mcp_server_error_reaches_stderr_escaped() {
    let Some(python) = peers::python() else {
        return;
    };
    let tau = Tau::new();
    let config = tau.config(&format!(
        "[mcp.servers.evil]\ncommand = {}\nargs = {}\n",
        json!(python),
        json!([peers::script("hostile_server.py")])
    ));
    let run = tau.run(&["--config", config.to_str().unwrap(), "tools"], "");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_no_raw("the start-up warning", &run.stderr);
    let warning = run
        .stderr
        .lines()
        .find(|l| l.starts_with("tau: warning: MCP server 'evil'"))
        .unwrap_or_else(|| panic!("no warning about the server:\n{}", run.stderr));
    assert!(
        warning.contains("\\u{1b}[2J")
            && warning.contains("\\u{202e}")
            && warning.contains("⟨200 spaces⟩"),
        "{warning}"
    );
}
