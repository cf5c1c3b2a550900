//! Runs the real `tau` binary in a fresh home with a replay model and piped stdin.
#![allow(dead_code)]

pub mod browser;
pub mod hostile;
pub mod model_server;
pub mod office;
pub mod peers;
pub mod people;
pub mod pty;
pub mod sandbox;
pub mod serve;
pub mod tmux;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

pub struct Tau {
    pub dir: tempfile::TempDir,
}

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Tau {
    pub fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    pub fn workspace(&self) -> PathBuf {
        self.home().join("workspace")
    }

    /// Writes `tau.toml` next to the home and returns its path.
    pub fn config(&self, text: &str) -> PathBuf {
        let path = self.dir.path().join("tau.toml");
        std::fs::write(&path, text).unwrap();
        path
    }

    /// Writes a replay script and returns the `--model` spec for it.
    pub fn replay(&self, script: &Value) -> String {
        let path = self.dir.path().join("replay.json");
        std::fs::write(&path, serde_json::to_string_pretty(script).unwrap()).unwrap();
        format!("replay:{}", path.display())
    }

    /// tau with these arguments, in a session of its own without a controlling terminal
    /// (under util-linux `setsid`), so it can never read the terminal `cargo test` was
    /// started from: a run is the same from a terminal and from CI. Where stdin is not a
    /// terminal, tau then has nobody to ask unless it is given `--answers-from-stdin`.
    pub fn command(&self, args: &[&str]) -> Command {
        self.command_in_session(&[], args)
    }

    /// tau with `args` under `setsid -w`, `before` coming between the two (`-c`: the
    /// terminal on stdin becomes the controlling terminal; a program that execs tau).
    /// Without a fork `setsid` execs in place, so the child's pid is tau's; `-w` passes
    /// tau's exit status on when it forks.
    pub fn command_in_session(&self, before: &[&str], args: &[&str]) -> Command {
        let mut command = Command::new(SETSID);
        command
            .arg("-w")
            .args(before)
            .arg(env!("CARGO_BIN_EXE_tau"))
            .args(["--home", self.home().to_str().unwrap()])
            .args(args)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.dir.path())
            .env("LANG", "C.UTF-8");
        command
    }

    /// Runs tau with `stdin` piped in and waits for it.
    pub fn run(&self, args: &[&str], stdin: &str) -> Run {
        self.run_with(self.command(args), stdin)
    }

    /// Runs tau with these extra environment variables.
    pub fn run_env(&self, args: &[&str], env: &[(&str, &str)], stdin: &str) -> Run {
        let mut command = self.command(args);
        for (key, value) in env {
            command.env(key, value);
        }
        self.run_with(command, stdin)
    }

    /// Runs a prepared command with `stdin` piped in and waits for it.
    pub fn run_with(&self, mut command: Command, stdin: &str) -> Run {
        let mut child = spawn(
            command
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped()),
        );
        // tau may end (a refused setting) before it reads its input: that is its answer.
        if let Err(error) = child.stdin.take().unwrap().write_all(stdin.as_bytes()) {
            assert_eq!(error.kind(), std::io::ErrorKind::BrokenPipe, "{error}");
        }
        let output = child.wait_with_output().unwrap();
        Run::from(output)
    }

    /// Everything the home's log holds: each day's file (`logs/tau.log.YYYY-MM-DD`), oldest
    /// first.
    pub fn log(&self) -> String {
        log_in(&self.home())
    }

    pub fn audit(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(self.home().join("audit.jsonl")).unwrap_or_default();
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// The audit events without the fields that change from run to run.
    /// The audit log's events without what differs between runs: the chain, times,
    /// durations, and random approval ids (numbered `ap_1`, ... by first appearance).
    pub fn audit_events(&self) -> Vec<Value> {
        let mut events: Vec<Value> = self
            .audit()
            .into_iter()
            .map(|mut line| {
                let object = line.as_object_mut().unwrap();
                for key in ["at", "prev", "seq", "duration_ms", "session"] {
                    object.remove(key);
                }
                line
            })
            .collect();
        let mut all = Value::Array(events);
        tau_test_support::stable_ids(&mut all);
        events = serde_json::from_value(all).unwrap();
        events
    }

    /// A routine `tick` that appends `tick` to `tick.txt` every second, asking on `ask`:
    /// made in a conversation (the person said yes), then edited in `state.db` behind its
    /// approval to append `tock`, so its exemption no longer covers the call.
    pub fn routine_edited_behind_its_approval(&self, ask: &str) {
        let made = self.replay(&json!([
            tool_call("t1", "create_routine", &json!({"name": "tick", "every": "1s", "tool": "run_command",
                                                     "arguments": {"command": "echo tick >> tick.txt"}, "ask": ask})),
            answer("Done.")
        ]));
        let args = [
            "--model",
            &made,
            "chat",
            "--session",
            "s1",
            "--answers-from-stdin",
        ];
        let run = self.run(&args, "make it\ny\n");
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert!(
            self.audit().iter().any(|l| l["type"] == "tool_call"
                && l["tool"] == "create_routine"
                && l["status"] == "success"),
            "the routine was made"
        );
        let db = rusqlite::Connection::open(self.home().join("state.db")).unwrap();
        let changed = db
            .execute(
                "UPDATE routines SET definition = replace(definition, 'echo tick', 'echo tock')",
                [],
            )
            .unwrap();
        assert_eq!(changed, 1);
    }

    pub fn session_json(&self, name: &str) -> Value {
        let run = self.run(&["sessions", "show", name, "--json"], "");
        assert_eq!(run.code, 0, "{}", run.stderr);
        serde_json::from_str(&run.stdout).unwrap()
    }
}

impl From<Output> for Run {
    fn from(output: Output) -> Self {
        Self {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }
}

/// Everything the log of the home at `home` holds, oldest day first.
pub fn log_in(home: &Path) -> String {
    let mut files: Vec<PathBuf> = std::fs::read_dir(home.join("logs"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| {
            path.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("tau.log"))
        })
        .collect();
    files.sort();
    files
        .iter()
        .map(|path| std::fs::read_to_string(path).unwrap_or_default())
        .collect()
}

/// util-linux's `setsid`, found on PATH (Debian's util-linux is always installed).
pub const SETSID: &str = "setsid";

/// Spawns `command`, saying what is missing when `setsid` is.
pub fn spawn(command: &mut Command) -> std::process::Child {
    command
        .spawn()
        .unwrap_or_else(|error| panic!("cannot start tau under `{SETSID}` (util-linux): {error}"))
}

pub fn exists(path: &Path) -> bool {
    path.exists()
}

/// The permission bits of a file or directory (symlinks not followed).
pub fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::symlink_metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

/// What each descriptor of process `pid` on a `state.db` file points at, sorted
/// (`... (deleted)` when the file was unlinked under it). Empty once the process is gone:
/// a short-lived command may end between the listing and the reading.
pub fn state_descriptors(pid: u32) -> Vec<String> {
    let mut held: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .into_iter()
        .flatten()
        .filter_map(|entry| std::fs::read_link(entry.ok()?.path()).ok())
        .map(|target| target.to_string_lossy().into_owned())
        .filter(|target| target.contains("state.db"))
        .collect();
    held.sort();
    held
}

/// A replay entry: the model calls one tool.
pub fn tool_call(id: &str, name: &str, input: &Value) -> Value {
    json!({"role": "assistant", "content": [{"toolUse": {"toolUseId": id, "name": name, "input": input}}]})
}

/// A replay entry: the model answers with text.
pub fn answer(text: &str) -> Value {
    json!({"role": "assistant", "content": [{"text": text}]})
}

/// A bench's whole-number option `name VALUE` from its command line, else `default`.
pub fn bench_argument(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}
