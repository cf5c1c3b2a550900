//! Probes of the sandbox: a command run through an approved `run_command` in `tau chat`,
//! with the sandbox on or off, as the user running the tests or (when that is root) as
//! `nobody`, optionally under a seccomp filter that takes a layer away.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{Run, Tau, answer, tool_call};

/// Who runs tau.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum User {
    /// Whoever runs the tests (root in CI).
    Invoker,
    /// `nobody`, through `setpriv`, when the tests run as root.
    Nobody,
}

const NOBODY: u32 = 65534;

/// Every user a probe runs as here: root and an unprivileged user where the tests run as
/// root, else the unprivileged user running them.
pub fn users() -> Vec<User> {
    if rustix::process::getuid().is_root() {
        vec![User::Invoker, User::Nobody]
    } else {
        vec![User::Invoker]
    }
}

/// A layer taken away from tau and everything it starts, by a seccomp filter installed on
/// the thread that starts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Without {
    Nothing,
    /// `landlock_create_ruleset` fails with EPERM.
    Landlock,
    /// `unshare` fails with EPERM: no namespaces.
    Namespaces,
}

pub struct Probe {
    pub tau: Tau,
    pub user: User,
    pub without: Without,
    config: PathBuf,
}

/// What the call returned: its status and its result (the JSON a command reports, or the
/// error text).
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub status: String,
    pub result: Value,
}

impl Outcome {
    pub fn stdout(&self) -> &str {
        self.result["stdout"].as_str().unwrap_or_default()
    }

    pub fn text(&self) -> String {
        self.result
            .as_str()
            .map_or_else(|| self.result.to_string(), str::to_owned)
    }
}

impl Probe {
    /// A fresh home; `[tools.command] sandbox` on or off, and `extra` config lines.
    pub fn new(user: User, sandbox: bool, extra: &str) -> Self {
        Self::in_mode(user, if sandbox { "on" } else { "off" }, extra)
    }

    /// A fresh home; `[tools.command] sandbox = "{mode}"`, and `extra` config lines.
    pub fn in_mode(user: User, mode: &str, extra: &str) -> Self {
        let tau = Tau::new();
        let config = tau.config(&format!("[tools.command]\nsandbox = \"{mode}\"\n{extra}"));
        std::fs::create_dir_all(tau.workspace()).unwrap();
        // As tau makes it.
        std::fs::set_permissions(tau.home(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let probe = Self {
            tau,
            user,
            without: Without::Nothing,
            config,
        };
        probe.hand_over(probe.tau.dir.path());
        probe
    }

    pub fn without(mut self, layer: Without) -> Self {
        self.without = layer;
        self
    }

    /// The person's home (`HOME`) of this tau.
    pub fn home(&self) -> PathBuf {
        self.tau.dir.path().to_owned()
    }

    /// Makes `path` (and everything below) the probe user's.
    pub fn hand_over(&self, path: &Path) {
        if self.user == User::Nobody {
            let status = Command::new("chown")
                .args(["-R", &format!("{NOBODY}:{NOBODY}")])
                .arg(path)
                .status()
                .unwrap();
            assert!(status.success());
        }
    }

    /// tau with `args`, as the probe's user, in a session of its own.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut full = vec!["--config", self.config.to_str().unwrap()];
        full.extend_from_slice(args);
        let inner = self.tau.command(&full);
        let mut command = match self.user {
            User::Invoker => Command::new(inner.get_program()),
            User::Nobody => {
                let mut command = Command::new("setpriv");
                command
                    .arg(format!("--reuid={NOBODY}"))
                    .arg(format!("--regid={NOBODY}"))
                    .arg("--clear-groups")
                    .arg("--")
                    .arg(inner.get_program());
                command
            }
        };
        let tau = env!("CARGO_BIN_EXE_tau");
        for arg in inner.get_args() {
            if self.user == User::Nobody && arg == tau {
                command.arg(tau_for_nobody());
            } else {
                command.arg(arg);
            }
        }
        command.env_clear();
        for (name, value) in inner.get_envs() {
            if let Some(value) = value {
                command.env(name, value);
            }
        }
        command
    }

    /// Starts `command` (stdin, stdout and stderr piped) with the probe's layer taken away.
    pub fn spawn(&self, mut command: Command) -> Child {
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        match self.without {
            Without::Nothing => super::spawn(&mut command),
            Without::Landlock => spawn_filtered(command, libc::SYS_landlock_create_ruleset),
            Without::Namespaces => spawn_filtered(command, libc::SYS_unshare),
        }
    }

    /// The replay script: `input` for `run_command`, then "Done.".
    pub fn script(&self, input: &Value) -> String {
        let model = self.tau.replay(&json!([
            tool_call("t1", "run_command", input),
            answer("Done.")
        ]));
        self.hand_over(&self.tau.dir.path().join("replay.json"));
        model
    }

    /// Runs `run_command` with `input`, approved, and waits for tau.
    pub fn run(&self, input: &Value) -> (Run, Outcome) {
        let model = self.script(input);
        let mut child = self.spawn(self.chat(&model));
        use std::io::Write;
        child.stdin.take().unwrap().write_all(b"go\ny\n").unwrap();
        let run = Run::from(child.wait_with_output().unwrap());
        assert_eq!(run.code, 0, "{}", run.stderr);
        let outcome = self.outcome();
        (run, outcome)
    }

    /// `tau chat` on session `s1` with `model`, answers from stdin.
    pub fn chat(&self, model: &str) -> Command {
        self.command(&[
            "--model",
            model,
            "chat",
            "--answers-from-stdin",
            "--session",
            "s1",
        ])
    }

    /// The result of call `t1` in session `s1`.
    pub fn outcome(&self) -> Outcome {
        let mut show = self.command(&["sessions", "show", "s1", "--json"]);
        let output = show.stdin(Stdio::null()).output().unwrap();
        let messages: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|_| {
            panic!("{}", String::from_utf8_lossy(&output.stderr));
        });
        let result = messages
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
            .filter_map(|block| block.get("toolResult").cloned())
            .find(|r| r["toolUseId"] == "t1")
            .expect("no result for t1");
        let content = &result["content"][0];
        let value = content.get("json").cloned().unwrap_or_else(|| {
            let text = content["text"].as_str().unwrap_or_default();
            serde_json::from_str(text).unwrap_or_else(|_| Value::from(text))
        });
        Outcome {
            status: result["status"].as_str().unwrap_or_default().to_owned(),
            result: value,
        }
    }

    /// A file in the person's home, made by the probe's user, readable by them.
    pub fn plant(&self, relative: &str, content: &str) -> PathBuf {
        let path = self.home().join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, content).unwrap();
        self.hand_over(&self.home());
        path
    }

    /// A directory outside the workspace that the probe's user may write to.
    pub fn outside(&self) -> PathBuf {
        let path = self.home().join("outside");
        std::fs::create_dir_all(&path).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777)).unwrap();
        path
    }
}

/// The tau binary where `nobody` can run it: in place when every folder above it lets
/// others through, else a copy in a folder of its own under the temp dir.
fn tau_for_nobody() -> PathBuf {
    static PATH: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    PATH.get_or_init(|| {
        let tau = PathBuf::from(env!("CARGO_BIN_EXE_tau"));
        let open = |path: &Path, bits: u32| {
            std::fs::metadata(path).is_ok_and(|m| m.permissions().mode() & bits == bits)
        };
        if open(&tau, 0o005) && tau.ancestors().skip(1).all(|dir| open(dir, 0o001)) {
            return tau;
        }
        let dir = std::env::temp_dir().join(format!("tau-test-bin-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let copy = dir.join("tau");
        std::fs::copy(&tau, &copy).unwrap();
        std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).unwrap();
        copy
    })
    .clone()
}

/// Spawns `command` from a thread of its own whose seccomp filter fails `syscall` with
/// EPERM; the child and everything it starts inherit the filter, this process does not.
fn spawn_filtered(mut command: Command, syscall: i64) -> Child {
    std::thread::spawn(move || {
        let rules = [(syscall, Vec::new())].into_iter().collect();
        let filter = seccompiler::SeccompFilter::new(
            rules,
            seccompiler::SeccompAction::Allow,
            seccompiler::SeccompAction::Errno(libc::EPERM as u32),
            std::env::consts::ARCH.try_into().unwrap(),
        )
        .unwrap();
        let program: seccompiler::BpfProgram = filter.try_into().unwrap();
        seccompiler::apply_filter(&program).unwrap();
        super::spawn(&mut command)
    })
    .join()
    .unwrap()
}

/// Pids of live processes whose command line holds `marker`.
pub fn with_marker(marker: &str) -> Vec<i32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let zombie = stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z'));
        if !zombie
            && String::from_utf8_lossy(&cmdline)
                .replace('\0', " ")
                .contains(marker)
        {
            found.push(pid);
        }
    }
    found
}

/// Waits (generously) until no live process holds `marker`; the survivors otherwise.
pub fn gone(marker: &str) -> Result<(), Vec<i32>> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let left = with_marker(marker);
        if left.is_empty() {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(left);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits until `check` holds, or panics saying `what`.
pub fn until(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}
