//! Anthropic Messages against an in-test server: streaming, tool input split across
//! deltas, usage, errors, and tool results carrying `is_error`.
#![cfg(test)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tau_agent::{AgentStop, Model, ModelError, StreamChunk, ToolSpec, Usage};
use tau_models::{ModelConfig, build_model};

const KEY: &str = "sk-ant-test-0123456789";
const ENV: &[(&str, &str)] = &[("ANTHROPIC_API_KEY", KEY)];

fn anthropic(server: &TestServer) -> Arc<dyn Model> {
    let config = ModelConfig {
        spec: "anthropic:claude-haiku-4-5".into(),
        base_url: Some(format!("{}v1", server.url)),
        temperature: Some(0.5),
        max_tokens: 256,
        request_timeout_seconds: 5,
        ..Default::default()
    };
    build_model(&config, &env_with(ENV)).unwrap()
}

fn event(kind: &str, data: &Value) -> String {
    format!("event: {kind}\ndata: {data}")
}

fn delta(index: u32, delta: &Value) -> String {
    event(
        "content_block_delta",
        &json!({"type": "content_block_delta", "index": index, "delta": delta}),
    )
}

fn message_start_event(input_tokens: u32) -> String {
    event(
        "message_start",
        &json!({"type": "message_start", "message": {
            "id": "msg_1", "type": "message", "role": "assistant", "content": [],
            "model": "claude-haiku-4-5", "stop_reason": null,
            "usage": {"input_tokens": input_tokens, "output_tokens": 1}
        }}),
    )
}

fn message_end(stop_reason: &str, output_tokens: u32) -> [String; 2] {
    [
        event(
            "message_delta",
            &json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null}, "usage": {"output_tokens": output_tokens}}),
        ),
        event("message_stop", &json!({"type": "message_stop"})),
    ]
}

#[tokio::test]
async fn streams_text_and_tool_input_and_sends_results_with_is_error() {
    let mut events = vec![
        message_start_event(25),
        event(
            "content_block_start",
            &json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
        event("ping", &json!({"type": "ping"})),
        delta(0, &json!({"type": "text_delta", "text": "Let me "})),
        delta(0, &json!({"type": "text_delta", "text": "check."})),
        event(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": 0}),
        ),
        event(
            "content_block_start",
            &json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "clock", "input": {}}}),
        ),
        delta(1, &json!({"type": "input_json_delta", "partial_json": ""})),
        delta(
            1,
            &json!({"type": "input_json_delta", "partial_json": "{\"zone\": "}),
        ),
        delta(
            1,
            &json!({"type": "input_json_delta", "partial_json": "\"UTC\"}"}),
        ),
        event(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": 1}),
        ),
    ];
    events.extend(message_end("tool_use", 30));
    let server = TestServer::start(vec![Reply::sse(events)]).await;
    let chunks = run(anthropic(&server).as_ref(), history_request())
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
            tool_start("toolu_1", "clock"),
            input("{\"zone\": \"UTC\"}"),
            StreamChunk::ContentBlockStop,
            StreamChunk::MessageStop {
                stop_reason: AgentStop::ToolUse
            },
            StreamChunk::Metadata {
                usage: Usage {
                    input_tokens: 25,
                    output_tokens: 30,
                    total_tokens: 55
                }
            },
        ]
    );
    let request = server.request();
    assert_eq!(request.path, "/v1/messages");
    assert_eq!(request.header("x-api-key"), Some(KEY));
    assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(
        request.body,
        json!({
            "model": "claude-haiku-4-5",
            "stream": true,
            "max_tokens": 256,
            "temperature": 0.5,
            "system": SYSTEM,
            "tools": [
                {
                    "name": "clock",
                    "description": "Tells the time.",
                    "input_schema": {"type": "object", "properties": {"zone": {"type": "string"}}}
                },
                {
                    "name": "mqtt_publish",
                    "description": "Publishes an MQTT message.",
                    "input_schema": {
                        "type": "object",
                        "properties": {"topic": {"type": "string"}, "payload": {"type": "string"}},
                        "required": ["topic", "payload"]
                    }
                }
            ],
            "messages": [
                {"role": "user", "content": "What time is it? Then switch the heater on."},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Checking."},
                    {"type": "tool_use", "id": "call_clock", "name": "clock", "input": {"zone": "UTC"}},
                    {"type": "tool_use", "id": "call_mqtt", "name": "mqtt_publish", "input": {"topic": "heater/set", "payload": "on"}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "call_clock", "content": "{\"time\":\"12:00\"}"},
                    {"type": "tool_result", "tool_use_id": "call_mqtt", "content": REFUSAL, "is_error": true}
                ]}
            ]
        })
    );
}

#[tokio::test]
async fn throttling_statuses_and_overload_events_are_throttled() {
    let overloaded =
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}});
    let server = TestServer::start(vec![
        Reply::json(
            429,
            &json!({"type": "error", "error": {"type": "rate_limit_error", "message": "Number of request tokens has exceeded your per-minute rate limit"}}),
        )
        .header("retry-after", "12"),
        Reply::json(529, &overloaded),
        Reply::sse([
            message_start_event(5),
            event("error", &overloaded),
        ]),
    ])
    .await;
    let model = anthropic(&server);
    let Err(first) = model.stream(hello_request().as_request()).await else {
        panic!("a 429 must fail before streaming");
    };
    assert_eq!(
        first,
        ModelError::Throttled {
            retry_after: Some(Duration::from_secs(12)),
            message: format!(
                "Anthropic at {}v1/ answered HTTP 429: Number of request tokens has exceeded your per-minute rate limit",
                server.url
            ),
        }
    );
    assert_eq!(
        run_err(model.as_ref(), hello_request()).await,
        ModelError::Throttled {
            retry_after: None,
            message: format!(
                "Anthropic at {}v1/ answered HTTP 529: Overloaded",
                server.url
            ),
        }
    );
    assert_eq!(
        run_err(model.as_ref(), hello_request()).await,
        ModelError::Throttled {
            retry_after: None,
            message: format!(
                "Anthropic at {}v1/ is busy (overloaded_error): Overloaded",
                server.url
            ),
        }
    );
}

#[tokio::test]
async fn prompt_too_long_is_an_overflow() {
    let message = "prompt is too long: 215000 tokens > 200000 maximum";
    let server = TestServer::start(vec![Reply::json(
        400,
        &json!({"type": "error", "error": {"type": "invalid_request_error", "message": message}}),
    )])
    .await;
    assert_eq!(
        run_err(anthropic(&server).as_ref(), hello_request()).await,
        ModelError::ContextWindowOverflow {
            message: message.into()
        }
    );
}

#[tokio::test]
async fn a_bad_key_names_the_variable_and_never_shows_the_key() {
    let server = TestServer::start(vec![Reply::json(
        401,
        &json!({"type": "error", "error": {"type": "authentication_error", "message": format!("invalid x-api-key {KEY}")}}),
    )])
    .await;
    let error = run_err(anthropic(&server).as_ref(), hello_request()).await;
    assert_eq!(
        error,
        ModelError::other(format!(
            "Anthropic at {}v1/ refused the API key from the environment variable ANTHROPIC_API_KEY (HTTP 401): invalid x-api-key [redacted]",
            server.url
        ))
    );
    assert!(!format!("{error:?}").contains(KEY));
}

#[tokio::test]
async fn a_stream_without_message_stop_is_incomplete() {
    let server = TestServer::start(vec![
        Reply::sse([
            message_start_event(5),
            event(
                "content_block_start",
                &json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            ),
            delta(0, &json!({"type": "text_delta", "text": "Hel"})),
        ])
        .cut(),
    ])
    .await;
    let error = run_err(anthropic(&server).as_ref(), hello_request()).await;
    assert!(matches!(error, ModelError::Incomplete { .. }), "{error:?}");
}

#[tokio::test]
async fn a_tool_named_web_search_is_refused_rather_than_misrouted() {
    let server = TestServer::start(vec![]).await;
    let mut request = hello_request();
    request.tool_specs.push(ToolSpec {
        name: "web_search".into(),
        description: "Searches the web.".into(),
        input_schema: json!({"type": "object"}),
        annotations: Default::default(),
    });
    let error = run_err(anthropic(&server).as_ref(), request).await;
    assert_eq!(
        error,
        ModelError::other(
            "a tool named \"web_search\" cannot be offered to Anthropic models here: it would be taken for Anthropic's own web search; rename the tool"
        )
    );
    assert_eq!(server.requests(), vec![]);
}
