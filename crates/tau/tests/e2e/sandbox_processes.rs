//! Nothing an approved command starts outlives its call: a sleeper in a new session, a
//! double fork, a process that keeps forking and letting its parent exit every 50 ms, and
//! one that does so as fast as it can, are gone after the call ends, after it is
//! cancelled, and after tau is killed with SIGKILL. In a PID namespace, and with
//! `sandbox = "reduced"` (with namespaces and without: a seccomp filter refuses `unshare`),
//! where the launcher kills the command's process group, which nothing in it can leave.
//! The positive control: every escape was alive while the call ran, and without the
//! sandbox a SIGKILLed tau leaves them behind.

use crate::common;

use std::io::Write;
use std::process::Child;
use std::sync::atomic::{AtomicU32, Ordering};

use common::sandbox::{Probe, User, Without, gone, until, users, with_marker};
use serde_json::json;

/// A number no other test of this run uses, so each finds only its own processes.
fn marker() -> String {
    static NEXT: AtomicU32 = AtomicU32::new(1);
    format!(
        "6{:02}.{}",
        NEXT.fetch_add(1, Ordering::Relaxed),
        std::process::id()
    )
}

/// Five escapes, each a `sleep MARKER` (the chains carry it in their command lines), then
/// `ready` in the workspace, then `rest`. The slow chain forks and exits every 50 ms, the
/// fast one as fast as the shell can, the fork chain faster still ([`FORK_CHAIN`]), each
/// link a new process whose parent is gone. A
/// link lives too briefly to be found in `/proc` for sure, so each adds a byte to `beat`
/// in `workspace` ([`beating`]); they end by themselves once `stop` is in `workspace` or
/// `workspace` is gone (and the fast one after 200,000 links), so a failing test leaves
/// nothing running for long.
fn escapes(marker: &str, workspace: &std::path::Path, rest: &str) -> String {
    let w = workspace.display();
    format!(
        "setsid sh -c 'sleep {marker} &' </dev/null >/dev/null 2>&1; \
         ( (sleep {marker} </dev/null >/dev/null 2>&1 &) & ); \
         alive() {{ [ -d {w} ] && [ ! -e {w}/stop ] && echo >> {w}/beat; }}; \
         chain() {{ ( sleep 0.05; alive && chain ) </dev/null >/dev/null 2>&1 & }}; chain; \
         fast() {{ alive && {{ n=$((n+1)); [ $n -lt 200000 ] && {{ fast & }}; }}; }}; \
         n=0; fast </dev/null >/dev/null 2>&1; \
         /usr/bin/python3 -c '{FORK_CHAIN}' {w} {marker} </dev/null >/dev/null 2>&1; \
         sleep 1; touch ready; {rest}"
    )
}

/// A chain in which each link forks at once and exits: a new process every few
/// microseconds, each gone before a search of `/proc` could name it. Beats (in
/// `fork-beat`) every 100 links; checks `stop` as often.
const FORK_CHAIN: &str = "import os, sys
w = sys.argv[1]
n = 0
while n < 3000000:
    n += 1
    if n % 100 == 0:
        if not os.path.isdir(w) or os.path.exists(w + \"/stop\"):
            break
        with open(w + \"/fork-beat\", \"a\") as beat:
            beat.write(\".\")
    if os.fork():
        os._exit(0)";

/// Whether a chain still forks: `beat` or `fork-beat` in `workspace` grows within a
/// second.
fn beating(workspace: &std::path::Path) -> bool {
    let size = |name| std::fs::metadata(workspace.join(name)).map_or(0, |m| m.len());
    let before = [size("beat"), size("fork-beat")];
    std::thread::sleep(std::time::Duration::from_secs(1));
    [size("beat"), size("fork-beat")] != before
}

/// Writes `stop` into the workspace when dropped: a fast chain that outlived its call
/// (a failing test) ends itself, as it does when the workspace is removed.
struct StopChains(std::path::PathBuf);

impl Drop for StopChains {
    fn drop(&mut self) {
        let _ = std::fs::write(self.0.join("stop"), "");
    }
}

/// The modes each end is tried in: `[tools.command] sandbox`, and the layer taken away.
const MODES: [(&str, Without); 3] = [
    ("on", Without::Nothing),
    ("reduced", Without::Nothing),
    ("reduced", Without::Namespaces),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// The command returns by itself.
    Returns,
    /// The turn is cancelled (SIGINT, as Ctrl-C) while the command runs.
    Cancelled,
    /// tau is killed with SIGKILL while the command runs.
    Killed,
}

/// Runs the escapes and ends the call as `end`; the marker, and whether processes with it
/// were alive once the command was ready.
fn run(probe: &Probe, end: End) -> (String, Child) {
    let marker = marker();
    let rest = match end {
        End::Returns => {
            "i=0; while [ ! -f go ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done"
        }
        End::Cancelled | End::Killed => "sleep 600",
    };
    let command = escapes(&marker, &probe.tau.workspace(), rest);
    let model = probe.script(&json!({ "command": command }));
    let mut child = probe.spawn(probe.chat(&model));
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"go\ny\n").unwrap();
    let ready = probe.tau.workspace().join("ready");
    until("the escapes", || ready.exists());
    assert!(
        with_marker(&marker).len() >= 3,
        "the escapes did not start: {:?}",
        with_marker(&marker)
    );
    let workspace = probe.tau.workspace();
    assert!(
        workspace.join("beat").exists() && workspace.join("fork-beat").exists(),
        "the chains did not start"
    );
    let pid = rustix::process::Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
    match end {
        End::Returns => std::fs::write(probe.tau.workspace().join("go"), "").unwrap(),
        End::Cancelled => {
            rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
        }
        End::Killed => {
            rustix::process::kill_process(pid, rustix::process::Signal::KILL).unwrap();
        }
    }
    drop(stdin);
    (marker, child)
}

fn check(user: User, mode: &str, without: Without, end: End) {
    let probe = Probe::in_mode(user, mode, "").without(without);
    let _stop = StopChains(probe.tau.workspace());
    let (marker, mut child) = run(&probe, end);
    let status = child.wait().unwrap();
    if end != End::Killed {
        assert!(status.success(), "{user:?} {mode} {without:?} {end:?}");
    }
    assert_eq!(
        gone(&marker),
        Ok(()),
        "{user:?} {mode} {without:?} {end:?}: processes outlived the call"
    );
    assert!(
        !beating(&probe.tau.workspace()),
        "{user:?} {mode} {without:?} {end:?}: a chain outlived the call"
    );
    if end == End::Returns {
        assert_eq!(probe.outcome().status, "success");
    }
}

#[test]
fn nothing_outlives_a_call_that_returns() {
    for user in users() {
        for (mode, without) in MODES {
            check(user, mode, without, End::Returns);
        }
    }
}

#[test]
fn nothing_outlives_a_cancelled_call() {
    for user in users() {
        for (mode, without) in MODES {
            check(user, mode, without, End::Cancelled);
        }
    }
}

#[test]
fn nothing_outlives_tau_killed_with_sigkill() {
    for user in users() {
        for (mode, without) in MODES {
            check(user, mode, without, End::Killed);
        }
    }
}

#[test]
fn without_the_sandbox_a_killed_tau_leaves_them_behind() {
    let probe = Probe::new(User::Invoker, false, "");
    let _stop = StopChains(probe.tau.workspace());
    let (marker, mut child) = run(&probe, End::Killed);
    child.wait().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    let left = with_marker(&marker);
    assert!(
        beating(&probe.tau.workspace()),
        "the positive control: without the sandbox the chains outlive a killed tau"
    );
    // The chain forks on while it is stopped: rounds until none is left.
    for _ in 0..100 {
        let now = with_marker(&marker);
        if now.is_empty() {
            break;
        }
        for pid in now {
            let _ = std::process::Command::new("kill")
                .args(["-9", &pid.to_string()])
                .status();
        }
    }
    assert!(
        !left.is_empty(),
        "the positive control: without the sandbox the escapes outlive a killed tau"
    );
}
