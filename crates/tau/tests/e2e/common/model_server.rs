//! A model server that keeps no state: an OpenAI-compatible `/v1/chat/completions` that
//! answers from the request alone. After a person's message it asks for one tool call;
//! after a tool's result it answers with a text. So a hub that restarts between the two
//! picks the conversation up exactly where its stored history stands.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

pub struct ModelServer {
    pub port: u16,
    /// Every request body, in order.
    pub requests: Arc<Mutex<Vec<Value>>>,
}

impl ModelServer {
    /// Asks for `tool` with `arguments` after a prompt, says `answer` after a result.
    pub fn start(tool: &str, arguments: &Value, answer: &str) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&requests);
        let (tool, arguments, answer) = (tool.to_owned(), arguments.to_string(), answer.to_owned());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { break };
                let Some(body) = read_body(&mut stream) else {
                    continue;
                };
                let last_role = body["messages"]
                    .as_array()
                    .and_then(|m| m.last())
                    .map(|m| m["role"].as_str().unwrap_or("").to_owned());
                // A call id of its own per turn: the conversation's length names it.
                let call_id = format!("call_{}", body["messages"].as_array().map_or(0, Vec::len));
                seen.lock().unwrap().push(body);
                let events = if last_role.as_deref() == Some("tool") {
                    vec![
                        chunk(&json!({"role": "assistant", "content": answer})),
                        finish("stop"),
                    ]
                } else {
                    vec![
                        chunk(&json!({"role": "assistant", "content": ""})),
                        chunk(
                            &json!({"tool_calls": [{"index": 0, "id": call_id, "type": "function",
                            "function": {"name": tool, "arguments": arguments}}]}),
                        ),
                        finish("tool_calls"),
                    ]
                };
                let mut body = String::new();
                for event in events {
                    body.push_str(&format!("data: {event}\n\n"));
                }
                body.push_str("data: [DONE]\n\n");
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = stream.write_all(head.as_bytes());
                let _ = stream.write_all(body.as_bytes());
            }
        });
        Self { port, requests }
    }

    /// The `--model` spec for it.
    pub fn spec(&self) -> String {
        format!(
            "openai-compatible:stateless@http://127.0.0.1:{}/v1",
            self.port
        )
    }
}

fn chunk(delta: &Value) -> String {
    json!({"id": "c1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta}]})
        .to_string()
}

fn finish(reason: &str) -> String {
    json!({"id": "c1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})
        .to_string()
}

fn read_body(stream: &mut std::net::TcpStream) -> Option<Value> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut length = 0;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().ok()?;
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    serde_json::from_slice(&body).ok()
}
