//! The sandbox where a machine allows no namespaces (a seccomp filter on tau refuses
//! `unshare`, as a container's profile does): with `sandbox = "on"` an approved command is
//! refused, naming the missing layer, in its result, in the audit log and in `tau doctor`;
//! with `sandbox = "reduced"` it runs, and every card says the sandbox is reduced. In every
//! mode a command that tau (as root) runs has no capability left and cannot read tau's
//! environment; the positive control is `sandbox = "off"`, where root keeps both.

use crate::common;

use std::io::Write;

use common::model_server::ModelServer;
use common::sandbox::{Probe, User, Without, users};
use common::{Run, Tau};
use pretty_assertions::assert_eq;
use serde_json::json;

/// What the model reads when the namespaces are missing and the sandbox is "on".
const REFUSED: &str = "the command did not run: the sandbox could not be set up (the user, \
    network and PID namespaces could not be set up: this machine allows no new user namespace \
    here (Operation not permitted), and no PID or network namespace without one (Operation \
    not permitted)). `tau doctor` shows what this machine has; `sandbox = \"reduced\"` under \
    [tools.command] in tau.toml runs commands without namespaces (a weaker sandbox), \
    `sandbox = \"off\"` without a sandbox";

/// The card's line in the terminal for a command in the reduced sandbox.
const REDUCED_ROW: &str = "  │ ⚠ sandbox: reduced · writes: workspace only · network: none\n";

#[test]
fn without_namespaces_the_full_sandbox_refuses_the_call_and_names_the_layer() {
    for user in users() {
        let probe = Probe::new(user, true, "").without(Without::Namespaces);
        let (_, outcome) = probe.run(&json!({"command": "touch proof.txt"}));
        assert_eq!(
            (outcome.status.as_str(), outcome.text()),
            ("error", format!("Error: {REFUSED}")),
            "{user:?}"
        );
        assert!(!probe.tau.workspace().join("proof.txt").exists());
        let errors: Vec<_> = probe
            .tau
            .audit()
            .into_iter()
            .filter(|line| line["type"] == "error")
            .collect();
        assert_eq!(errors.len(), 1, "{user:?}: {errors:#?}");
        assert_eq!(
            (
                &errors[0]["where"],
                &errors[0]["tool"],
                &errors[0]["tool_use_id"],
                &errors[0]["message"]
            ),
            (
                &json!("sandbox"),
                &json!("run_command"),
                &json!("t1"),
                &json!(REFUSED)
            ),
            "{user:?}"
        );
    }
}

#[test]
fn the_reduced_sandbox_runs_the_command_and_its_card_says_so() {
    for user in users() {
        for without in [Without::Namespaces, Without::Nothing] {
            let probe = Probe::in_mode(user, "reduced", "").without(without);
            let outside = probe.outside();
            // Not pid 1 of a namespace; no new session or process group; files and
            // network closed all the same.
            let command = format!(
                "echo $$ > pid; setsid true 2>/dev/null || echo kept > group; \
                 touch {}/x; bash -c 'echo > /dev/tcp/127.0.0.1/9' 2>/dev/null; echo done",
                outside.display()
            );
            let (run, outcome) = probe.run(&json!({ "command": command }));
            assert!(run.stdout.contains(REDUCED_ROW), "{user:?}: {}", run.stdout);
            assert_eq!(
                outcome.stdout(),
                "done\n",
                "{user:?} {without:?}: {outcome:?}"
            );
            let workspace = probe.tau.workspace();
            assert_ne!(
                std::fs::read_to_string(workspace.join("pid"))
                    .unwrap()
                    .trim(),
                "1"
            );
            assert_eq!(
                std::fs::read_to_string(workspace.join("group"))
                    .ok()
                    .as_deref(),
                Some("kept\n")
            );
            assert!(!outside.join("x").exists());
        }
    }
}

/// `/proc/self/status`'s capability and `no_new_privs` lines, and tau's environment where
/// the command can read it.
const PRIVILEGES: &str = "grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs):' \
    /proc/self/status; \
    for p in /proc/[0-9]*; do grep -q -- --answers-from-stdin $p/cmdline 2>/dev/null \
    && tr '\\0' '\\n' < $p/environ 2>/dev/null; done; true";

const NO_PRIVILEGE: &str = "CapInh:\t0000000000000000\nCapPrm:\t0000000000000000\n\
    CapEff:\t0000000000000000\nCapBnd:\t0000000000000000\nCapAmb:\t0000000000000000\n\
    NoNewPrivs:\t1\n";

/// The command's report on its privileges, run with the provider key in tau's environment.
fn privileges(probe: &Probe) -> String {
    let mut chat = probe.chat(&probe.script(&json!({ "command": PRIVILEGES })));
    chat.env("TAU_PROBE_SECRET", "SECRET-PROVIDER-KEY");
    let mut child = probe.spawn(chat);
    child.stdin.take().unwrap().write_all(b"go\ny\n").unwrap();
    let run = Run::from(child.wait_with_output().unwrap());
    assert_eq!(run.code, 0, "{}", run.stderr);
    probe.outcome().stdout().to_owned()
}

#[test]
fn as_root_a_command_has_no_capability_and_cannot_read_tau_s_environment() {
    if !rustix::process::getuid().is_root() {
        // Only root has capabilities to lose; CI runs as root.
        return;
    }
    for (mode, without) in [
        ("on", Without::Nothing),
        ("reduced", Without::Nothing),
        ("reduced", Without::Namespaces),
    ] {
        let probe = Probe::in_mode(User::Invoker, mode, "").without(without);
        let stdout = privileges(&probe);
        assert!(
            stdout.starts_with(NO_PRIVILEGE),
            "{mode} {without:?}: {stdout}"
        );
        assert!(
            !stdout.contains("SECRET-PROVIDER-KEY"),
            "{mode} {without:?}: {stdout}"
        );
    }
    // The positive control: without the sandbox root keeps every capability and reads it.
    let probe = Probe::new(User::Invoker, false, "");
    let stdout = privileges(&probe);
    assert!(!stdout.contains("CapEff:\t0000000000000000"), "{stdout}");
    assert!(stdout.contains("SECRET-PROVIDER-KEY"), "{stdout}");
}

/// `tau doctor` under the probe's filter: its exit code and the sandbox's section, with the
/// kernel's Landlock ABI left out.
fn doctor(probe: &Probe) -> (i32, String) {
    let model = probe.script(&json!({"command": "true"}));
    let mut child = probe.spawn(probe.command(&["--model", &model, "doctor"]));
    drop(child.stdin.take());
    let run = Run::from(child.wait_with_output().unwrap());
    let section: Vec<String> = run
        .stdout
        .lines()
        .take(4)
        .map(|line| match line.split_once("ABI ") {
            Some((before, _)) => format!("{before}ABI [n]"),
            None => line.to_owned(),
        })
        .collect();
    (run.code, section.join("\n"))
}

#[test]
fn doctor_says_the_namespaces_are_missing_and_what_reduced_does_without_them() {
    let on = Probe::new(User::Invoker, true, "").without(Without::Namespaces);
    let (code, section) = doctor(&on);
    assert_eq!(code, 1, "a command would be refused: {section}");
    insta::assert_snapshot!("doctor_on_without_namespaces", section);
    let reduced = Probe::in_mode(User::Invoker, "reduced", "").without(Without::Namespaces);
    let (code, section) = doctor(&reduced);
    assert_eq!(code, 0, "{section}");
    insta::assert_snapshot!("doctor_reduced_without_namespaces", section);
    let reduced = Probe::in_mode(User::Invoker, "reduced", "");
    let (code, section) = doctor(&reduced);
    assert_eq!(code, 0, "{section}");
    insta::assert_snapshot!("doctor_reduced_with_namespaces", section);
}

#[test]
fn taubar_s_question_says_the_sandbox_is_reduced_and_the_command_runs_after_the_yes() {
    let tau = Tau::new();
    let server = ModelServer::start(
        "run_command",
        &json!({"command": "echo made >> proof.txt"}),
        "Done.",
    );
    let model = server.spec();
    let config = tau.serve_config("[tools.command]\nsandbox = \"reduced\"\n");
    let serve = tau.serve(&model, &config);
    let session = serve.new_session();
    let row = serve.ask(&session, "make a file");
    insta::assert_json_snapshot!("taubar_card_reduced", row["card"]);
    let id = row["id"].as_str().unwrap();
    let approved = serve.approve(id);
    assert_eq!(approved.status, 200, "{approved:?}");
    serve.until_answered(&session, "Done.");
    assert_eq!(tau.proof().as_deref(), Some("made\n"));
    serve.kill_hard();
}
