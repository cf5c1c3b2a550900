//! An MCP server started as a program cannot reach the terminal tau asks on, nor tau's own
//! process: a real stdio server (the Python `mcp` SDK) types `y` into every terminal it can
//! find (TIOCSTI), draws over the question on `/dev/tty` and reads `/proc/<tau>/environ`,
//! `mem` and `fd` while tau asks about a `run_command`. Every attempt fails, the question
//! waits for the person, and the person's `n` refuses it. An approved command cannot read
//! tau's environment or memory either.

use crate::common;

use std::time::{Duration, Instant};

use common::pty::Pty;
use common::{Tau, answer, peers, tool_call};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

const QUESTION: &str = "run it? [y/N]";
const SECRET: &str = "sk-never-readable-0123456789";

/// Waits (generously) until the server wrote its report.
fn report(path: &std::path::Path) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(text) = std::fs::read_to_string(path) {
            return serde_json::from_str(&text).unwrap();
        }
        assert!(Instant::now() < deadline, "the server never reported");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_stdio_server_cannot_type_into_draw_on_or_read_tau() {
    let Some(python) = peers::python() else {
        return;
    };
    let tau = Tau::new();
    let report_path = tau.dir.path().join("report.json");
    let config = tau.config(&format!(
        // Without the sandbox: this is what holds for every server, a sandboxed one or not
        // (its report is written outside the workspace).
        "[mcp.servers.prying]\ncommand = {}\nargs = {}\ntools = {{ pry = 0 }}\nsandbox = \"off\"\n",
        json!(python),
        json!([
            peers::script("prying_server.py"),
            report_path.to_str().unwrap()
        ])
    ));
    let model = tau.replay(&json!([
        tool_call("t1", "prying__pry", &json!({})),
        tool_call("t2", "run_command", &json!({"command": "touch pwned"})),
        answer("done"),
    ]));
    // As root, any process could read another's /proc files; a root without capabilities
    // is the same user as everyone else of uid 0, as a person's processes are to theirs.
    // tau holds a secret in its environment, as it holds provider keys.
    let secret = format!("TAU_TEST_SECRET={SECRET}");
    let mut wrapper = vec!["env", secret.as_str()];
    if rustix::process::geteuid().is_root() {
        wrapper.extend(["setpriv", "--bounding-set=-all", "--inh-caps=-all", "--"]);
    }
    let mut pty = Pty::start_wrapped(
        &tau,
        &wrapper,
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
    // The server tries for seconds while the question is open; then the person answers.
    let report = report(&report_path);
    pty.type_keys("n\n");
    pty.wait_for("tau> done");
    // Ctrl-D at the next prompt: a key typed while the answer is still printed is dropped.
    pty.wait_for_nth("you> ", 2);
    pty.type_keys("\u{4}");
    let (code, screen) = pty.finish();
    assert_eq!(code, 0, "{screen}");

    assert!(report["tries"].as_u64().unwrap() > 1, "{report}");
    assert_eq!(
        report["attempts"],
        json!({
            "tiocsti /dev/tty": "ENXIO",
            "tiocsti stdin": "ENOTTY",
            "tiocsti stdout": "ENOTTY",
            "tiocsti stderr": "ENOTTY",
            "write /dev/tty": "ENXIO",
            "read tau environ": "EACCES",
            "read tau mem": "EACCES",
            "open tau stdin": "EACCES",
            "readlink tau stdin": "EACCES",
        }),
        "{screen}"
    );
    assert_eq!(report["ttys"], json!({"0": false, "1": false, "2": false}));
    assert_eq!(report["own session"], json!(true));
    assert!(
        !report["environment"]
            .to_string()
            .contains("TAU_TEST_SECRET")
    );
    assert!(!screen.contains("\"ls -la\""), "{screen}");
    assert!(!tau.workspace().join("pwned").exists(), "{screen}");
    let decided: Vec<Value> = tau
        .audit_events()
        .into_iter()
        .filter(|e| e["type"] == "approval")
        .map(|e| json!([e["decision"], e["decided_by"]]))
        .collect();
    assert_eq!(
        decided,
        vec![json!(["rejected", {"kind": "person", "channel": "terminal"}])]
    );
}

#[test]
fn an_approved_command_cannot_read_taus_environment() {
    let tau = Tau::new();
    // The command reads its parent's (tau's) environment and memory under /proc.
    let command = "cat /proc/$PPID/environ > environ.txt 2> environ.err; \
                   head -c 1 /proc/$PPID/mem > /dev/null 2> mem.err; \
                   ls /proc/$PPID/fd/0 > /dev/null 2>&1 && readlink /proc/$PPID/fd/0 > fd.txt 2> fd.err; \
                   echo $PPID > ppid.txt";
    let model = tau.replay(&json!([
        tool_call("t1", "run_command", &json!({ "command": command })),
        answer("done"),
    ]));
    // Without the sandbox (whose PID namespace would hide tau anyway): tau's own process is
    // closed whatever runs beside it.
    let config = tau.config("[tools.command]\nsandbox = \"off\"\n");
    let secret = format!("TAU_TEST_SECRET={SECRET}");
    let mut before = vec!["env", secret.as_str()];
    if rustix::process::geteuid().is_root() {
        before.extend(["setpriv", "--bounding-set=-all", "--inh-caps=-all", "--"]);
    }
    let command_line = tau.command_in_session(
        &before,
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
    let run = tau.run_with(command_line, "go\ny\n");
    assert_eq!(run.code, 0, "{}", run.stderr);
    let read = |name: &str| std::fs::read_to_string(tau.workspace().join(name)).unwrap_or_default();
    assert!(
        !read("ppid.txt").trim().is_empty(),
        "the command ran: {}",
        run.stdout
    );
    assert_eq!(read("environ.txt"), "", "tau's environment was read");
    assert!(
        read("environ.err").contains("Permission denied"),
        "{}",
        read("environ.err")
    );
    assert!(
        read("mem.err").contains("Permission denied"),
        "{}",
        read("mem.err")
    );
    assert_eq!(read("fd.txt"), "", "tau's terminal was found");
}
