//! OpenAI chat completions against an in-test server: streaming, tool calls split across
//! deltas, usage, errors, and the exact request bodies tau sends.
#![cfg(test)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use common::*;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tau_agent::{
    Agent, AgentStop, ContentBlock, Model, ModelError, StreamChunk, Tool, ToolContext, ToolError,
    ToolOutput, ToolSpec, Usage,
};
use tau_models::{ModelBuildError, ModelConfig, build_model};

const KEY: &str = "sk-test-0123456789abcdef";
const ENV: &[(&str, &str)] = &[("OPENAI_API_KEY", KEY)];

fn openai(server: &TestServer) -> Arc<dyn Model> {
    let config = ModelConfig {
        spec: "openai:gpt-4o-mini".into(),
        base_url: Some(format!("{}v1", server.url)),
        temperature: Some(0.5),
        max_tokens: 256,
        request_timeout_seconds: 5,
        ..Default::default()
    };
    build_model(&config, &env_with(ENV)).unwrap()
}

fn chunk(delta: Value) -> String {
    let mut event = json!({"id": "c1", "object": "chat.completion.chunk", "choices": [{"index": 0, "finish_reason": null}]});
    event["choices"][0]["delta"] = delta;
    event.to_string()
}

fn tool_delta(index: u32, id: Option<&str>, name: Option<&str>, arguments: &str) -> String {
    let mut call = json!({"index": index, "function": {"arguments": arguments}});
    if let Some(id) = id {
        call["id"] = json!(id);
        call["type"] = json!("function");
    }
    if let Some(name) = name {
        call["function"]["name"] = json!(name);
    }
    chunk(json!({"tool_calls": [call]}))
}

fn finish(reason: &str) -> String {
    json!({"id": "c1", "choices": [{"index": 0, "delta": {}, "finish_reason": reason}]}).to_string()
}

fn usage(prompt: u32, completion: u32) -> String {
    json!({"id": "c1", "choices": [], "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}}).to_string()
}

#[tokio::test]
async fn streams_text_and_split_tool_calls_and_sends_the_refusal_text() {
    let server = TestServer::start(vec![Reply::sse([
        chunk(json!({"role": "assistant", "content": ""})),
        chunk(json!({"content": "Let me "})),
        chunk(json!({"content": "check."})),
        tool_delta(0, Some("call_1"), Some("clock"), ""),
        tool_delta(0, None, None, "{\"zo"),
        tool_delta(0, None, None, "ne\": \"UTC\"}"),
        tool_delta(1, Some("call_2"), Some("mqtt_publish"), "{\"topic\":"),
        tool_delta(1, None, None, "\"heater/set\",\"payload\":\"on\"}"),
        finish("tool_calls"),
        usage(42, 17),
        "[DONE]".into(),
    ])])
    .await;
    let chunks = run(openai(&server).as_ref(), history_request())
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
            tool_start("call_1", "clock"),
            input("{\"zone\": \"UTC\"}"),
            StreamChunk::ContentBlockStop,
            tool_start("call_2", "mqtt_publish"),
            input("{\"topic\":\"heater/set\",\"payload\":\"on\"}"),
            StreamChunk::ContentBlockStop,
            StreamChunk::MessageStop {
                stop_reason: AgentStop::ToolUse
            },
            StreamChunk::Metadata {
                usage: Usage {
                    input_tokens: 42,
                    output_tokens: 17,
                    total_tokens: 59
                }
            },
        ]
    );
    let request = server.request();
    assert_eq!(request.method, "POST");
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(
        request.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(
        request.body,
        json!({
            "model": "gpt-4o-mini",
            "stream": true,
            "stream_options": {"include_usage": true},
            "max_tokens": 256,
            "temperature": 0.5,
            "tools": [
                {"type": "function", "function": {
                    "name": "clock",
                    "description": "Tells the time.",
                    "parameters": {"type": "object", "properties": {"zone": {"type": "string"}}},
                    "strict": false
                }},
                {"type": "function", "function": {
                    "name": "mqtt_publish",
                    "description": "Publishes an MQTT message.",
                    "parameters": {
                        "type": "object",
                        "properties": {"topic": {"type": "string"}, "payload": {"type": "string"}},
                        "required": ["topic", "payload"]
                    },
                    "strict": false
                }}
            ],
            "messages": [
                {"role": "system", "content": SYSTEM},
                {"role": "user", "content": "What time is it? Then switch the heater on."},
                {"role": "assistant", "content": "Checking.", "tool_calls": [
                    {"type": "function", "id": "call_clock", "function": {"name": "clock", "arguments": "{\"zone\":\"UTC\"}"}},
                    {"type": "function", "id": "call_mqtt", "function": {"name": "mqtt_publish", "arguments": "{\"topic\":\"heater/set\",\"payload\":\"on\"}"}}
                ]},
                {"role": "tool", "content": "{\"time\":\"12:00\"}", "tool_call_id": "call_clock"},
                {"role": "tool", "content": REFUSAL, "tool_call_id": "call_mqtt"}
            ]
        })
    );
}

#[tokio::test]
async fn plain_text_ends_the_turn_with_usage() {
    let server = TestServer::start(vec![Reply::sse([
        chunk(json!({"role": "assistant", "content": "Hi"})),
        chunk(json!({"content": " there"})),
        json!({"id": "c1", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}}).to_string(),
        "[DONE]".into(),
    ])])
    .await;
    let chunks = run(openai(&server).as_ref(), hello_request())
        .await
        .unwrap();
    assert_eq!(
        chunks,
        vec![
            message_start(),
            text_start(),
            text("Hi"),
            text(" there"),
            StreamChunk::ContentBlockStop,
            StreamChunk::MessageStop {
                stop_reason: AgentStop::EndTurn
            },
            StreamChunk::Metadata {
                usage: Usage {
                    input_tokens: 3,
                    output_tokens: 2,
                    total_tokens: 5
                }
            },
        ]
    );
}

#[tokio::test]
async fn max_tokens_stop_is_reported() {
    let server = TestServer::start(vec![Reply::sse([
        chunk(json!({"content": "Once upon"})),
        finish("length"),
        "[DONE]".into(),
    ])])
    .await;
    let chunks = run(openai(&server).as_ref(), hello_request())
        .await
        .unwrap();
    assert_eq!(
        chunks.last(),
        Some(&StreamChunk::MessageStop {
            stop_reason: AgentStop::MaxTokens
        })
    );
}

#[tokio::test]
async fn http_429_is_throttled_with_retry_after() {
    let server = TestServer::start(vec![
        Reply::json(
            429,
            &json!({"error": {"message": "Rate limit reached for gpt-4o-mini", "type": "requests"}}),
        )
        .header("retry-after", "3"),
    ])
    .await;
    let model = openai(&server);
    let Err(error) = model.stream(hello_request().as_request()).await else {
        panic!("a refused request must fail before streaming");
    };
    assert_eq!(
        error,
        ModelError::Throttled {
            retry_after: Some(Duration::from_secs(3)),
            message: format!(
                "OpenAI at {}v1/ answered HTTP 429: Rate limit reached for gpt-4o-mini",
                server.url
            ),
        }
    );
}

#[tokio::test]
async fn context_length_error_is_an_overflow() {
    let message = "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.";
    let server = TestServer::start(vec![Reply::json(
        400,
        &json!({"error": {"message": message, "type": "invalid_request_error", "code": "context_length_exceeded"}}),
    )])
    .await;
    assert_eq!(
        run_err(openai(&server).as_ref(), hello_request()).await,
        ModelError::ContextWindowOverflow {
            message: message.into()
        }
    );
}

#[tokio::test]
async fn a_bad_key_names_the_variable_and_never_shows_the_key() {
    let server = TestServer::start(vec![Reply::json(
        401,
        &json!({"error": {"message": format!("Incorrect API key provided: {KEY}."), "code": "invalid_api_key"}}),
    )])
    .await;
    let error = run_err(openai(&server).as_ref(), hello_request()).await;
    assert_eq!(
        error,
        ModelError::other(format!(
            "OpenAI at {}v1/ refused the API key from the environment variable OPENAI_API_KEY (HTTP 401): Incorrect API key provided: [redacted].",
            server.url
        ))
    );
    assert!(!format!("{error:?}").contains(KEY));
}

#[tokio::test]
async fn server_errors_carry_the_provider_message() {
    let server = TestServer::start(vec![Reply::json(
        500,
        &json!({"error": {"message": "The server had an error while processing your request."}}),
    )])
    .await;
    assert_eq!(
        run_err(openai(&server).as_ref(), hello_request()).await,
        ModelError::other(format!(
            "OpenAI at {}v1/ answered HTTP 500: The server had an error while processing your request.",
            server.url
        ))
    );
}

#[tokio::test]
async fn malformed_json_in_the_stream_is_a_typed_error() {
    let server = TestServer::start(vec![Reply::sse([
        chunk(json!({"content": "Hi"})),
        "{\"choices\": [}".to_owned(),
        "[DONE]".into(),
    ])])
    .await;
    let error = run_err(openai(&server).as_ref(), hello_request()).await;
    let ModelError::Other { message } = error else {
        panic!("expected Other, got {error:?}");
    };
    assert!(
        message.starts_with(&format!(
            "OpenAI at {}v1/ sent a malformed response: ",
            server.url
        )),
        "{message}"
    );
}

#[tokio::test]
async fn a_stream_closed_mid_event_is_incomplete() {
    let server = TestServer::start(vec![
        Reply::sse([chunk(json!({"content": "Hi"}))]).cut(),
        Reply::new(
            200,
            "text/event-stream",
            vec![
                format!(
                    "data: {}\n\ndata: {{\"choi",
                    chunk(json!({"content": "Hi"}))
                )
                .into_bytes(),
            ],
        ),
    ])
    .await;
    let model = openai(&server);
    let cut = run_err(model.as_ref(), hello_request()).await;
    assert!(matches!(cut, ModelError::Incomplete { .. }), "{cut:?}");
    let closed = run_err(model.as_ref(), hello_request()).await;
    assert_eq!(
        closed,
        ModelError::incomplete(format!(
            "OpenAI at {}v1/ cut an event short: EOF while parsing a string at line 1 column 6",
            server.url
        ))
    );
}

#[tokio::test]
async fn a_silent_server_times_out_instead_of_hanging() {
    let server = TestServer::start(vec![Reply::sse(Vec::<String>::new()).hang()]).await;
    let config = ModelConfig {
        spec: format!("openai-compatible:local@{}v1", server.url),
        request_timeout_seconds: 1,
        ..Default::default()
    };
    let model = build_model(&config, &env_with(&[])).unwrap();
    assert_eq!(
        run_err(model.as_ref(), hello_request()).await,
        ModelError::other("the model server sent nothing for 1 s (model.request_timeout_seconds)")
    );
}

#[tokio::test]
async fn an_unreachable_server_is_a_network_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    drop(listener);
    let config = ModelConfig {
        spec: format!("openai-compatible:local@{url}"),
        request_timeout_seconds: 5,
        ..Default::default()
    };
    let model = build_model(&config, &env_with(&[])).unwrap();
    let error = run_err(model.as_ref(), hello_request()).await;
    let ModelError::Other { message } = error else {
        panic!("expected Other, got {error:?}");
    };
    assert!(
        message.starts_with(&format!(
            "cannot reach the OpenAI-compatible server at {url}/: "
        )),
        "{message}"
    );
}

#[tokio::test]
async fn a_missing_key_is_refused_at_build_time_naming_the_variable() {
    let config = ModelConfig {
        spec: "openai:gpt-4o".into(),
        ..Default::default()
    };
    let Err(error) = build_model(&config, &env_with(&[])) else {
        panic!("expected an error");
    };
    assert!(matches!(error, ModelBuildError::MissingApiKey { .. }));
    assert_eq!(
        error.to_string(),
        "openai:gpt-4o needs an API key: set the environment variable OPENAI_API_KEY"
    );
}

#[tokio::test]
async fn ollama_and_compatible_servers_use_the_configured_url_key_and_tool_choice() {
    let reply = || {
        Reply::sse([
            tool_delta(0, Some("call_9"), Some("clock"), "{}"),
            finish("tool_calls"),
            "[DONE]".into(),
        ])
    };
    let server = TestServer::start(vec![reply(), reply()]).await;
    let ollama = ModelConfig {
        spec: "ollama:llama3.2".into(),
        base_url: Some(format!("{}v1", server.url)),
        tool_choice: Some("tool:clock".into()),
        ..Default::default()
    };
    let compatible = ModelConfig {
        spec: format!("openai-compatible:qwen@{}v1", server.url),
        api_key_env: Some("LOCAL_KEY".into()),
        tool_choice: Some("required".into()),
        ..Default::default()
    };
    let env = env_with(&[("LOCAL_KEY", "local-secret")]);
    for config in [ollama, compatible] {
        let model = build_model(&config, &env).unwrap();
        let chunks = run(model.as_ref(), history_request()).await.unwrap();
        assert_eq!(chunks.get(1), Some(&tool_start("call_9", "clock")));
    }
    let requests = server.requests();
    let seen: Vec<(String, Option<&str>, Value)> = requests
        .iter()
        .map(|r| {
            (
                r.path.clone(),
                r.header("authorization"),
                r.body.get("tool_choice").cloned().unwrap_or(Value::Null),
            )
        })
        .collect();
    assert_eq!(
        seen,
        vec![
            (
                "/v1/chat/completions".into(),
                Some("Bearer no-key"),
                json!({"type": "function", "function": {"name": "clock"}})
            ),
            (
                "/v1/chat/completions".into(),
                Some("Bearer local-secret"),
                json!("required")
            ),
        ]
    );
}

struct Clock {
    spec: ToolSpec,
}

#[async_trait]
impl Tool for Clock {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn run(&self, _input: Value, _context: ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text("12:00"))
    }
}

#[tokio::test]
async fn invalid_tool_arguments_become_an_error_tool_result_in_the_loop() {
    let server = TestServer::start(vec![
        Reply::sse([
            tool_delta(0, Some("call_1"), Some("clock"), "{\"zone\": "),
            finish("tool_calls"),
            "[DONE]".into(),
        ]),
        Reply::sse([
            chunk(json!({"content": "Sorry, that went wrong."})),
            finish("stop"),
            "[DONE]".into(),
        ]),
    ])
    .await;
    let clock = Clock {
        spec: history_request().tool_specs.remove(0),
    };
    let mut agent = Agent::builder(openai(&server))
        .tool(Arc::new(clock))
        .build()
        .await
        .unwrap();
    let result = agent.invoke("What time is it?", None).await.unwrap();
    assert_eq!(result.stop_reason, AgentStop::EndTurn);
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let last = requests[1].body["messages"]
        .as_array()
        .unwrap()
        .last()
        .cloned();
    assert_eq!(
        last,
        Some(json!({
            "role": "tool",
            "tool_call_id": "call_1",
            "content": "Error: the tool input is not valid JSON (EOF while parsing a value at line 1 column 9). The tool was not run."
        }))
    );
    let results: Vec<_> = agent.messages()[2]
        .content
        .iter()
        .map(|b| matches!(b, ContentBlock::ToolResult(r) if r.status == tau_agent::ToolResultStatus::Error))
        .collect();
    assert_eq!(results, vec![true]);
}
