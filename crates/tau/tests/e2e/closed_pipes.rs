//! No command panics when the reader of its output went away (`tau completions zsh | head
//! -1`): a write to a closed pipe ends quietly, with the exit code the command would have
//! had. Each run here gets a pipe whose reading end is closed before tau starts, so every
//! write fails with EPIPE, whatever the timing.

use crate::common;

use std::process::{Command, Stdio};

use common::{Run, Tau, answer};
use serde_json::json;

/// Which of tau's streams is the closed pipe; the other is read.
#[derive(Clone, Copy, Debug)]
enum Closed {
    Stdout,
    Stderr,
}

/// Runs `command` with `closed` a pipe nobody reads any more.
fn run_closed(mut command: Command, closed: Closed) -> Run {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    command.stdin(Stdio::null());
    match closed {
        Closed::Stdout => command.stdout(writer).stderr(Stdio::piped()),
        Closed::Stderr => command.stderr(writer).stdout(Stdio::piped()),
    };
    let output = common::spawn(&mut command).wait_with_output().unwrap();
    Run::from(output)
}

/// The stream that was read holds no panic.
fn assert_quiet(run: &Run, what: &str) {
    for text in [&run.stdout, &run.stderr] {
        assert!(
            !text.contains("panicked") && !text.contains("backtrace"),
            "{what}: {text}"
        );
    }
}

/// A session with messages, so `tau audit verify` has a log and `tau sessions list` a line.
fn chatted(tau: &Tau) {
    let model = tau.replay(&json!([answer("hello")]));
    let run = tau.run(&["--model", &model, "chat", "--session", "s1"], "hi\n");
    assert_eq!(run.code, 0, "{}", run.stderr);
}

#[test]
fn a_closed_stdout_ends_every_command_quietly_with_its_own_exit_code() {
    let tau = Tau::new();
    chatted(&tau);
    // Many sessions: more than a pipe holds, as `tau sessions list | head -1` meets it.
    {
        let db = tau_state::StateDb::open(&tau.home().join("state.db")).unwrap();
        for n in 0..2000 {
            db.sessions()
                .ensure_session(&tau_protocol::SessionId::parse(&format!("empty-{n:04}")).unwrap())
                .unwrap();
        }
    }
    let cases: [(&[&str], i32); 7] = [
        (&["completions", "zsh"], 0),
        (&["completions", "bash"], 0),
        (&["tools"], 0),
        (&["sessions", "list", "--all"], 0),
        (&["audit", "verify"], 0),
        (&["approvals"], 0),
        (&["--help"], 0),
    ];
    for (args, code) in cases {
        let run = run_closed(tau.command(args), Closed::Stdout);
        assert_quiet(&run, &args.join(" "));
        assert_eq!((run.code, run.stderr.as_str()), (code, ""), "{args:?}");
    }
    // The listing really was longer than a pipe holds.
    let listed = tau.run(&["sessions", "list", "--all"], "");
    assert!(listed.stdout.len() > 65_536, "{}", listed.stdout.len());
    // A broken log still says so by its exit code when nobody reads the report.
    let log = tau.home().join("audit.jsonl");
    let text = std::fs::read_to_string(&log).unwrap();
    std::fs::write(&log, text.replacen("\"seq\":1", "\"seq\":7", 1)).unwrap();
    let run = run_closed(tau.command(&["audit", "verify"]), Closed::Stdout);
    assert_quiet(&run, "audit verify of a broken log");
    assert_eq!(run.code, 1);
}

#[test]
fn a_closed_stderr_ends_errors_and_warnings_quietly_with_their_exit_codes() {
    let tau = Tau::new();
    chatted(&tau);
    let typo = tau.config("[tools]\nworkspce = \"x\"\n");
    let typo = typo.to_str().unwrap();
    let cases: [(&[&str], i32); 4] = [
        // An error: exit 2, said on the closed stderr.
        (&["--config", typo, "tools"], 2),
        (&["sessions", "show", "nobody"], 2),
        // A warning, then the listing on stdout.
        (&["--config", typo, "sessions", "list"], 0),
        // clap's own usage error.
        (&["no-such-command"], 2),
    ];
    for (args, code) in cases {
        let run = run_closed(tau.command(args), Closed::Stderr);
        assert_quiet(&run, &args.join(" "));
        assert_eq!(run.code, code, "{args:?}: {}", run.stdout);
    }
}

#[test]
fn completions_into_head_end_without_a_panic() {
    let tau = Tau::new();
    let tau_binary = env!("CARGO_BIN_EXE_tau");
    let home = tau.home();
    // As a person types it: bash reports each side's status.
    let script = format!(
        "'{tau_binary}' --home '{}' completions zsh | head -1; echo \"status ${{PIPESTATUS[0]}}\"",
        home.display()
    );
    let output = Command::new("bash")
        .args(["-c", &script])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .output()
        .unwrap();
    let run = Run::from(output);
    assert_eq!(
        (run.stdout.as_str(), run.stderr.as_str()),
        ("#compdef tau\nstatus 0\n", "")
    );
}
