//! `TAU_PEERS_REQUIRED=1` turns a missing peer into a failure, so a suite run with it can
//! never pass by skipping. Each case runs this test binary again, in a child process with
//! the variables set, on a peer that does not exist.

use crate::common;

use std::process::{Command, Output};

use common::peers;

/// Runs the ignored test `name` of this module with `env` and nothing else of ours.
fn child(name: &str, env: &[(&str, &str)]) -> Output {
    // A test's name in its binary is its module path without the crate's name.
    let name = match module_path!().split_once("::") {
        Some((_, module)) => format!("{module}::{name}"),
        None => name.to_owned(),
    };
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args(["--exact", &name, "--ignored", "--test-threads=1"])
        .env_remove("TAU_PEERS_REQUIRED")
        .env_remove("TAU_TEST_PYTHON")
        .env_remove("TAU_TEST_NPM_BIN")
        .env_remove("TAU_TEST_TMUX");
    for (key, value) in env {
        command.env(key, value);
    }
    command.output().unwrap()
}

fn assert_required(name: &str, missing: (&str, &str), reason: &str) {
    let skipped = child(name, &[missing]);
    assert!(
        skipped.status.success(),
        "without the variable the test skips: {}",
        String::from_utf8_lossy(&skipped.stderr)
    );
    let failed = child(name, &[missing, ("TAU_PEERS_REQUIRED", "1")]);
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&failed.stdout),
        String::from_utf8_lossy(&failed.stderr)
    );
    assert!(!failed.status.success(), "a missing peer passed: {said}");
    assert!(said.contains(reason), "{said}");
}

#[test]
fn a_missing_python_fails_when_peers_are_required() {
    assert_required(
        "child_wants_python",
        ("TAU_TEST_PYTHON", "/nonexistent/python"),
        "TAU_PEERS_REQUIRED is set, but there is no Python with the `mcp` and `mcp-server-time` packages",
    );
}

#[test]
fn a_missing_npm_peer_fails_when_peers_are_required() {
    assert_required(
        "child_wants_an_npm_peer",
        ("TAU_TEST_NPM_BIN", "/nonexistent/bin"),
        "TAU_PEERS_REQUIRED is set, but there is no npm peer mcp-inspector",
    );
}

#[test]
fn a_missing_conformance_suite_fails_when_peers_are_required() {
    assert_required(
        "child_wants_the_conformance_suite",
        ("TAU_TEST_NPM_BIN", "/nonexistent/bin"),
        "TAU_PEERS_REQUIRED is set, but there is no Node 22 at /nonexistent/bin/node",
    );
}

#[test]
fn a_node_older_than_22_fails_when_peers_are_required() {
    // Debian's Node: the suite needs 22, so an older one counts as missing.
    let bin = tempfile::tempdir().unwrap();
    let node = bin.path().join("node");
    std::fs::write(&node, "#!/bin/sh\necho v20.19.2\n").unwrap();
    std::fs::set_permissions(&node, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    std::fs::write(bin.path().join("conformance"), "").unwrap();
    assert_required(
        "child_wants_the_conformance_suite",
        ("TAU_TEST_NPM_BIN", bin.path().to_str().unwrap()),
        "(found Some(\"v20.19.2\"))",
    );
}

#[test]
fn a_missing_tmux_fails_when_peers_are_required() {
    assert_required(
        "child_wants_tmux",
        ("TAU_TEST_TMUX", "/nonexistent/tmux"),
        "TAU_PEERS_REQUIRED is set, but there is no tmux",
    );
}

#[test]
#[ignore = "child process of a_missing_tmux_fails_when_peers_are_required; run by it"]
fn child_wants_tmux() {
    let _ = peers::tmux();
}

#[test]
#[ignore = "child process of a_missing_python_fails_when_peers_are_required; run by it"]
fn child_wants_python() {
    let _ = peers::python();
}

#[test]
#[ignore = "child process of a_missing_npm_peer_fails_when_peers_are_required; run by it"]
fn child_wants_an_npm_peer() {
    let _ = peers::npm_bin("mcp-inspector");
}

#[test]
#[ignore = "child process of the conformance cases above; run by them"]
fn child_wants_the_conformance_suite() {
    let _ = peers::conformance();
}
