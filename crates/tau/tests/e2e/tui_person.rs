//! `tau tui`'s person and passkeys, as a person drives it (tmux, as `tui.rs`): in a home
//! that names people, an answer on the card names who sat there; once anyone has a
//! passkey, the TUI says so at its start and a yes to a question that takes one refuses
//! it, runs nothing and is audited as `answer_refused`; so does a yes from someone a
//! tool's `approvers` do not name. Either card says so up front.

use crate::common;

use std::time::Duration;

use common::people::with_a_passkey;
use common::tmux::Terminal;
use common::{Tau, answer, tool_call};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// Longer than the card's answer guard, so a key sent after it counts.
const PAST_THE_GUARD: Duration = Duration::from_millis(600);

const HOME: &str = "[[people]]\nname = \"ana\"\n\n[[people]]\nname = \"bob\"\n\n[tools.step_up]\nrun_command = \"passkey\"\n";

fn of_type(tau: &Tau, kind: &str) -> Vec<Value> {
    tau.audit_events()
        .into_iter()
        .filter(|e| e["type"] == kind)
        .collect()
}

/// The frame a person answers the card on, past its guard. The status line names the
/// replay file, a new temporary path each run: it is left out.
fn card(terminal: &Terminal) -> String {
    let frame = terminal.wait_for_all(&["tau asks: approval needed", "a yes here refuses it"]);
    let lines: Vec<&str> = frame.lines().filter(|l| !l.contains("replay:")).collect();
    lines.join("\n")
}

/// `tau tui` in the home of `config` with `person` at it, the model asking to run a
/// command and then answering `Done.`.
fn tui_as(tau: &Tau, config: &std::path::Path, person: &str) -> Option<Terminal> {
    let model = tau.replay(&json!([
        tool_call("t1", "run_command", &json!({"command": "touch ran.txt"})),
        answer("Done."),
    ]));
    let config = config.to_str().unwrap().to_owned();
    let args = [
        "--config",
        &config,
        "--model",
        &model,
        "tui",
        "--session",
        "s1",
        "--person",
        person,
    ];
    Terminal::start(tau, &args)
}

/// Asks for the command; a yes on its card (pinned as `snapshot`) refuses the call:
/// nothing runs, the decision is a rejection by `person` on the TUI, and the audit log's
/// `answer_refused` line names them and `reason`.
fn a_yes_refuses(tau: &Tau, terminal: &Terminal, snapshot: &str, person: &str, reason: &str) {
    terminal.type_text("make a file");
    terminal.keys(&["Enter"]);
    // The card says up front that a yes here refuses it.
    terminal.wait_for("tau asks: approval needed");
    std::thread::sleep(PAST_THE_GUARD);
    insta::assert_snapshot!(snapshot, card(terminal));
    terminal.keys(&["y"]);
    terminal.wait_for("Done.");
    assert!(!tau.workspace().join("ran.txt").exists());
    let who = json!({"kind": "person", "channel": "tui", "person": person});
    let decided: Vec<Value> = of_type(tau, "approval")
        .into_iter()
        .map(|e| json!([e["decision"], e["decided_by"]]))
        .collect();
    assert_eq!(decided, [json!(["rejected", who])]);
    let refused: Vec<Value> = of_type(tau, "answer_refused")
        .into_iter()
        .map(|e| json!([e["channel"], e["person"], e["reason"]]))
        .collect();
    assert_eq!(refused, [json!(["tui", person, reason])]);
    terminal.keys(&["C-d"]);
    assert_eq!(terminal.exited(), 0);
}

#[test]
fn once_anyone_has_a_passkey_a_yes_on_the_tui_refuses_a_step_up_tool_and_names_the_person() {
    let tau = Tau::new();
    let config = tau.config(HOME);
    with_a_passkey(&tau, "bob");
    let Some(terminal) = tui_as(&tau, &config, "ana") else {
        return;
    };
    terminal.wait_for_all(&["approvals: 0", "a passkey is enrolled"]);
    a_yes_refuses(
        &tau,
        &terminal,
        "once_anyone_has_a_passkey_a_yes_on_the_tui_refuses_a_step_up_tool_and_names_the_person",
        "ana",
        "a yes where no passkey can be asked",
    );
}

#[test]
fn a_yes_on_the_tui_from_someone_the_approvers_do_not_name_refuses_the_call() {
    let tau = Tau::new();
    let config = tau.config(
        "[[people]]\nname = \"ana\"\n\n[[people]]\nname = \"bob\"\n\n[tools.approvers]\nrun_command = [\"ana\"]\n",
    );
    let Some(terminal) = tui_as(&tau, &config, "bob") else {
        return;
    };
    terminal.wait_for("approvals: 0");
    a_yes_refuses(
        &tau,
        &terminal,
        "a_yes_on_the_tui_from_someone_the_approvers_do_not_name_refuses_the_call",
        "bob",
        "not yours: only ana may answer it",
    );
}
