//! The `[model]` table of `tau.toml` and its checks.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::spec::{ModelSpec, SpecError, normalize_base_url};

/// The `[model]` table. Every field has a default, so tau runs with no config file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ModelConfig {
    /// Which model, as a [`ModelSpec`] string.
    pub spec: String,
    /// Sampling temperature, `0.0..=2.0`; unset leaves the provider's default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Most tokens one answer may have.
    pub max_tokens: u32,
    /// Longest wait for the server to connect, answer or send the next piece of a stream.
    pub request_timeout_seconds: u64,
    /// Overrides the provider's endpoint (a proxy, another region, a remote Ollama).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// The environment variable holding the API key. Defaults: `OPENAI_API_KEY`,
    /// `ANTHROPIC_API_KEY`, `AWS_BEARER_TOKEN_BEDROCK`; none for Ollama and
    /// OpenAI-compatible servers (set it when yours wants a key).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// `auto`, `none`, `required` or `tool:NAME`; unset leaves the provider's default.
    /// Forcing a tool makes every call use one: meant for small local models and tests.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<String>,
}

pub const DEFAULT_SPEC: &str = "ollama:llama3.2";
pub const DEFAULT_MAX_TOKENS: u32 = 4096;
pub const DEFAULT_REQUEST_TIMEOUT_SECONDS: u64 = 120;
const MAX_MAX_TOKENS: u32 = 1_000_000;
const MAX_TIMEOUT_SECONDS: u64 = 3600;

impl Default for ModelConfig {
    fn default() -> Self {
        Self {
            spec: DEFAULT_SPEC.into(),
            temperature: None,
            max_tokens: DEFAULT_MAX_TOKENS,
            request_timeout_seconds: DEFAULT_REQUEST_TIMEOUT_SECONDS,
            base_url: None,
            api_key_env: None,
            tool_choice: None,
        }
    }
}

/// Which tool the model must call, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ToolChoice {
    Auto,
    None,
    /// Some tool, the model picks which.
    Required,
    /// This tool.
    Tool(String),
}

/// A config value that cannot be used; the message names the key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid model.{key}: {message}")]
pub struct ConfigError {
    /// The key inside `[model]`, e.g. `temperature`.
    pub key: &'static str,
    pub message: String,
}

impl ConfigError {
    fn new(key: &'static str, message: impl Into<String>) -> Self {
        Self {
            key,
            message: message.into(),
        }
    }
}

/// A [`ModelConfig`] whose values were checked.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Checked {
    pub spec: ModelSpec,
    pub temperature: Option<f64>,
    pub max_tokens: u32,
    pub timeout: Duration,
    pub base_url: Option<String>,
    pub api_key_env: Option<String>,
    pub tool_choice: Option<ToolChoice>,
}

impl ModelConfig {
    /// Checks every value; the first bad one is reported with its key.
    pub(crate) fn check(&self) -> Result<Checked, ConfigError> {
        let spec = ModelSpec::parse(&self.spec)
            .map_err(|e: SpecError| ConfigError::new("spec", e.to_string()))?;
        if let Some(t) = self.temperature
            && !(0.0..=2.0).contains(&t)
        {
            return Err(ConfigError::new(
                "temperature",
                format!("must be between 0.0 and 2.0, got {t}"),
            ));
        }
        if !(1..=MAX_MAX_TOKENS).contains(&self.max_tokens) {
            return Err(ConfigError::new(
                "max_tokens",
                format!(
                    "must be between 1 and {MAX_MAX_TOKENS}, got {}",
                    self.max_tokens
                ),
            ));
        }
        if !(1..=MAX_TIMEOUT_SECONDS).contains(&self.request_timeout_seconds) {
            return Err(ConfigError::new(
                "request_timeout_seconds",
                format!(
                    "must be between 1 and {MAX_TIMEOUT_SECONDS}, got {}",
                    self.request_timeout_seconds
                ),
            ));
        }
        let base_url = match &self.base_url {
            None => None,
            Some(_) if matches!(spec, ModelSpec::OpenAiCompatible { .. }) => {
                return Err(ConfigError::new(
                    "base_url",
                    "the openai-compatible spec already names its URL (MODEL@URL); set one or the other",
                ));
            }
            Some(url) => Some(
                normalize_base_url(url).map_err(|e| ConfigError::new("base_url", e.to_string()))?,
            ),
        };
        if let Some(name) = &self.api_key_env
            && !is_env_name(name)
        {
            return Err(ConfigError::new(
                "api_key_env",
                format!("must be an environment variable name (letters, digits, _), got {name:?}"),
            ));
        }
        let tool_choice = self
            .tool_choice
            .as_deref()
            .map(parse_tool_choice)
            .transpose()?;
        Ok(Checked {
            spec,
            temperature: self.temperature,
            max_tokens: self.max_tokens,
            timeout: Duration::from_secs(self.request_timeout_seconds),
            base_url,
            api_key_env: self.api_key_env.clone(),
            tool_choice,
        })
    }
}

fn parse_tool_choice(text: &str) -> Result<ToolChoice, ConfigError> {
    match text {
        "auto" => Ok(ToolChoice::Auto),
        "none" => Ok(ToolChoice::None),
        "required" => Ok(ToolChoice::Required),
        other => match other.strip_prefix("tool:") {
            Some(name) if tau_agent::is_valid_tool_name(name) => {
                Ok(ToolChoice::Tool(name.to_owned()))
            }
            _ => Err(ConfigError::new(
                "tool_choice",
                format!("must be auto, none, required or tool:NAME, got {other:?}"),
            )),
        },
    }
}

fn is_env_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct File {
        #[serde(default)]
        model: ModelConfig,
    }

    #[test]
    fn an_empty_file_gives_the_defaults() {
        let file: File = toml::from_str("").unwrap();
        assert_eq!(file.model, ModelConfig::default());
        let checked = file.model.check().unwrap();
        assert_eq!(
            checked,
            Checked {
                spec: ModelSpec::Ollama {
                    model: "llama3.2".into()
                },
                temperature: None,
                max_tokens: 4096,
                timeout: Duration::from_secs(120),
                base_url: None,
                api_key_env: None,
                tool_choice: None,
            }
        );
    }

    #[test]
    fn a_full_table_parses() {
        let file: File = toml::from_str(
            r#"
            [model]
            spec = "anthropic:claude-haiku-4-5"
            temperature = 0.2
            max_tokens = 1024
            request_timeout_seconds = 30
            base_url = "http://127.0.0.1:4000/v1"
            api_key_env = "MY_KEY"
            tool_choice = "tool:clock"
            "#,
        )
        .unwrap();
        assert_eq!(
            file.model.check().unwrap(),
            Checked {
                spec: ModelSpec::Anthropic {
                    model: "claude-haiku-4-5".into()
                },
                temperature: Some(0.2),
                max_tokens: 1024,
                timeout: Duration::from_secs(30),
                base_url: Some("http://127.0.0.1:4000/v1/".into()),
                api_key_env: Some("MY_KEY".into()),
                tool_choice: Some(ToolChoice::Tool("clock".into())),
            }
        );
    }

    #[test]
    fn unknown_keys_are_refused() {
        let error = toml::from_str::<File>("[model]\nspce = \"openai:x\"\n").unwrap_err();
        assert!(
            error.to_string().contains("unknown field `spce`"),
            "{error}"
        );
    }

    #[test]
    fn invalid_values_name_their_key() {
        let cases: [(ModelConfig, &str); 9] = [
            (
                ModelConfig {
                    spec: "gpt".into(),
                    ..Default::default()
                },
                "spec",
            ),
            (
                ModelConfig {
                    temperature: Some(2.5),
                    ..Default::default()
                },
                "temperature",
            ),
            (
                ModelConfig {
                    temperature: Some(f64::NAN),
                    ..Default::default()
                },
                "temperature",
            ),
            (
                ModelConfig {
                    max_tokens: 0,
                    ..Default::default()
                },
                "max_tokens",
            ),
            (
                ModelConfig {
                    request_timeout_seconds: 0,
                    ..Default::default()
                },
                "request_timeout_seconds",
            ),
            (
                ModelConfig {
                    base_url: Some("localhost:8080".into()),
                    ..Default::default()
                },
                "base_url",
            ),
            (
                ModelConfig {
                    spec: "openai-compatible:m@http://h/v1".into(),
                    base_url: Some("http://other/v1".into()),
                    ..Default::default()
                },
                "base_url",
            ),
            (
                ModelConfig {
                    api_key_env: Some("MY-KEY".into()),
                    ..Default::default()
                },
                "api_key_env",
            ),
            (
                ModelConfig {
                    tool_choice: Some("always".into()),
                    ..Default::default()
                },
                "tool_choice",
            ),
        ];
        for (config, key) in cases {
            let error = config.check().unwrap_err();
            assert_eq!(error.key, key, "{config:?}");
            assert!(
                error
                    .to_string()
                    .starts_with(&format!("invalid model.{key}: ")),
                "{error}"
            );
        }
    }

    #[test]
    fn tool_choices_parse() {
        assert_eq!(parse_tool_choice("auto"), Ok(ToolChoice::Auto));
        assert_eq!(parse_tool_choice("none"), Ok(ToolChoice::None));
        assert_eq!(parse_tool_choice("required"), Ok(ToolChoice::Required));
        assert_eq!(
            parse_tool_choice("tool:mqtt_publish"),
            Ok(ToolChoice::Tool("mqtt_publish".into()))
        );
        assert!(parse_tool_choice("tool:").is_err());
        assert!(parse_tool_choice("tool:has space").is_err());
    }
}
