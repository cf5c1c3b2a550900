//! A model that is down or lacks the model is said at start, with what to do about it,
//! and a turn that fails on a pipe makes `tau chat` exit 1: a closed port (Ollama not
//! running) and a scripted server that answers like an Ollama without the model.

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::Tau;
use pretty_assertions::assert_eq;

/// A port nothing listens on.
fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// An Ollama without `llama3.2`: its model list is empty and a chat answers 404 with
/// Ollama's own words.
fn ollama_without_the_model() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { break };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request_line = String::new();
            if reader.read_line(&mut request_line).is_err() {
                continue;
            }
            let mut length = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = value.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let (status, body) = if request_line.starts_with("GET /v1/models") {
                ("200 OK", r#"{"object":"list","data":[]}"#.to_owned())
            } else {
                (
                    "404 Not Found",
                    r#"{"error":{"message":"model \"llama3.2\" not found, try pulling it first","type":"api_error","param":null,"code":null}}"#.to_owned(),
                )
            };
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    port
}

fn ollama_at(tau: &Tau, port: u16) -> std::path::PathBuf {
    tau.config(&format!(
        "[model]\nspec = \"ollama:llama3.2\"\nbase_url = \"http://127.0.0.1:{port}/v1\"\n"
    ))
}

#[test]
fn with_ollama_down_chat_says_so_at_start_and_a_failed_turn_on_a_pipe_exits_1() {
    let tau = Tau::new();
    let port = closed_port();
    let config = ollama_at(&tau, port);
    let run = tau.run(
        &[
            "--config",
            config.to_str().unwrap(),
            "chat",
            "--session",
            "s1",
        ],
        "hello\n",
    );
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    let url = format!("http://127.0.0.1:{port}/v1/");
    let first = run.stderr.lines().next().unwrap();
    assert!(
        first.starts_with(&format!("tau: warning: cannot reach Ollama at {url}: ")),
        "{}",
        run.stderr
    );
    let hint =
        "Is `ollama serve` running? Then `ollama pull llama3.2`, if the model is not there yet.";
    assert!(first.ends_with(hint), "{first}");
    // The turn's own notice carries the same hint, on stdout with the transcript.
    assert!(run.stdout.contains(hint), "{}", run.stdout);
    assert!(
        run.stdout.starts_with("new session s1\nyou> hello\n"),
        "{}",
        run.stdout
    );
}

#[test]
fn an_ollama_without_the_model_is_told_how_to_pull_it() {
    let tau = Tau::new();
    let port = ollama_without_the_model();
    let config = ollama_at(&tau, port);
    let run = tau.run(
        &[
            "--config",
            config.to_str().unwrap(),
            "chat",
            "--session",
            "s1",
        ],
        "hello\nand again\n",
    );
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(
        run.stderr.lines().next().unwrap(),
        format!(
            "tau: warning: Ollama at http://127.0.0.1:{port}/v1/ has no model \"llama3.2\". `ollama pull llama3.2` fetches it."
        )
    );
    // Both prompts were tried, and each says what to do.
    assert_eq!(
        run.stdout
            .matches("`ollama pull llama3.2` fetches it.")
            .count(),
        2,
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("HTTP 404: model \"llama3.2\" not found, try pulling it first"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_model_that_answers_is_not_warned_about_and_a_good_pipe_exits_0() {
    let tau = Tau::new();
    let model = tau.replay(&serde_json::json!([common::answer("Hi.")]));
    let run = tau.run(&["--model", &model, "chat", "--session", "s1"], "hello\n");
    assert_eq!((run.code, run.stderr.as_str()), (0, ""));
}

#[test]
fn tau_serve_warns_at_start_and_serves_all_the_same() {
    let tau = Tau::new();
    let port = closed_port();
    let config = tau.config(&format!(
        "[web]\nlisten = \"127.0.0.1:0\"\n[model]\nspec = \"ollama:llama3.2\"\nbase_url = \"http://127.0.0.1:{port}/v1\"\n"
    ));
    let mut child = tau
        .command(&["--config", config.to_str().unwrap(), "serve"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (sender, lines) = std::sync::mpsc::channel();
    for stream in [Box::new(stderr) as Box<dyn Read + Send>, Box::new(stdout)] {
        let sender = sender.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stream).lines() {
                let Ok(line) = line else { break };
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut seen = Vec::new();
    let (mut warned, mut serving) = (false, false);
    while !(warned && serving) {
        let left = deadline.saturating_duration_since(Instant::now());
        let Ok(line) = lines.recv_timeout(left) else {
            let _ = child.kill();
            panic!("never saw the warning and TauBar: {seen:?}");
        };
        warned |= line.starts_with("tau serve: warning: cannot reach Ollama at")
            && line.ends_with("Is `ollama serve` running? Then `ollama pull llama3.2`, if the model is not there yet.");
        serving |= line.starts_with("tau serve: TauBar at http://");
        seen.push(line);
    }
    let _ = child.kill();
    let _ = child.wait();
}
