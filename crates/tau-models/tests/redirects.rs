//! Every provider against a server that redirects: a redirect to another origin is never
//! followed (the key would go with it, in `x-api-key` or a bearer header alike), and the
//! error says where it pointed; a redirect within the server's own origin is followed.
#![cfg(test)]

mod common;

use common::*;
use serde_json::json;
use tau_agent::ModelError;
use tau_models::{ModelConfig, build_model};

const KEY: &str = "secret-key-0123456789";

/// A provider as tau.toml names it, pointed at `url`, with the header its key travels in.
struct Provider {
    name: &'static str,
    config: fn(&str) -> ModelConfig,
    key_header: &'static str,
}

fn providers() -> [Provider; 4] {
    [
        Provider {
            name: "OpenAI-compatible",
            config: |url| ModelConfig {
                spec: format!("openai-compatible:qwen@{url}v1"),
                api_key_env: Some("THE_KEY".into()),
                ..Default::default()
            },
            key_header: "authorization",
        },
        Provider {
            name: "Anthropic",
            config: |url| ModelConfig {
                spec: "anthropic:claude-haiku-4-5".into(),
                base_url: Some(format!("{url}v1")),
                api_key_env: Some("THE_KEY".into()),
                ..Default::default()
            },
            key_header: "x-api-key",
        },
        Provider {
            name: "Bedrock",
            config: |url| ModelConfig {
                spec: "bedrock:anthropic.claude-3-5-haiku-20241022-v1:0".into(),
                base_url: Some(url.to_owned()),
                api_key_env: Some("THE_KEY".into()),
                ..Default::default()
            },
            key_header: "authorization",
        },
        Provider {
            name: "Ollama",
            config: |url| ModelConfig {
                spec: "ollama:llama3.2".into(),
                base_url: Some(format!("{url}v1")),
                api_key_env: Some("THE_KEY".into()),
                ..Default::default()
            },
            key_header: "authorization",
        },
    ]
}

fn redirect(to: &str) -> Reply {
    Reply::json(307, &json!({})).header("location", to)
}

#[tokio::test]
async fn no_provider_follows_a_redirect_to_another_host() {
    for provider in providers() {
        let elsewhere = TestServer::start(vec![]).await;
        let target = format!("{}collect", elsewhere.url);
        let server = TestServer::start(vec![redirect(&target)]).await;
        let model = build_model(
            &(provider.config)(&server.url),
            &env_with(&[("THE_KEY", KEY)]),
        )
        .unwrap();
        let error = run_err(model.as_ref(), hello_request()).await;
        let ModelError::Other { message } = &error else {
            panic!("{}: {error:?}", provider.name);
        };
        assert!(
            message.contains(&format!("HTTP 307, a redirect to {target};")),
            "{}: {message}",
            provider.name
        );
        assert!(!message.contains(KEY), "{}: {message}", provider.name);
        // The server that was asked saw the key; the one it pointed to saw nothing.
        assert!(
            server
                .request()
                .header(provider.key_header)
                .is_some_and(|value| value.contains(KEY)),
            "{}",
            provider.name
        );
        assert_eq!(elsewhere.requests(), vec![], "{}", provider.name);
    }
}

#[tokio::test]
async fn a_redirect_within_the_same_server_is_followed() {
    for provider in providers() {
        let server = TestServer::start(vec![redirect("/moved/here")]).await;
        let model = build_model(
            &(provider.config)(&server.url),
            &env_with(&[("THE_KEY", KEY)]),
        )
        .unwrap();
        // The second request gets no scripted reply (HTTP 500): only the path matters.
        let _ = run_err(model.as_ref(), hello_request()).await;
        let requests = server.requests();
        let followed: Vec<(&str, bool)> = requests
            .iter()
            .map(|r| {
                let keyed = r
                    .header(provider.key_header)
                    .is_some_and(|value| value.contains(KEY));
                (r.path.as_str(), keyed)
            })
            .skip(1)
            .collect();
        assert_eq!(followed, [("/moved/here", true)], "{}", provider.name);
    }
}
