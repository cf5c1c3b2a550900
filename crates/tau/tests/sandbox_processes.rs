//! Nothing an approved command starts outlives its call: a sleeper in a new session, a
//! double fork, and a process that keeps forking and letting its parent exit are gone
//! after the call ends, after it is cancelled, and after tau is killed with SIGKILL. In a
//! PID namespace, and without namespaces (a seccomp filter refuses `unshare`), where the
//! launcher's subreaper and parent-death signals have to do it. The positive control:
//! every escape was alive while the call ran, and without the sandbox a SIGKILLed tau
//! leaves them behind.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

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

/// Three escapes, each a `sleep MARKER` (the chain's shells carry it in their script), then
/// `ready` in the workspace, then `rest`.
fn escapes(marker: &str, rest: &str) -> String {
    format!(
        "setsid sh -c 'sleep {marker} &' </dev/null >/dev/null 2>&1; \
         ( (sleep {marker} </dev/null >/dev/null 2>&1 &) & ); \
         chain() {{ ( sleep 0.05; chain ) </dev/null >/dev/null 2>&1 & }}; chain; \
         sleep 1; touch ready; {rest}"
    )
}

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
    let model = probe.script(&json!({ "command": escapes(&marker, rest) }));
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

fn check(user: User, without: Without, end: End) {
    let probe = Probe::new(user, true, "").without(without);
    let (marker, mut child) = run(&probe, end);
    let status = child.wait().unwrap();
    if end != End::Killed {
        assert!(status.success(), "{user:?} {without:?} {end:?}");
    }
    assert_eq!(
        gone(&marker),
        Ok(()),
        "{user:?} {without:?} {end:?}: processes outlived the call"
    );
    if end == End::Returns {
        assert_eq!(probe.outcome().status, "success");
    }
}

#[test]
fn nothing_outlives_a_call_that_returns() {
    for user in users() {
        for without in [Without::Nothing, Without::Namespaces] {
            check(user, without, End::Returns);
        }
    }
}

#[test]
fn nothing_outlives_a_cancelled_call() {
    for user in users() {
        for without in [Without::Nothing, Without::Namespaces] {
            check(user, without, End::Cancelled);
        }
    }
}

#[test]
fn nothing_outlives_tau_killed_with_sigkill() {
    for user in users() {
        for without in [Without::Nothing, Without::Namespaces] {
            check(user, without, End::Killed);
        }
    }
}

#[test]
fn without_the_sandbox_a_killed_tau_leaves_them_behind() {
    let probe = Probe::new(User::Invoker, false, "");
    let (marker, mut child) = run(&probe, End::Killed);
    child.wait().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    let left = with_marker(&marker);
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
