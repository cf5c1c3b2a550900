//! Bedrock ConverseStream against an in-test server speaking the AWS event-stream framing:
//! streaming, tool input deltas, usage, errors, and `toolResult.status: "error"`.
#![cfg(test)]

mod common;

use std::sync::Arc;

use common::*;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tau_agent::{AgentStop, Model, ModelError, StreamChunk, Usage};
use tau_models::{ModelConfig, build_model};

const KEY: &str = "bedrock-api-key-0123456789";
const ENV: &[(&str, &str)] = &[("AWS_BEARER_TOKEN_BEDROCK", KEY)];
const MODEL_ID: &str = "anthropic.claude-3-5-haiku-20241022-v1:0";

fn bedrock(server: &TestServer) -> Arc<dyn Model> {
    let config = ModelConfig {
        spec: format!("bedrock:{MODEL_ID}"),
        base_url: Some(server.url.clone()),
        temperature: Some(0.5),
        max_tokens: 256,
        request_timeout_seconds: 5,
        ..Default::default()
    };
    build_model(&config, &env_with(ENV)).unwrap()
}

/// One event-stream frame with string headers, written independently of the crate's decoder.
fn frame(headers: &[(&str, &str)], payload: &[u8]) -> Vec<u8> {
    let mut head = Vec::new();
    for (name, value) in headers {
        head.push(name.len() as u8);
        head.extend_from_slice(name.as_bytes());
        head.push(7);
        head.extend_from_slice(&(value.len() as u16).to_be_bytes());
        head.extend_from_slice(value.as_bytes());
    }
    let total = 12 + head.len() + payload.len() + 4;
    let mut out = Vec::new();
    out.extend_from_slice(&(total as u32).to_be_bytes());
    out.extend_from_slice(&(head.len() as u32).to_be_bytes());
    out.extend_from_slice(&crc32fast::hash(&out).to_be_bytes());
    out.extend_from_slice(&head);
    out.extend_from_slice(payload);
    out.extend_from_slice(&crc32fast::hash(&out).to_be_bytes());
    out
}

fn event(kind: &str, payload: &Value) -> Vec<u8> {
    frame(
        &[
            (":event-type", kind),
            (":content-type", "application/json"),
            (":message-type", "event"),
        ],
        payload.to_string().as_bytes(),
    )
}

fn exception(kind: &str, message: &str) -> Vec<u8> {
    frame(
        &[(":exception-type", kind), (":message-type", "exception")],
        json!({ "message": message }).to_string().as_bytes(),
    )
}

/// The frames as one body, cut into small HTTP chunks that split frames anywhere.
fn stream<const N: usize>(frames: [Vec<u8>; N]) -> Reply {
    let bytes: Vec<u8> = frames.into_iter().flatten().collect();
    let pieces = bytes.chunks(7).map(<[u8]>::to_vec).collect();
    Reply::new(200, "application/vnd.amazon.eventstream", pieces)
}

fn text_delta(index: u32, text: &str) -> Vec<u8> {
    event(
        "contentBlockDelta",
        &json!({"contentBlockIndex": index, "delta": {"text": text}, "p": "abcd"}),
    )
}

#[tokio::test]
async fn streams_text_and_tool_input_and_sends_converse_with_error_status() {
    let server = TestServer::start(vec![stream([
        event("messageStart", &json!({"role": "assistant", "p": "ab"})),
        text_delta(0, "Let me "),
        text_delta(0, "check."),
        event("contentBlockStop", &json!({"contentBlockIndex": 0})),
        event(
            "contentBlockStart",
            &json!({"contentBlockIndex": 1, "start": {"toolUse": {"toolUseId": "tooluse_1", "name": "clock"}}}),
        ),
        event(
            "contentBlockDelta",
            &json!({"contentBlockIndex": 1, "delta": {"toolUse": {"input": "{\"zone\": "}}}),
        ),
        event(
            "contentBlockDelta",
            &json!({"contentBlockIndex": 1, "delta": {"toolUse": {"input": "\"UTC\"}"}}}),
        ),
        event("contentBlockStop", &json!({"contentBlockIndex": 1})),
        event("messageStop", &json!({"stopReason": "tool_use"})),
        event(
            "metadata",
            &json!({"usage": {"inputTokens": 30, "outputTokens": 12, "totalTokens": 42}, "metrics": {"latencyMs": 120}}),
        ),
    ])])
    .await;
    let chunks = run(bedrock(&server).as_ref(), history_request())
        .await
        .unwrap();
    assert_eq!(
        chunks,
        vec![
            message_start(),
            text_start(),
            text("Let me "),
            text("check."),
            StreamChunk::ContentBlockStop,
            tool_start("tooluse_1", "clock"),
            input("{\"zone\": "),
            input("\"UTC\"}"),
            StreamChunk::ContentBlockStop,
            StreamChunk::MessageStop {
                stop_reason: AgentStop::ToolUse
            },
            StreamChunk::Metadata {
                usage: Usage {
                    input_tokens: 30,
                    output_tokens: 12,
                    total_tokens: 42
                }
            },
        ]
    );
    let request = server.request();
    assert_eq!(
        request.path,
        "/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/converse-stream"
    );
    assert_eq!(
        request.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(
        request.header("accept"),
        Some("application/vnd.amazon.eventstream")
    );
    assert_eq!(
        request.body,
        json!({
            "messages": [
                {"role": "user", "content": [{"text": "What time is it? Then switch the heater on."}]},
                {"role": "assistant", "content": [
                    {"text": "Checking."},
                    {"toolUse": {"toolUseId": "call_clock", "name": "clock", "input": {"zone": "UTC"}}},
                    {"toolUse": {"toolUseId": "call_mqtt", "name": "mqtt_publish", "input": {"topic": "heater/set", "payload": "on"}}}
                ]},
                {"role": "user", "content": [
                    {"toolResult": {"toolUseId": "call_clock", "status": "success", "content": [{"json": {"time": "12:00"}}]}},
                    {"toolResult": {"toolUseId": "call_mqtt", "status": "error", "content": [{"text": REFUSAL}]}}
                ]}
            ],
            "system": [{"text": SYSTEM}],
            "inferenceConfig": {"maxTokens": 256, "temperature": 0.5},
            "toolConfig": {"tools": [
                {"toolSpec": {
                    "name": "clock",
                    "description": "Tells the time.",
                    "inputSchema": {"json": {"type": "object", "properties": {"zone": {"type": "string"}}}}
                }},
                {"toolSpec": {
                    "name": "mqtt_publish",
                    "description": "Publishes an MQTT message.",
                    "inputSchema": {"json": {
                        "type": "object",
                        "properties": {"topic": {"type": "string"}, "payload": {"type": "string"}},
                        "required": ["topic", "payload"]
                    }}
                }}
            ]}
        })
    );
}

#[tokio::test]
async fn a_stop_without_usage_is_still_a_whole_message() {
    let server = TestServer::start(vec![stream([
        text_delta(0, "Hi"),
        event("messageStop", &json!({"stopReason": "max_tokens"})),
    ])])
    .await;
    let chunks = run(bedrock(&server).as_ref(), hello_request())
        .await
        .unwrap();
    assert_eq!(
        chunks,
        vec![
            message_start(),
            text_start(),
            text("Hi"),
            StreamChunk::ContentBlockStop,
            StreamChunk::MessageStop {
                stop_reason: AgentStop::MaxTokens
            },
        ]
    );
}

#[tokio::test]
async fn http_errors_map_to_throttling_overflow_and_a_named_key() {
    let server = TestServer::start(vec![
        Reply::json(
            429,
            &json!({"message": "Too many requests, please wait before trying again."}),
        )
        .header("x-amzn-errortype", "ThrottlingException")
        .header("retry-after", "2"),
        Reply::json(
            400,
            &json!({"message": "Input is too long for requested model."}),
        ),
        Reply::json(
            403,
            &json!({"message": "Authentication failed: Please make sure your API Key is valid."}),
        ),
    ])
    .await;
    let model = bedrock(&server);
    let Err(throttled) = model.stream(hello_request().as_request()).await else {
        panic!("a 429 must fail before streaming");
    };
    assert_eq!(
        throttled,
        ModelError::Throttled {
            retry_after: Some(std::time::Duration::from_secs(2)),
            message: format!(
                "Bedrock at {} answered HTTP 429: Too many requests, please wait before trying again.",
                server.url
            ),
        }
    );
    assert_eq!(
        run_err(model.as_ref(), hello_request()).await,
        ModelError::ContextWindowOverflow {
            message: "Input is too long for requested model.".into()
        }
    );
    let refused = run_err(model.as_ref(), hello_request()).await;
    assert_eq!(
        refused,
        ModelError::other(format!(
            "Bedrock at {} refused the API key from the environment variable AWS_BEARER_TOKEN_BEDROCK (HTTP 403): Authentication failed: Please make sure your API Key is valid.",
            server.url
        ))
    );
}

#[tokio::test]
async fn exceptions_inside_the_stream_are_typed() {
    let server = TestServer::start(vec![
        stream([
            event("messageStart", &json!({"role": "assistant"})),
            text_delta(0, "Hel"),
            exception("throttlingException", "Too many tokens, please wait."),
        ]),
        stream([
            event("messageStart", &json!({"role": "assistant"})),
            exception("modelStreamErrorException", "The model failed."),
        ]),
    ])
    .await;
    let model = bedrock(&server);
    assert_eq!(
        run_err(model.as_ref(), hello_request()).await,
        ModelError::Throttled {
            retry_after: None,
            message: format!(
                "Bedrock at {} is busy (throttlingException): Too many tokens, please wait.",
                server.url
            ),
        }
    );
    assert_eq!(
        run_err(model.as_ref(), hello_request()).await,
        ModelError::other(format!(
            "Bedrock at {} reported an error (modelStreamErrorException): The model failed.",
            server.url
        ))
    );
}

#[tokio::test]
async fn corrupt_or_truncated_frames_are_errors_not_panics() {
    let mut corrupt = text_delta(0, "Hi");
    let last = corrupt.len() - 1;
    corrupt[last] ^= 0x55;
    let whole = text_delta(0, "Hi");
    let half = whole[..whole.len() / 2].to_vec();
    let not_json = frame(
        &[
            (":event-type", "contentBlockDelta"),
            (":message-type", "event"),
        ],
        b"{not json",
    );
    let server = TestServer::start(vec![
        stream([
            event("messageStart", &json!({"role": "assistant"})),
            corrupt,
        ]),
        stream([event("messageStart", &json!({"role": "assistant"})), half]),
        stream([
            event("messageStart", &json!({"role": "assistant"})),
            not_json,
        ]),
        stream([text_delta(0, "Hi")]),
    ])
    .await;
    let model = bedrock(&server);
    assert_eq!(
        run_err(model.as_ref(), hello_request()).await,
        ModelError::other(format!(
            "Bedrock at {} sent a malformed response: event-stream frame checksum mismatch",
            server.url
        ))
    );
    assert_eq!(
        run_err(model.as_ref(), hello_request()).await,
        ModelError::incomplete("the stream ended inside an event-stream frame")
    );
    let not_json = run_err(model.as_ref(), hello_request()).await;
    assert!(
        matches!(&not_json, ModelError::Other { message } if message.contains("sent a malformed response: event payload:")),
        "{not_json:?}"
    );
    assert_eq!(
        run_err(model.as_ref(), hello_request()).await,
        ModelError::incomplete("the server closed the stream before the message was complete")
    );
}
