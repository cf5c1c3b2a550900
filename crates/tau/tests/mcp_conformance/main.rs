//! The official MCP conformance suite (npm `@modelcontextprotocol/conformance`, under Node
//! 22) against `tau mcp --http`, through a loopback proxy that adds tau's bearer token.
//! Each scenario's result is read from its checks' details, never from the suite's
//! summary: some scenarios report success whatever a tool answered, tau's "not
//! registered" included. What tau does not pass is listed, with why, in
//! `expected-failures.toml`; the test fails on any difference in either direction.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

#[path = "../e2e/common/mod.rs"]
mod common;
mod proxy;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::Tau;
use common::peers::{self, HttpTau};
use pretty_assertions::assert_eq;
use serde_json::Value;

use proxy::Proxy;

/// The whole suite takes seconds; this is for a loaded machine, never a measure.
const SUITE_WAIT: Duration = Duration::from_secs(600);
/// `2026-12-03T12-42-18-391Z`: how the suite ends the name of each result folder.
const STAMP_CHARS: usize = 24;

/// Whether one scenario passed, read from its checks.
#[derive(Debug, Clone, PartialEq)]
enum Outcome {
    Passed,
    /// Why not: one line per check that did not pass.
    NotPassed(Vec<String>),
}

#[test]
fn tau_passes_the_official_conformance_suite_except_what_it_says_it_does_not_offer() {
    let Some(suite) = peers::conformance() else {
        return;
    };
    let tau = Tau::new();
    let server = HttpTau::start(&tau, &[], &[]);
    let proxy = Proxy::start(&server.addr, server.token.as_deref().unwrap());
    let results = tau.dir.path().join("conformance");
    run_suite(
        &suite,
        &format!("http://{}/mcp", proxy.addr),
        &results,
        &tau,
    );
    let outcomes = read_results(&results);
    let expected = expected_failures();

    let not_passed: BTreeMap<&str, &Vec<String>> = outcomes
        .iter()
        .filter_map(|(scenario, outcome)| match outcome {
            Outcome::Passed => None,
            Outcome::NotPassed(why) => Some((scenario.as_str(), why)),
        })
        .collect();
    let unexpected: Vec<String> = not_passed
        .iter()
        .filter(|(scenario, _)| !expected.contains_key(**scenario))
        .map(|(scenario, why)| format!("{scenario}: {}", why.join("; ")))
        .collect();
    let passing_now: Vec<&str> = expected
        .keys()
        .filter(|scenario| outcomes.get(*scenario) == Some(&Outcome::Passed))
        .map(String::as_str)
        .collect();
    let not_run: Vec<&str> = expected
        .keys()
        .filter(|scenario| !outcomes.contains_key(*scenario))
        .map(String::as_str)
        .collect();
    assert_eq!(
        (unexpected, passing_now, not_run),
        (Vec::new(), Vec::new(), Vec::new()),
        "(scenarios that fail and are not expected to, expected failures that pass now, expected failures the suite did not run)"
    );
    // What passes today (DESIGN.md); a suite that ran nothing would pass the above.
    let passed: Vec<&str> = outcomes
        .iter()
        .filter(|(_, outcome)| **outcome == Outcome::Passed)
        .map(|(scenario, _)| scenario.as_str())
        .collect();
    assert_eq!(
        passed,
        vec![
            "dns-rebinding-protection",
            "ping",
            "server-initialize",
            "server-sse-multiple-streams",
            "tools-list",
        ]
    );
}

/// Runs the suite's active server scenarios against `url`, results into `results`.
fn run_suite(suite: &peers::Conformance, url: &str, results: &Path, tau: &Tau) {
    let said = tau.dir.path().join("suite.log");
    let log = std::fs::File::create(&said).unwrap();
    let mut child = Command::new(&suite.node)
        .arg(&suite.suite)
        .args(["server", "--url", url, "--output-dir"])
        .arg(results)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", tau.dir.path())
        .env("LANG", "C.UTF-8")
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap();
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > SUITE_WAIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "the conformance suite did not end within {SUITE_WAIT:?}: {}",
                std::fs::read_to_string(&said).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    // It exits 1 whenever a scenario fails; what counts is what each check says.
    assert!(
        status.code().is_some(),
        "the conformance suite was killed ({status}): {}",
        std::fs::read_to_string(&said).unwrap_or_default()
    );
}

/// Each scenario's outcome, from `results/server-SCENARIO-STAMP/checks.json`.
fn read_results(results: &Path) -> BTreeMap<String, Outcome> {
    let mut outcomes = BTreeMap::new();
    for entry in std::fs::read_dir(results).unwrap() {
        let folder = entry.unwrap().file_name().into_string().unwrap();
        let scenario = folder
            .strip_prefix("server-")
            .and_then(|rest| rest.get(..rest.len().checked_sub(STAMP_CHARS + 1)?))
            .unwrap_or_else(|| panic!("a result folder the suite does not make: {folder}"));
        let text = std::fs::read_to_string(results.join(&folder).join("checks.json")).unwrap();
        let checks: Vec<Value> = serde_json::from_str(&text).unwrap();
        let previous = outcomes.insert(scenario.to_owned(), outcome(&checks));
        assert_eq!(previous, None, "{scenario} ran twice");
    }
    outcomes
}

/// Passed when every check succeeded (or only informs), at least one succeeded, and no
/// check's details hold tau's answer to a tool it does not have or a call it refused.
fn outcome(checks: &[Value]) -> Outcome {
    let mut why = Vec::new();
    let mut succeeded = 0;
    for check in checks {
        let id = check["id"].as_str().unwrap_or("?");
        match check["status"].as_str() {
            Some("SUCCESS") => succeeded += 1,
            Some("INFO") => {}
            other => why.push(format!(
                "{id} {}: {}",
                other.unwrap_or("without a status"),
                check["errorMessage"].as_str().unwrap_or_default()
            )),
        }
        if let Some(text) = refused_by_tau(&check["details"]) {
            why.push(format!("{id} reported {text:?} as a pass"));
        }
    }
    if succeeded == 0 && why.is_empty() {
        why.push("no check succeeded".to_owned());
    }
    if why.is_empty() {
        Outcome::Passed
    } else {
        Outcome::NotPassed(why)
    }
}

/// A text in `details` that is tau's unknown-tool or refusal text, whatever the tool.
fn refused_by_tau(details: &Value) -> Option<String> {
    let shapes = [
        tau_core::unknown_tool_text("\0"),
        tau_core::refusal_text("\0"),
    ];
    let matches = |text: &str| {
        shapes.iter().any(|shape| {
            let (before, after) = shape.split_once('\0').unwrap();
            text.starts_with(before) && text.ends_with(after)
        })
    };
    match details {
        Value::String(text) if matches(text) => Some(text.clone()),
        Value::Array(items) => items.iter().find_map(refused_by_tau),
        Value::Object(fields) => fields.values().find_map(refused_by_tau),
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => None,
    }
}

/// `expected-failures.toml`: scenario -> why tau does not pass it.
fn expected_failures() -> BTreeMap<String, String> {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_conformance/expected-failures.toml");
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct File {
        scenarios: BTreeMap<String, String>,
    }
    let file: File = toml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    for (scenario, why) in &file.scenarios {
        assert!(
            !why.trim().is_empty(),
            "{scenario} is expected to fail without a reason"
        );
    }
    file.scenarios
}

#[test]
fn a_check_counts_only_when_it_succeeded_and_tau_did_not_refuse_the_suite_s_tool() {
    let check = |status: &str, details: Value| serde_json::json!({"id": "c", "status": status, "details": details});
    let unknown = serde_json::json!({"result": {"content": [{"type": "text", "text": tau_core::unknown_tool_text("test_simple_text")}], "isError": true}});
    let refused = serde_json::json!({"text": tau_core::refusal_text("run_command")});
    let cases = [
        (vec![check("SUCCESS", serde_json::json!({}))], true),
        (
            vec![
                check("INFO", serde_json::json!({})),
                check("SUCCESS", serde_json::json!({})),
            ],
            true,
        ),
        (vec![check("SUCCESS", unknown)], false),
        (vec![check("SUCCESS", refused)], false),
        (
            vec![
                check("SUCCESS", serde_json::json!({})),
                check("FAILURE", serde_json::json!({})),
            ],
            false,
        ),
        (vec![check("WARNING", serde_json::json!({}))], false),
        (vec![check("INFO", serde_json::json!({}))], false),
        (vec![serde_json::json!({"id": "c"})], false),
        (Vec::new(), false),
    ];
    for (checks, passed) in cases {
        assert_eq!(outcome(&checks) == Outcome::Passed, passed, "{checks:?}");
    }
}
