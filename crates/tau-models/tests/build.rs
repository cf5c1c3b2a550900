//! `build_model` from config: replay scripts, config errors naming their key.
#![cfg(test)]

mod common;

use common::*;
use pretty_assertions::assert_eq;
use tau_agent::{AgentStop, StreamChunk, Usage};
use tau_models::{ModelBuildError, ModelConfig, build_model};

#[tokio::test]
async fn replay_specs_play_the_script_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hello.json");
    std::fs::write(
        &path,
        r#"[{"role":"assistant","content":[{"text":"hi"}],"usage":{"inputTokens":1,"outputTokens":1,"totalTokens":2}}]"#,
    )
    .unwrap();
    let config = ModelConfig {
        spec: format!("replay:{}", path.display()),
        ..Default::default()
    };
    let model = build_model(&config, &env_with(&[])).unwrap();
    let chunks = run(model.as_ref(), hello_request()).await.unwrap();
    assert_eq!(
        chunks,
        vec![
            message_start(),
            text_start(),
            text("h"),
            text("i"),
            StreamChunk::ContentBlockStop,
            StreamChunk::MessageStop {
                stop_reason: AgentStop::EndTurn
            },
            StreamChunk::Metadata {
                usage: Usage {
                    input_tokens: 1,
                    output_tokens: 1,
                    total_tokens: 2
                }
            },
        ]
    );
}

#[test]
fn a_missing_replay_file_is_a_typed_error() {
    let config = ModelConfig {
        spec: "replay:does/not/exist.json".into(),
        ..Default::default()
    };
    let Err(error) = build_model(&config, &env_with(&[])) else {
        panic!("expected an error");
    };
    assert!(matches!(error, ModelBuildError::Replay(_)), "{error:?}");
    assert!(
        error
            .to_string()
            .starts_with("cannot read the replay script does/not/exist.json: "),
        "{error}"
    );
}

#[test]
fn config_errors_name_the_key() {
    let cases = [
        (
            ModelConfig {
                temperature: Some(3.0),
                ..Default::default()
            },
            "invalid model.temperature: must be between 0.0 and 2.0, got 3",
        ),
        (
            ModelConfig {
                spec: "gemini:pro".into(),
                ..Default::default()
            },
            "invalid model.spec: unknown model provider \"gemini\"; expected one of openai, anthropic, bedrock, ollama, openai-compatible, replay",
        ),
        (
            ModelConfig {
                request_timeout_seconds: 0,
                ..Default::default()
            },
            "invalid model.request_timeout_seconds: must be between 1 and 3600, got 0",
        ),
    ];
    for (config, expected) in cases {
        let Err(error) = build_model(&config, &env_with(&[])) else {
            panic!("expected an error for {config:?}");
        };
        assert!(matches!(error, ModelBuildError::Config(_)));
        assert_eq!(error.to_string(), expected);
    }
}
