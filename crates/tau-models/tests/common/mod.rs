//! A scripted HTTP/1.1 server on 127.0.0.1:0 that plays one reply per request and records
//! what it was sent, plus helpers to run a model against it.
#![cfg(test)]
#![allow(dead_code)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use tau_agent::{
    ContentBlock, Message, Model, ModelError, OwnedModelRequest, Role, StreamChunk, ToolResult,
    ToolResultContent, ToolResultStatus, ToolSpec, ToolUse,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

pub const REFUSAL: &str =
    "The user did not approve this action: mqtt_publish. Do not perform it; tell the user briefly.";
pub const SYSTEM: &str = "You are tau, a careful home assistant.";

/// One scripted answer.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    /// Written one by one as HTTP chunks, with `pause` between them.
    pub pieces: Vec<Vec<u8>>,
    pub pause: Duration,
    /// Close without the final chunk, as a server that died mid-stream.
    pub cut: bool,
    /// Send the headers, then nothing, and keep the connection open.
    pub hang: bool,
}

impl Reply {
    pub fn new(status: u16, content_type: &str, pieces: Vec<Vec<u8>>) -> Self {
        Self {
            status,
            headers: vec![("content-type".into(), content_type.into())],
            pieces,
            pause: Duration::from_millis(2),
            cut: false,
            hang: false,
        }
    }

    /// An SSE stream; each item is one `data:` event (or a whole event if it has `\n`).
    pub fn sse<S: AsRef<str>>(events: impl IntoIterator<Item = S>) -> Self {
        let pieces = events
            .into_iter()
            .map(|event| {
                let event = event.as_ref();
                if event.starts_with("event:") || event.starts_with("data:") {
                    format!("{event}\n\n").into_bytes()
                } else {
                    format!("data: {event}\n\n").into_bytes()
                }
            })
            .collect();
        Self::new(200, "text/event-stream", pieces)
    }

    pub fn json(status: u16, body: &Value) -> Self {
        Self::new(
            status,
            "application/json",
            vec![body.to_string().into_bytes()],
        )
    }

    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    pub fn cut(mut self) -> Self {
        self.cut = true;
        self
    }

    pub fn hang(mut self) -> Self {
        self.hang = true;
        self
    }
}

/// One request as the server saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    /// Lower-case names.
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

pub struct TestServer {
    /// `http://127.0.0.1:PORT/`
    pub url: String,
    requests: Arc<Mutex<Vec<Recorded>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl TestServer {
    pub async fn start(replies: Vec<Reply>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let replies = Arc::new(Mutex::new(VecDeque::from(replies)));
        let recorded = Arc::clone(&requests);
        let task = tokio::spawn(async move {
            loop {
                let Ok((socket, _)) = listener.accept().await else {
                    return;
                };
                let recorded = Arc::clone(&recorded);
                let replies = Arc::clone(&replies);
                tokio::spawn(async move {
                    serve(socket, recorded, replies).await;
                });
            }
        });
        Self {
            url,
            requests,
            task,
        }
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }

    /// The only request, or a panic naming how many came.
    pub fn request(&self) -> Recorded {
        let requests = self.requests();
        assert_eq!(requests.len(), 1, "{requests:#?}");
        requests.into_iter().next().unwrap()
    }
}

async fn serve(
    mut socket: TcpStream,
    recorded: Arc<Mutex<Vec<Recorded>>>,
    replies: Arc<Mutex<VecDeque<Reply>>>,
) {
    let Some(request) = read_request(&mut socket).await else {
        return;
    };
    recorded.lock().unwrap().push(request);
    let reply = replies.lock().unwrap().pop_front();
    let reply = reply.unwrap_or_else(|| Reply::json(500, &json!({"error": "no scripted reply"})));
    let mut head = format!("HTTP/1.1 {} Scripted\r\n", reply.status);
    for (name, value) in &reply.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("transfer-encoding: chunked\r\nconnection: close\r\n\r\n");
    if socket.write_all(head.as_bytes()).await.is_err() {
        return;
    }
    if reply.hang {
        tokio::time::sleep(Duration::from_secs(3600)).await;
        return;
    }
    for piece in &reply.pieces {
        let mut chunk = format!("{:x}\r\n", piece.len()).into_bytes();
        chunk.extend_from_slice(piece);
        chunk.extend_from_slice(b"\r\n");
        if socket.write_all(&chunk).await.is_err() {
            return;
        }
        let _ = socket.flush().await;
        tokio::time::sleep(reply.pause).await;
    }
    if !reply.cut {
        let _ = socket.write_all(b"0\r\n\r\n").await;
    }
    let _ = socket.shutdown().await;
}

async fn read_request(socket: &mut TcpStream) -> Option<Recorded> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let method = first.next()?.to_owned();
    let path = first.next()?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = buffer[head_end + 4..].to_vec();
    while body.len() < length {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    Some(Recorded {
        method,
        path,
        headers,
        body,
    })
}

/// Environment lookups for tests: only these names exist.
pub fn env_with(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
    move |name| {
        pairs
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| (*v).to_owned())
    }
}

/// Every chunk until the end or the first error; never waits more than 20 s.
pub async fn run(
    model: &dyn Model,
    request: OwnedModelRequest,
) -> Result<Vec<StreamChunk>, ModelError> {
    run_within(Duration::from_secs(20), model, request).await
}

/// [`run`] with another bound, for a real model on a slow machine.
pub async fn run_within(
    bound: Duration,
    model: &dyn Model,
    request: OwnedModelRequest,
) -> Result<Vec<StreamChunk>, ModelError> {
    tokio::time::timeout(bound, async {
        let mut stream = model.stream(request.as_request()).await?;
        let mut chunks = Vec::new();
        while let Some(chunk) = stream.next().await {
            chunks.push(chunk?);
        }
        Ok(chunks)
    })
    .await
    .expect("the model call hung")
}

/// The error of a call that must fail, wherever it surfaced.
pub async fn run_err(model: &dyn Model, request: OwnedModelRequest) -> ModelError {
    match run(model, request).await {
        Ok(chunks) => panic!("expected an error, got {chunks:#?}"),
        Err(error) => error,
    }
}

/// A conversation in tau's shape: a question, two tool calls, a success with JSON and the
/// refusal of a tier-2 call, then a follow-up; with the system prompt and two tool specs.
pub fn history_request() -> OwnedModelRequest {
    OwnedModelRequest {
        system_prompt: Some(SYSTEM.into()),
        messages: vec![
            Message::user_text("What time is it? Then switch the heater on."),
            Message {
                role: Role::Assistant,
                content: vec![
                    ContentBlock::Text("Checking.".into()),
                    ContentBlock::ToolUse(ToolUse {
                        tool_use_id: "call_clock".into(),
                        name: "clock".into(),
                        input: json!({"zone": "UTC"}),
                    }),
                    ContentBlock::ToolUse(ToolUse {
                        tool_use_id: "call_mqtt".into(),
                        name: "mqtt_publish".into(),
                        input: json!({"topic": "heater/set", "payload": "on"}),
                    }),
                ],
                source: None,
            },
            Message {
                role: Role::User,
                content: vec![
                    ContentBlock::ToolResult(ToolResult {
                        tool_use_id: "call_clock".into(),
                        status: ToolResultStatus::Success,
                        content: vec![ToolResultContent::Json(json!({"time": "12:00"}))],
                        source: None,
                    }),
                    ContentBlock::ToolResult(ToolResult::error_text("call_mqtt", REFUSAL)),
                ],
                source: None,
            },
        ],
        tool_specs: vec![
            ToolSpec {
                name: "clock".into(),
                description: "Tells the time.".into(),
                input_schema: json!({"type": "object", "properties": {"zone": {"type": "string"}}}),
                annotations: Default::default(),
            },
            ToolSpec {
                name: "mqtt_publish".into(),
                description: "Publishes an MQTT message.".into(),
                input_schema: json!({
                    "type": "object",
                    "properties": {"topic": {"type": "string"}, "payload": {"type": "string"}},
                    "required": ["topic", "payload"]
                }),
                annotations: Default::default(),
            },
        ],
    }
}

pub fn hello_request() -> OwnedModelRequest {
    OwnedModelRequest {
        system_prompt: None,
        messages: vec![Message::user_text("hello")],
        tool_specs: vec![],
    }
}

pub fn text(text: &str) -> StreamChunk {
    StreamChunk::ContentBlockDelta {
        delta: tau_agent::BlockDelta::Text { text: text.into() },
    }
}

pub fn input(json: &str) -> StreamChunk {
    StreamChunk::ContentBlockDelta {
        delta: tau_agent::BlockDelta::ToolUseInput { json: json.into() },
    }
}

pub fn tool_start(id: &str, name: &str) -> StreamChunk {
    StreamChunk::ContentBlockStart {
        start: tau_agent::BlockStart::ToolUse {
            tool_use_id: id.into(),
            name: name.into(),
        },
    }
}

pub fn text_start() -> StreamChunk {
    StreamChunk::ContentBlockStart {
        start: tau_agent::BlockStart::Text,
    }
}

pub fn message_start() -> StreamChunk {
    StreamChunk::MessageStart {
        role: Role::Assistant,
    }
}
