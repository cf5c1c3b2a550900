//! `tau mcp` end to end: the Python `mcp` SDK's client drives the real binary over stdio
//! and streamable HTTP; every call goes through the gate and into `audit.jsonl`.

use crate::common;

use common::Tau;
use common::peers::{self, HttpTau};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

const EFFECT: &str = "runs a shell command in the workspace — code the agent wrote";
const REFUSAL: &str =
    "The user did not approve this action: run_command. Do not perform it; tell the user briefly.";
/// What the model reads when its client cannot ask (no elicitation): nobody said no.
const NOBODY_ASKED: &str = "Tool 'run_command' was not run: it needs the user's approval, and this MCP client cannot ask (it lacks elicitation), so nobody was asked. Tell the user it needs a client with elicitation.";
/// What a tier-2 tool's description ends with in `tools/list`.
const NEEDS_ELICITATION: &str = "\n\nTier 2: tau asks the user before each call, through MCP elicitation; a client without elicitation is refused.";

/// What tau's card says of every `run_command`: what the sandbox allows it.
fn sandbox_card() -> Value {
    json!({"notes": [{"level": "info", "label": "sandbox", "text": "writes: workspace only · network: none"}]})
}

/// The question tau's elicitation asks for `run_command` with `{"command": COMMAND}`.
fn question(command: &str) -> Value {
    json!({
        "message": format!("tau asks before it runs a tier-2 tool.\nTool: run_command\nEffect: runs a shell command in the workspace — code the agent wrote\nsandbox: writes: workspace only · network: none\nArguments: {}", json!({"command": command})),
        "requestedSchema": {
            "type": "object",
            "properties": {"approve": {"type": "boolean", "title": "Run it?", "description": "Set to true to run this call once.", "default": false}},
            "required": ["approve"]
        }
    })
}

/// Every tool's name and the hints its tier implies, as the client listed them.
fn listed_hints(out: &Value) -> Vec<(String, Value)> {
    out["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap().to_owned(),
                t["annotations"].clone(),
            )
        })
        .collect()
}

fn expected_hints() -> Vec<(String, Value)> {
    let read = json!({"readOnlyHint": true});
    let write = json!({"readOnlyHint": false, "destructiveHint": false});
    let physical = json!({"readOnlyHint": false, "destructiveHint": true});
    [
        ("append_note", &write),
        ("clock", &read),
        ("list_dir", &read),
        ("mqtt_publish", &physical),
        ("read_file", &read),
        ("run_command", &physical),
        ("write_file", &write),
    ]
    .into_iter()
    .map(|(name, hints)| (name.to_owned(), hints.clone()))
    .collect()
}

/// The clock's answer changes every second; this checks its shape and pins it.
fn pin_clock(mut out: Value) -> Value {
    let text = out["calls"][0]["text"][0].as_str().unwrap();
    let reading: Value = serde_json::from_str(text).unwrap();
    assert!(reading["rfc3339"].is_string(), "{reading}");
    out["calls"][0]["text"] = json!(["<clock>"]);
    out
}

fn pin_clock_events(events: Vec<Value>) -> Vec<Value> {
    events
        .into_iter()
        .map(|mut e| {
            if e["tool"] == "clock" && e["type"] == "tool_call" {
                e["result_summary"] = json!("<clock>");
            }
            e
        })
        .collect()
}

/// What the client saw when it called `clock` and `run_command` and was refused.
fn assert_refused_session(out: &Value, tau: &Tau, ids: [&str; 2]) {
    assert_eq!(listed_hints(out), expected_hints());
    let run_command = out["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "run_command")
        .unwrap();
    assert_eq!(run_command["inputSchema"]["required"], json!(["command"]));
    // Tier-2 tools say they need a client with elicitation; others say nothing of it.
    for tool in out["tools"].as_array().unwrap() {
        let description = tool["description"].as_str().unwrap();
        let physical = tool["annotations"]["destructiveHint"] == json!(true);
        assert_eq!(
            description.ends_with(NEEDS_ELICITATION),
            physical,
            "{description}"
        );
        let meta = if physical {
            json!({"tau/tier": 2, "tau/needsElicitation": true})
        } else {
            Value::Null
        };
        assert_eq!(tool["_meta"], meta, "{tool}");
    }
    assert_eq!(
        pin_clock(out.clone())["calls"],
        json!([
            {"tool": "clock", "isError": false, "text": ["<clock>"]},
            {"tool": "run_command", "isError": true, "text": [NOBODY_ASKED]},
        ])
    );
    assert_eq!(out["questions"], json!([]));
    assert_eq!(
        pin_clock_events(tau.audit_events()),
        vec![
            json!({"type": "tool_call", "tool": "clock", "tier": 0, "tool_use_id": ids[0], "arguments": {}, "status": "success", "approval": "not_required", "decided_by": {"kind": "policy"}, "result_summary": "<clock>"}),
            json!({"type": "approval_requested", "approval_id": "ap_1", "tool": "run_command", "tier": 2, "effect": EFFECT, "call_id": ids[1], "arguments": {"command": "touch proof.txt"}, "channel": "mcp", "card": sandbox_card()}),
            json!({"type": "error", "where": "approver", "message": "approver 'mcp_no_elicitation' failed: this MCP client does not support elicitation, so nobody could be asked", "tool": "run_command", "tool_use_id": ids[1]}),
            json!({"type": "approval", "approval_id": "ap_1", "tool": "run_command", "tier": 2, "tool_use_id": ids[1], "arguments": {"command": "touch proof.txt"}, "decision": "rejected", "decided_by": {"kind": "approver_failed"}, "approver": "mcp_no_elicitation", "channel": "mcp"}),
            json!({"type": "tool_call", "tool": "run_command", "tier": 2, "tool_use_id": ids[1], "arguments": {"command": "touch proof.txt"}, "status": "refused", "approval": "failed", "decided_by": {"kind": "approver_failed"}, "approval_id": "ap_1", "result_summary": NOBODY_ASKED}),
        ]
    );
    assert!(!tau.workspace().join("proof.txt").exists());
    assert!(
        tau.audit().iter().all(|line| line["session"] == "mcp"),
        "every line names the mcp session"
    );
}

const CALLS: [&str; 6] = [
    "--call",
    "clock",
    "{}",
    "--call",
    "run_command",
    r#"{"command": "touch proof.txt"}"#,
];

#[test]
fn a_python_client_over_stdio_lists_calls_tier_0_and_is_refused_tier_2() {
    let Some(python) = peers::python() else {
        return;
    };
    let tau = Tau::new();
    let mut args: Vec<String> = CALLS.iter().map(|s| (*s).to_owned()).collect();
    args.extend(peers::stdio_args(&tau, None));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = peers::client(&python, &tau, &args);
    assert_refused_session(&out, &tau, ["mcp-1-4", "mcp-1-5"]);
}

#[test]
fn a_python_client_over_http_lists_calls_tier_0_and_is_refused_tier_2() {
    let Some(python) = peers::python() else {
        return;
    };
    let tau = Tau::new();
    let server = HttpTau::start(&tau, &[], &[]);
    let token = server.token.clone().unwrap();
    let mut args = CALLS.to_vec();
    args.extend(["--http", &server.url, "--token", &token]);
    let out = peers::client(&python, &tau, &args);
    drop(server);
    // The client first probes with a discover request, answered by a connection of its own.
    assert_refused_session(&out, &tau, ["mcp-2-4", "mcp-2-5"]);
}

#[test]
fn elicitation_asks_the_clients_user_and_only_a_yes_runs_the_call() {
    let Some(python) = peers::python() else {
        return;
    };
    let tau = Tau::new();
    let run = |answer: &str, file: &str| {
        let arguments = json!({"command": format!("echo ran > {file}")}).to_string();
        let mut args: Vec<String> = vec![
            "--elicit".into(),
            answer.into(),
            "--call".into(),
            "run_command".into(),
            arguments,
        ];
        args.extend(peers::stdio_args(&tau, None));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        peers::client(&python, &tau, &args)
    };

    let accepted = run("accept", "yes.txt");
    assert_eq!(
        accepted["questions"],
        json!([question("echo ran > yes.txt")])
    );
    assert_eq!(accepted["calls"][0]["isError"], json!(false));
    assert_eq!(
        std::fs::read_to_string(tau.workspace().join("yes.txt")).unwrap(),
        "ran\n"
    );
    for (answer, file) in [
        ("decline", "no.txt"),
        ("cancel", "cancel.txt"),
        ("accept-false", "false.txt"),
    ] {
        let refused = run(answer, file);
        assert_eq!(
            refused["questions"],
            json!([question(&format!("echo ran > {file}"))])
        );
        assert_eq!(
            refused["calls"],
            json!([{"tool": "run_command", "isError": true, "text": [REFUSAL]}]),
            "{answer}"
        );
        assert!(!tau.workspace().join(file).exists(), "{answer}");
    }
    let decisions: Vec<(Value, Value)> = tau
        .audit_events()
        .into_iter()
        .filter(|e| e["type"] == "approval")
        .map(|e| (e["decision"].clone(), e["approver"].clone()))
        .collect();
    let elicited = json!("mcp_elicitation");
    assert_eq!(
        decisions,
        vec![
            (json!("approved"), elicited.clone()),
            (json!("rejected"), elicited.clone()),
            (json!("rejected"), elicited.clone()),
            (json!("rejected"), elicited),
        ]
    );
}

#[test]
fn http_with_a_token_turns_away_requests_without_it() {
    let tau = Tau::new();
    let config = tau.config("[mcp.server]\ntoken_env = \"TAU_MCP_TOKEN\"\n");
    let args = ["--config", config.to_str().unwrap()];
    let server = HttpTau::start(&tau, &args, &[("TAU_MCP_TOKEN", "s3cret")]);
    assert_eq!(
        server.token, None,
        "a configured token is not written to the home"
    );
    assert!(!tau.home().join("mcp-token").exists());
    for headers in [
        vec![],
        vec![("Authorization", "Bearer wrong")],
        vec![("Authorization", "s3cret")],
    ] {
        assert_eq!(
            peers::post(&server.addr, INIT, &headers),
            (401, "a bearer token is required\n".to_owned()),
            "{headers:?}"
        );
    }
    let Some(python) = peers::python() else {
        return;
    };
    let out = peers::client(
        &python,
        &tau,
        &[
            "--call",
            "clock",
            "{}",
            "--http",
            &server.url,
            "--token",
            "s3cret",
        ],
    );
    assert_eq!(
        pin_clock(out)["calls"],
        json!([{"tool": "clock", "isError": false, "text": ["<clock>"]}])
    );
}

const INIT: &[u8] = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"elicitation":{}},"clientInfo":{"name":"t","version":"1"}}}"#;

#[test]
fn http_on_loopback_without_a_configured_token_still_needs_one() {
    // Any local process can reach a loopback port. Without a token it could declare
    // elicitation, answer its own question with approve: true and run tier-2 tools.
    let tau = Tau::new();
    let server = HttpTau::start(&tau, &[], &[]);
    let path = tau.home().join("mcp-token");
    assert_eq!(
        server.said,
        format!(
            "tau mcp: the bearer token is in {}\ntau mcp: serving {}\n",
            path.display(),
            server.url
        )
    );
    let token = server.token.clone().unwrap();
    assert_eq!(token.len(), 64, "{token}");
    assert!(token.bytes().all(|b| b.is_ascii_hexdigit()), "{token}");
    assert_eq!(common::mode(&path), 0o600);
    for headers in [
        vec![],
        vec![("Authorization", "Bearer ")],
        vec![("Authorization", "Bearer wrong")],
    ] {
        assert_eq!(
            peers::post(&server.addr, INIT, &headers),
            (401, "a bearer token is required\n".to_owned()),
            "{headers:?}"
        );
    }
    let bearer = format!("Bearer {token}");
    let (status, _) = peers::post(&server.addr, INIT, &[("Authorization", &bearer)]);
    assert_eq!(status, 200);

    // The next start serves with the same token.
    drop(server);
    let again = HttpTau::start(&tau, &[], &[]);
    assert_eq!(again.token, Some(token));

    let Some(python) = peers::python() else {
        return;
    };
    let output = peers::client_output(
        &python,
        &tau,
        &[
            "--elicit",
            "accept",
            "--call",
            "run_command",
            r#"{"command": "touch proof.txt"}"#,
            "--http",
            &again.url,
        ],
    );
    assert!(
        !output.status.success(),
        "a client without the token got in"
    );
    assert!(!tau.workspace().join("proof.txt").exists());
    assert!(
        tau.audit_events()
            .iter()
            .all(|e| e["tool"] != "run_command"),
        "{:?}",
        tau.audit_events()
    );
}

#[test]
fn an_address_off_loopback_needs_a_token_of_its_own_and_a_named_token_must_be_set() {
    let tau = Tau::new();
    let run = tau.run(&["mcp", "--http", "0.0.0.0:0"], "");
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_eq!(
        run.stderr,
        "tau: refusing to serve MCP on 0.0.0.0:0, which is not a loopback address, with a generated token: set [mcp.server] token_env to an environment variable holding a token of your own\n"
    );
    let config = tau.config("[mcp.server]\ntoken_env = \"TAU_MCP_TOKEN\"\n");
    let run = tau.run(
        &[
            "--config",
            config.to_str().unwrap(),
            "mcp",
            "--http",
            "127.0.0.1:0",
        ],
        "",
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_eq!(
        run.stderr,
        "tau: mcp.server.token_env: the environment variable TAU_MCP_TOKEN is not set or empty\n"
    );
    assert!(!tau.home().exists(), "nothing is written");
}

#[test]
fn the_mcp_inspector_cli_calls_tier_0_and_is_refused_tier_2() {
    let Some(inspector) = peers::npm_bin("mcp-inspector") else {
        return;
    };
    let tau = Tau::new();
    let inspect = |args: &[&str]| {
        let output = std::process::Command::new(&inspector)
            .args([
                "--cli",
                env!("CARGO_BIN_EXE_tau"),
                "--home",
                tau.home().to_str().unwrap(),
                "mcp",
            ])
            .args(args)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", tau.dir.path())
            .output()
            .unwrap();
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    let listed = inspect(&["--method", "tools/list"]);
    let listed: Value = serde_json::from_str(&listed).unwrap_or_else(|e| panic!("{e}: {listed}"));
    assert_eq!(listed_hints(&listed), expected_hints());

    let clock = inspect(&["--method", "tools/call", "--tool-name", "clock"]);
    let clock: Value = serde_json::from_str(&clock).unwrap_or_else(|e| panic!("{e}: {clock}"));
    assert_eq!(clock["isError"], json!(false));

    let refused = inspect(&[
        "--method",
        "tools/call",
        "--tool-name",
        "run_command",
        "--tool-arg",
        "command=touch proof.txt",
    ]);
    let refused: Value = serde_json::Deserializer::from_str(&refused)
        .into_iter::<Value>()
        .next()
        .unwrap()
        .unwrap();
    assert_eq!(
        refused,
        json!({"content": [{"type": "text", "text": NOBODY_ASKED}], "isError": true})
    );
    assert!(!tau.workspace().join("proof.txt").exists());
    let calls: Vec<(Value, Value)> = tau
        .audit_events()
        .into_iter()
        .filter(|e| e["type"] == "tool_call")
        .map(|e| (e["tool"].clone(), e["status"].clone()))
        .collect();
    assert_eq!(
        calls,
        vec![
            (json!("clock"), json!("success")),
            (json!("run_command"), json!("refused"))
        ]
    );
}

#[test]
fn an_unanswered_question_times_out_and_refuses() {
    let Some(python) = peers::python() else {
        return;
    };
    let tau = Tau::new();
    let config = tau.config("[approval]\ntimeout_seconds = 1\n");
    let mut args: Vec<String> = [
        "--elicit",
        "silent",
        "--call",
        "run_command",
        r#"{"command": "touch proof.txt"}"#,
    ]
    .map(str::to_owned)
    .to_vec();
    args.extend(peers::stdio_args(&tau, Some(&config)));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = peers::client(&python, &tau, &args);
    assert_eq!(out["questions"], json!([question("touch proof.txt")]));
    assert_eq!(
        out["calls"],
        json!([{"tool": "run_command", "isError": true, "text": [REFUSAL]}])
    );
    assert!(!tau.workspace().join("proof.txt").exists());
    let arguments = json!({"command": "touch proof.txt"});
    assert_eq!(
        tau.audit_events(),
        vec![
            json!({"type": "approval_requested", "approval_id": "ap_1", "tool": "run_command", "tier": 2, "effect": EFFECT, "call_id": "mcp-1-4", "arguments": arguments, "channel": "mcp", "deadline": "<deadline>", "card": sandbox_card()}),
            json!({"type": "approval", "approval_id": "ap_1", "tool": "run_command", "tier": 2, "tool_use_id": "mcp-1-4", "arguments": arguments, "decision": "timeout", "decided_by": {"kind": "timeout"}, "approver": "mcp_elicitation", "channel": "mcp"}),
            json!({"type": "error", "where": "approver", "message": "no answer before the approval timeout", "tool": "run_command", "tool_use_id": "mcp-1-4"}),
            json!({"type": "tool_call", "tool": "run_command", "tier": 2, "tool_use_id": "mcp-1-4", "arguments": arguments, "status": "refused", "approval": "timeout", "decided_by": {"kind": "timeout"}, "approval_id": "ap_1", "result_summary": REFUSAL}),
        ]
    );
}
