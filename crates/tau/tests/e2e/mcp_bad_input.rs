//! `tau mcp` against bad input: lines that are not JSON, too long, not JSON-RPC, unknown
//! methods and tool names outside the allowed set each get an error response, and the
//! server keeps serving the same client (stdio) and other clients (HTTP).

use crate::common;

use std::io::{Read, Write};
use std::process::Stdio;

use common::Tau;
use common::peers::{self, HttpTau};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

const SMALL: &str = "[mcp.server]\nmax_message_bytes = 4096\n";

fn call(id: u64, name: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": {}}}).to_string()
}

fn unknown(tool: &str) -> Value {
    json!({"content": [{"type": "text", "text": format!("Tool '{tool}' is not registered; it was not run.")}], "isError": true})
}

#[test]
fn stdio_answers_every_bad_line_and_keeps_serving() {
    let tau = Tau::new();
    let config = tau.config(SMALL);
    let mut child = tau
        .command(&["--config", config.to_str().unwrap(), "mcp"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let oversized =
        json!({"jsonrpc": "2.0", "id": 99, "method": "ping", "params": {"pad": "x".repeat(5000)}});
    let lines = [
        "{nope".to_owned(),
        oversized.to_string(),
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}).to_string(),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
        json!({"jsonrpc": "2.0", "id": 2, "method": "no/such_method"}).to_string(),
        "[1, 2]".to_owned(),
        "   ".to_owned(),
        call(3, "rm -rf /"),
        call(4, "clear\u{1b}[2J\u{202e}"),
        call(5, &"n".repeat(500)),
        call(6, "clock"),
    ];
    let mut stdin = child.stdin.take().unwrap();
    for line in &lines {
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
    }
    drop(stdin);
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    assert!(child.wait().unwrap().success());

    let replies: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut without_id: Vec<String> = replies
        .iter()
        .filter(|r| r.get("id").is_none_or(Value::is_null))
        .map(Value::to_string)
        .collect();
    without_id.sort();
    let mut expected_without_id = vec![
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "Parse error: key must be a string at line 1 column 2"}}).to_string(),
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message": "Invalid request: a message may have at most 4096 bytes"}}).to_string(),
        json!({"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid request"}}).to_string(),
    ];
    expected_without_id.sort();
    assert_eq!(without_id, expected_without_id);

    let by_id = |id: u64| {
        replies
            .iter()
            .find(|r| r["id"] == json!(id))
            .unwrap()
            .clone()
    };
    assert_eq!(
        by_id(1)["result"]["serverInfo"],
        json!({"name": "tau", "version": env!("CARGO_PKG_VERSION")})
    );
    assert_eq!(by_id(1)["result"]["protocolVersion"], json!("2025-06-18"));
    assert_eq!(
        by_id(2),
        json!({"jsonrpc": "2.0", "id": 2, "error": {"code": -32601, "message": "no/such_method"}})
    );
    assert_eq!(by_id(3)["result"], unknown("rm -rf /"));
    assert_eq!(by_id(4)["result"], unknown("clear\\u{1b}[2J\\u{202e}"));
    assert_eq!(by_id(5)["result"], unknown(&format!("{}…", "n".repeat(64))));
    let clock = by_id(6)["result"].clone();
    assert_eq!(clock["isError"], json!(false));
    let reading: Value =
        serde_json::from_str(clock["content"][0]["text"].as_str().unwrap()).unwrap();
    assert!(reading["rfc3339"].is_string(), "{reading}");
    assert_eq!(replies.len(), 3 + 6, "{stdout}");

    // Calls run concurrently, so their records may come in any order.
    let mut refused: Vec<String> = tau
        .audit_events()
        .into_iter()
        .filter(|e| e["type"] == "tool_call" && e["status"] == "unknown_tool")
        .map(|e| e["tool"].as_str().unwrap().to_owned())
        .collect();
    refused.sort();
    assert_eq!(
        refused,
        vec![
            "clear\\u{1b}[2J\\u{202e}".to_owned(),
            format!("{}…", "n".repeat(64)),
            "rm -rf /".to_owned(),
        ]
    );
}

#[test]
fn http_answers_garbage_and_other_clients_are_still_served() {
    let tau = Tau::new();
    let config = tau.config(SMALL);
    let server = HttpTau::start(&tau, &["--config", config.to_str().unwrap()], &[]);
    let parse_error = json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "Parse error: key must be a string at line 1 column 2"}});
    let too_large = json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message": "Invalid request: a message may have at most 4096 bytes"}});
    let oversized =
        json!({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": "x".repeat(5000)}})
            .to_string();
    let cases: [(&[u8], (u16, String)); 4] = [
        (b"{nope", (400, parse_error.to_string())),
        (oversized.as_bytes(), (413, too_large.to_string())),
        (
            br#"{"jsonrpc":"2.0","id":2,"method":"no/such_method"}"#,
            (400, "Bad Request: Session ID is required".to_owned()),
        ),
        (
            b"[1, 2]",
            (
                415,
                "fail to deserialize request body unrecognized JSON-RPC message".to_owned(),
            ),
        ),
    ];
    let bearer = format!("Bearer {}", server.token.as_deref().unwrap());
    for (body, expected) in cases {
        assert_eq!(
            peers::post(&server.addr, body, &[("Authorization", &bearer)]),
            expected
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
            "rm -rf /",
            "{}",
            "--call",
            "clock",
            "{}",
            "--http",
            &server.url,
            "--token",
            server.token.as_deref().unwrap(),
        ],
    );
    assert_eq!(
        out["calls"][0],
        json!({"tool": "rm -rf /", "isError": true, "text": ["Tool 'rm -rf /' is not registered; it was not run."]})
    );
    assert_eq!(out["calls"][1]["isError"], json!(false));
}
