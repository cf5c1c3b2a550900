//! tau's secrets stay tau's: a provider key echoed back by a failing provider never reaches
//! the log or the screen, and no key or token reaches a command the model runs.

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use common::{Tau, answer, tool_call};
use serde_json::json;

const KEY: &str = "sk-test-LEAKED-7f3a9c21e5";

/// A provider that refuses every request with a 401 whose body quotes the key it was sent,
/// as OpenAI's does. Returns its base URL and the Authorization headers it received.
fn echoing_provider() -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut length = 0;
            let mut key = String::new();
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                let lower = line.to_ascii_lowercase();
                if let Some(value) = lower.strip_prefix("content-length:") {
                    length = value.trim().parse().unwrap_or(0);
                }
                if lower.starts_with("authorization:") {
                    key = line.trim_end().to_owned();
                    record.lock().unwrap().push(key.clone());
                }
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let sent = key.rsplit(' ').next().unwrap_or_default();
            let reply = json!({"error": {
                "message": format!("Incorrect API key provided: {sent}. You can find your API key at the dashboard."),
                "type": "invalid_request_error",
                "code": "invalid_api_key",
            }})
            .to_string();
            let _ = write!(
                stream,
                "HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{reply}",
                reply.len()
            );
        }
    });
    (url, seen)
}

fn chat_against_the_provider(log_filter: Option<&str>) -> (Tau, common::Run, Vec<String>) {
    let tau = Tau::new();
    let (url, seen) = echoing_provider();
    let config = tau.config(&format!(
        "[model]\nspec = \"openai-compatible:gpt-test@{url}\"\napi_key_env = \"TAU_TEST_PROVIDER_KEY\"\n[agent]\nretry_attempts = 1\n"
    ));
    let mut command = tau.command(&["--config", config.to_str().unwrap(), "chat"]);
    command.env("TAU_TEST_PROVIDER_KEY", KEY);
    if let Some(filter) = log_filter {
        command.env("TAU_LOG", filter);
    }
    let mut child = command
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"hello\n").unwrap();
    let run = common::Run::from(child.wait_with_output().unwrap());
    let seen = seen.lock().unwrap().clone();
    (tau, run, seen)
}

fn log_of(tau: &Tau) -> String {
    tau.log()
}

#[test]
fn a_provider_error_that_echoes_the_key_is_never_logged_or_shown_with_it() {
    for filter in [None, Some("trace")] {
        let (tau, run, seen) = chat_against_the_provider(filter);
        // The key went out, and the provider quoted it back.
        assert!(
            seen.iter().any(|header| header.ends_with(KEY)),
            "{seen:?}\n{}",
            run.stderr
        );
        let log = log_of(&tau);
        // The failure itself is recorded, just not the key.
        assert!(
            log.contains("401"),
            "{filter:?}: the log misses the failure:\n{log}"
        );
        for (place, text) in [
            ("log", &log),
            ("stderr", &run.stderr),
            ("stdout", &run.stdout),
        ] {
            assert!(
                !text.contains(KEY) && !text.contains("LEAKED"),
                "{filter:?}: the key is in the {place}:\n{text}"
            );
        }
    }
}

#[test]
fn a_command_never_sees_the_provider_key_or_tau_tokens() {
    let tau = Tau::new();
    let model = tau.replay(&json!([
        tool_call("t1", "run_command", &json!({"command": "env > seen.txt"})),
        answer("Done.")
    ]));
    let config = tau.config("[tools.command]\nenv = [\"GIT_AUTHOR_NAME\"]\n");
    let mut command = tau.command(&[
        "--config",
        config.to_str().unwrap(),
        "--model",
        &model,
        "chat",
        "--answers-from-stdin",
    ]);
    for (name, value) in [
        ("OPENAI_API_KEY", "sk-openai-secret"),
        ("ANTHROPIC_API_KEY", "sk-ant-secret"),
        ("AWS_BEARER_TOKEN_BEDROCK", "bedrock-secret"),
        ("TAU_MCP_TOKEN", "mcp-secret"),
        ("TAU_MQTT_PASSWORD", "mqtt-secret"),
        ("GIT_AUTHOR_NAME", "Ada"),
    ] {
        command.env(name, value);
    }
    let mut child = command
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"show me your env\ny\n")
        .unwrap();
    let run = common::Run::from(child.wait_with_output().unwrap());
    assert_eq!(run.code, 0, "{}", run.stderr);
    let seen = std::fs::read_to_string(tau.workspace().join("seen.txt")).unwrap();
    assert!(seen.contains("GIT_AUTHOR_NAME=Ada\n"), "{seen}");
    assert!(seen.contains("LANG=C.UTF-8\n"), "{seen}");
    for secret in [
        "secret",
        "OPENAI",
        "ANTHROPIC",
        "BEDROCK",
        "TAU_MCP",
        "MQTT",
    ] {
        assert!(
            !seen.contains(secret),
            "{secret} reached the command:\n{seen}"
        );
    }
}
