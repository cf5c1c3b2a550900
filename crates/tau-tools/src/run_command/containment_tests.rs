//! Attacks by an approved command on the promise that nothing it started outlives the
//! call: new sessions, parents that are gone, processes that keep forking, a cancelled turn.
//! And the other side of it: the process's own children are never touched.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::json;
use tau_agent::{Tool, ToolContext, ToolError, ToolResultStatus};
use tokio_util::sync::CancellationToken;

use super::STOPPED_BY_CANCEL_TEXT;
use super::tests::{alive, default_setup, read_pid, result, run};

/// True once `pid` has died and been reaped: not even a zombie is left.
async fn gone_soon(pid: &str) -> bool {
    for _ in 0..300 {
        if !Path::new(&format!("/proc/{pid}")).exists() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    false
}

/// Pids of live processes whose command line holds `marker`.
fn with_marker(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline)
            .replace('\0', " ")
            .contains(marker)
            && alive(&name)
        {
            found.push(name);
        }
    }
    found
}

/// Starts a sleeper in a new session, writes its pid to `bg.pid`, and only then lets its
/// parent end: the sleeper has left the process group and the session, and its parent is
/// gone.
const ESCAPE: &str = "( setsid sh -c 'echo $$ > bg.tmp; mv bg.tmp bg.pid; exec sleep 30' \
    </dev/null >/dev/null 2>&1 & i=0; while [ ! -f bg.pid ] && [ $i -lt 500 ]; do sleep 0.01; i=$((i+1)); done )";

#[tokio::test]
async fn a_process_that_left_the_session_does_not_outlive_the_command() {
    let (dir, tool) = default_setup();
    let output = run(&tool, json!({ "command": ESCAPE })).await;
    assert_eq!(
        output,
        Ok(result(
            ToolResultStatus::Success,
            json!({"exit_code": 0, "signal": null, "timed_out": false, "stdout": "", "stderr": ""})
        ))
    );
    let pid = read_pid(dir.path());
    assert!(
        gone_soon(&pid).await,
        "{pid}, started in a new session, outlived the command (or was never reaped)"
    );
}

#[tokio::test]
async fn a_timeout_stops_what_left_the_session() {
    let (dir, tool) = default_setup();
    let command = format!("{ESCAPE}; sleep 30");
    let output = run(&tool, json!({ "command": command, "timeout_seconds": 1 })).await;
    assert_eq!(
        output,
        Ok(result(
            ToolResultStatus::Error,
            json!({"exit_code": null, "signal": 9, "timed_out": true, "stdout": "", "stderr": ""})
        ))
    );
    let pid = read_pid(dir.path());
    assert!(gone_soon(&pid).await, "{pid} outlived the timeout");
}

#[tokio::test]
async fn a_process_that_keeps_forking_outside_the_session_is_stopped() {
    let (_dir, tool) = default_setup();
    // A new session whose shell starts a sleeper every 10 ms (for at most 30 s, should the
    // test fail), behind a parent that is gone.
    let command = "( setsid sh -c 'i=0; while [ $i -lt 3000 ]; do sleep 31.4159 & sleep 0.01; i=$((i+1)); done' \
        </dev/null >/dev/null 2>&1 & ); sleep 0.3";
    run(&tool, json!({ "command": command })).await.unwrap();
    let mut left = with_marker("31.4159");
    for _ in 0..100 {
        if left.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
        left = with_marker("31.4159");
    }
    assert_eq!(left, Vec::<String>::new(), "sleepers outlived the command");
}

#[tokio::test]
async fn a_cancelled_turn_stops_the_command_and_everything_it_started() {
    let (dir, tool) = default_setup();
    let cancel = CancellationToken::new();
    let context = ToolContext::new("t1", "run_command", None).with_cancellation(cancel.clone());
    // Without the cancel it would write `written.txt` after 30 s.
    let command = format!("echo $$ > sh.pid; {ESCAPE}; touch ready; sleep 30; touch written.txt");
    let call = tool.run(json!({ "command": command }), context);
    tokio::pin!(call);
    let ready = dir.path().join("ready");
    let output = loop {
        tokio::select! {
            output = &mut call => break output,
            () = tokio::time::sleep(Duration::from_millis(20)) => {
                if ready.exists() {
                    cancel.cancel();
                }
            }
        }
    };
    assert_eq!(
        output,
        Err(ToolError::new(
            "the turn was cancelled, so the command was stopped with everything it started"
        ))
    );
    assert_eq!(output, Err(ToolError::new(STOPPED_BY_CANCEL_TEXT)));
    let shell = std::fs::read_to_string(dir.path().join("sh.pid")).unwrap();
    for pid in [shell.trim().to_owned(), read_pid(dir.path())] {
        assert!(gone_soon(&pid).await, "{pid} outlived the cancel");
    }
    assert!(!dir.path().join("written.txt").exists());
}

#[tokio::test]
async fn other_children_of_the_process_are_left_alone() {
    let (_dir, tool) = default_setup();
    let spawn = || {
        tokio::process::Command::new("sleep")
            .arg("32.718")
            .kill_on_drop(true)
            .spawn()
            .unwrap()
    };
    let mut before = spawn();
    let command = format!("{ESCAPE}; sleep 0.3");
    let call = run(&tool, json!({ "command": command }));
    tokio::pin!(call);
    let mut during = None;
    let output = loop {
        tokio::select! {
            output = &mut call => break output,
            () = tokio::time::sleep(Duration::from_millis(100)), if during.is_none() => {
                during = Some(spawn());
            }
        }
    };
    output.unwrap();
    let mut during = during.unwrap();
    for child in [&mut before, &mut during] {
        assert_eq!(
            child.try_wait().unwrap(),
            None,
            "a sibling child was stopped"
        );
        child.start_kill().unwrap();
        // Its status is still its owner's to collect: nobody reaped it behind tokio's back.
        assert_eq!(child.wait().await.unwrap().signal(), Some(9));
    }
}
