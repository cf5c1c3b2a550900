//! One constructor from config to a `Model`.

use std::sync::Arc;
use std::time::Duration;

use tau_agent::{Model, ScriptError, ScriptedModel};

use crate::bedrock::{BedrockModel, Inference, default_base_url};
use crate::config::{Checked, ConfigError, ModelConfig};
use crate::errors::ErrorContext;
use crate::genai_model::{GenaiModel, GenaiSettings, error_chain};
use crate::genai_request::Wire;
use crate::hints::Hint;
use crate::secret::ApiKey;
use crate::spec::{ModelSpec, OLLAMA_DEFAULT_BASE_URL};

pub const OPENAI_DEFAULT_BASE_URL: &str = "https://api.openai.com/v1/";
pub const ANTHROPIC_DEFAULT_BASE_URL: &str = "https://api.anthropic.com/v1/";
pub const OPENAI_KEY_ENV: &str = "OPENAI_API_KEY";
pub const ANTHROPIC_KEY_ENV: &str = "ANTHROPIC_API_KEY";
/// The variable AWS documents for Bedrock API keys.
pub const BEDROCK_KEY_ENV: &str = "AWS_BEARER_TOKEN_BEDROCK";
const BEDROCK_DEFAULT_REGION: &str = "us-east-1";
/// Local servers ignore the key, but the OpenAI wire always sends one.
const PLACEHOLDER_KEY: &str = "no-key";
/// Connecting is quick or not happening; a model's slowness shows after the connection.
const MAX_CONNECT_TIMEOUT: Duration = Duration::from_secs(15);

/// Why no model could be built from the config.
#[derive(Debug, thiserror::Error)]
pub enum ModelBuildError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("{spec} needs an API key: set the environment variable {env}")]
    MissingApiKey { spec: String, env: String },
    #[error(transparent)]
    Replay(#[from] ScriptError),
    #[error("cannot set up the HTTP client: {0}")]
    Client(String),
}

/// Where a model on the OpenAI or Anthropic wire is reached, and with which key.
pub(crate) struct Target {
    pub wire: Wire,
    pub model: String,
    pub base_url: String,
    pub key: Option<ApiKey>,
    pub errors: ErrorContext,
    pub timeout: Duration,
}

/// What the config names, resolved: a replay, Bedrock, or a server on a genai wire.
pub(crate) enum Resolved {
    Replay(std::path::PathBuf),
    Bedrock(String),
    Genai(Box<Target>),
}

/// Resolves the config's model without connecting: its wire, address, key and the hints
/// its failures carry. A missing key is an error naming its variable.
pub(crate) fn resolve(
    checked: &Checked,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Resolved, ModelBuildError> {
    let spec_text = checked.spec.to_string();
    let (wire, model, default_url, default_env, label, hint) = match &checked.spec {
        ModelSpec::Replay { path } => return Ok(Resolved::Replay(path.clone())),
        ModelSpec::Bedrock { model } => return Ok(Resolved::Bedrock(model.clone())),
        ModelSpec::OpenAi { model } => (
            Wire::OpenAi,
            model,
            OPENAI_DEFAULT_BASE_URL.to_owned(),
            Some(OPENAI_KEY_ENV),
            "OpenAI",
            Hint::Hosted {
                model: model.clone(),
            },
        ),
        ModelSpec::Anthropic { model } => (
            Wire::Anthropic,
            model,
            ANTHROPIC_DEFAULT_BASE_URL.to_owned(),
            Some(ANTHROPIC_KEY_ENV),
            "Anthropic",
            Hint::Hosted {
                model: model.clone(),
            },
        ),
        ModelSpec::Ollama { model } => (
            Wire::OpenAi,
            model,
            OLLAMA_DEFAULT_BASE_URL.to_owned(),
            None,
            "Ollama",
            Hint::Ollama {
                model: model.clone(),
            },
        ),
        ModelSpec::OpenAiCompatible { model, base_url } => (
            Wire::OpenAi,
            model,
            base_url.clone(),
            None,
            "the OpenAI-compatible server",
            Hint::OwnServer,
        ),
    };
    let base_url = checked.base_url.clone().unwrap_or(default_url);
    let key_env = checked
        .api_key_env
        .clone()
        .or_else(|| default_env.map(str::to_owned));
    let key = match &key_env {
        Some(name) => Some(read_key(env, name, &spec_text)?),
        None => None,
    };
    let errors = ErrorContext {
        server: format!("{label} at {base_url}"),
        key_env,
        key: key.clone(),
        hint,
    };
    Ok(Resolved::Genai(Box::new(Target {
        wire,
        model: model.clone(),
        base_url,
        key,
        errors,
        timeout: checked.timeout,
    })))
}

/// Builds the model the config names. `env` reads environment variables (pass
/// `&|name| std::env::var(name).ok()`); it is asked only for the key's variable and, for
/// Bedrock, `AWS_REGION` / `AWS_DEFAULT_REGION`.
pub fn build_model(
    config: &ModelConfig,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Arc<dyn Model>, ModelBuildError> {
    let checked = config.check()?;
    let target = match resolve(&checked, env)? {
        Resolved::Replay(path) => return Ok(Arc::new(ScriptedModel::from_file(&path)?)),
        Resolved::Bedrock(model) => return build_bedrock(&checked, &model, env),
        Resolved::Genai(target) => *target,
    };
    let model = GenaiModel::new(GenaiSettings {
        wire: target.wire,
        model: target.model,
        http: http_client(&target.base_url, checked.timeout)?,
        base_url: target.base_url,
        key: target.key.unwrap_or_else(|| ApiKey::new(PLACEHOLDER_KEY)),
        errors: target.errors,
        temperature: checked.temperature,
        max_tokens: checked.max_tokens,
        tool_choice: checked.tool_choice.clone(),
        timeout: checked.timeout,
    })
    .map_err(|e| ModelBuildError::Client(error_chain(&e)))?;
    Ok(Arc::new(model))
}

fn build_bedrock(
    checked: &Checked,
    model: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Arc<dyn Model>, ModelBuildError> {
    let key_env = checked
        .api_key_env
        .clone()
        .unwrap_or_else(|| BEDROCK_KEY_ENV.to_owned());
    let key = read_key(env, &key_env, &checked.spec.to_string())?;
    let base_url = checked
        .base_url
        .clone()
        .unwrap_or_else(|| default_base_url(&bedrock_region(env)));
    Ok(Arc::new(BedrockModel {
        model: model.to_owned(),
        http: http_client(&base_url, checked.timeout)?,
        errors: ErrorContext {
            server: format!("Bedrock at {base_url}"),
            key_env: Some(key_env),
            key: Some(key.clone()),
            hint: Hint::None,
        },
        base_url,
        key,
        inference: Inference {
            max_tokens: checked.max_tokens,
            temperature: checked.temperature,
            tool_choice: checked.tool_choice.clone(),
        },
        timeout: checked.timeout,
    }))
}

fn read_key(
    env: &dyn Fn(&str) -> Option<String>,
    name: &str,
    spec: &str,
) -> Result<ApiKey, ModelBuildError> {
    match env(name).map(|v| v.trim().to_owned()) {
        Some(value) if !value.is_empty() => Ok(ApiKey::new(value)),
        _ => Err(ModelBuildError::MissingApiKey {
            spec: spec.to_owned(),
            env: name.to_owned(),
        }),
    }
}

/// `AWS_REGION`, else `AWS_DEFAULT_REGION`, else us-east-1, as the AWS tools do.
fn bedrock_region(env: &dyn Fn(&str) -> Option<String>) -> String {
    ["AWS_REGION", "AWS_DEFAULT_REGION"]
        .into_iter()
        .find_map(|name| env(name).filter(|r| is_region(r)))
        .unwrap_or_else(|| BEDROCK_DEFAULT_REGION.to_owned())
}

/// A region becomes part of a host name; only `[a-z0-9-]` may.
fn is_region(region: &str) -> bool {
    !region.is_empty()
        && region
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// One client per model. A model server on this machine is never reached through a proxy
/// from the environment, and a redirect is followed only within the server's own origin.
pub(crate) fn http_client(
    base_url: &str,
    timeout: Duration,
) -> Result<reqwest::Client, ModelBuildError> {
    let mut builder = reqwest::Client::builder()
        .connect_timeout(timeout.min(MAX_CONNECT_TIMEOUT))
        .redirect(same_origin_redirects())
        .tcp_nodelay(true);
    let loopback = reqwest::Url::parse(base_url)
        .ok()
        .and_then(|url| url.host_str().map(str::to_owned))
        .is_some_and(|host| matches!(host.as_str(), "localhost" | "127.0.0.1" | "[::1]"));
    if loopback {
        builder = builder.no_proxy();
    }
    builder
        .build()
        .map_err(|e| ModelBuildError::Client(error_chain(&e)))
}

/// The most redirects followed within one origin.
const MAX_REDIRECTS: usize = 5;

/// Follows a redirect only to the same scheme, host and port as the first request. A key
/// travels in headers reqwest does not know to be secret (`x-api-key`, a bearer token in
/// its own header), so a redirect to another origin would hand it to that origin: such a
/// redirect is not followed, and the 3xx reaches the model as an error.
fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let same_origin = attempt
            .previous()
            .first()
            .is_some_and(|first| first.origin() == attempt.url().origin());
        if !same_origin {
            attempt.stop()
        } else if attempt.previous().len() > MAX_REDIRECTS {
            attempt.error("too many redirects")
        } else {
            attempt.follow()
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            pairs
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn bedrock_region_comes_from_the_environment_and_must_be_a_host_label() {
        assert_eq!(bedrock_region(&env_of(&[])), "us-east-1");
        assert_eq!(
            bedrock_region(&env_of(&[
                ("AWS_REGION", "eu-west-1"),
                ("AWS_DEFAULT_REGION", "us-west-2")
            ])),
            "eu-west-1"
        );
        assert_eq!(
            bedrock_region(&env_of(&[("AWS_DEFAULT_REGION", "us-west-2")])),
            "us-west-2"
        );
        assert_eq!(
            bedrock_region(&env_of(&[("AWS_REGION", "evil.example/x")])),
            "us-east-1"
        );
        assert_eq!(
            default_base_url("eu-west-1"),
            "https://bedrock-runtime.eu-west-1.amazonaws.com/"
        );
    }

    #[test]
    fn only_the_key_variable_is_read() {
        let asked = std::sync::Mutex::new(Vec::new());
        let env = |name: &str| {
            asked.lock().unwrap().push(name.to_owned());
            Some("k-123456".to_owned())
        };
        let config = ModelConfig {
            spec: "anthropic:claude-haiku-4-5".into(),
            ..Default::default()
        };
        build_model(&config, &env).unwrap();
        assert_eq!(*asked.lock().unwrap(), vec!["ANTHROPIC_API_KEY".to_owned()]);
    }

    #[test]
    fn an_empty_key_counts_as_missing() {
        let config = ModelConfig {
            spec: "openai:gpt-4o".into(),
            api_key_env: Some("MY_KEY".into()),
            ..Default::default()
        };
        let Err(error) = build_model(&config, &env_of(&[("MY_KEY", "  ")])) else {
            panic!("expected an error");
        };
        assert_eq!(
            error.to_string(),
            "openai:gpt-4o needs an API key: set the environment variable MY_KEY"
        );
    }
}
