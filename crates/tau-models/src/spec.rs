//! The model spec string of config and the command line: `provider:model`.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

/// Where Ollama's OpenAI-compatible API listens by default.
pub const OLLAMA_DEFAULT_BASE_URL: &str = "http://127.0.0.1:11434/v1/";

/// Which model to talk to, parsed from a spec string.
///
/// Grammar (the first `:` separates the provider; model ids may contain more `:`):
/// - `openai:MODEL` — OpenAI chat completions
/// - `anthropic:MODEL` — Anthropic Messages
/// - `bedrock:MODEL_ID` — Bedrock Converse (e.g. `bedrock:anthropic.claude-3-5-haiku-20241022-v1:0`)
/// - `ollama:MODEL` — Ollama's OpenAI-compatible API at [`OLLAMA_DEFAULT_BASE_URL`]
/// - `openai-compatible:MODEL@BASE_URL` — any OpenAI-compatible server (llama.cpp, vLLM,
///   LM Studio); `BASE_URL` is the part before `chat/completions`, e.g. `http://127.0.0.1:8080/v1`
/// - `replay:PATH` — a replay script played by tau-agent's `ScriptedModel`
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelSpec {
    OpenAi { model: String },
    Anthropic { model: String },
    Bedrock { model: String },
    Ollama { model: String },
    OpenAiCompatible { model: String, base_url: String },
    Replay { path: PathBuf },
}

/// A spec string that does not follow the grammar of [`ModelSpec`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    #[error("the model spec is empty; expected PROVIDER:MODEL, e.g. ollama:llama3.2")]
    Empty,
    #[error(
        "model spec {spec:?} names no provider; expected PROVIDER:MODEL with PROVIDER one of {PROVIDERS}"
    )]
    MissingProvider { spec: String },
    #[error("unknown model provider {provider:?}; expected one of {PROVIDERS}")]
    UnknownProvider { provider: String },
    #[error("model spec {spec:?} names no model after \"{provider}:\"")]
    EmptyModel {
        provider: &'static str,
        spec: String,
    },
    #[error("model spec {spec:?} needs a base URL: openai-compatible:MODEL@http://HOST:PORT/v1")]
    MissingBaseUrl { spec: String },
    #[error("base URL {url:?} is not usable: {reason}")]
    InvalidBaseUrl { url: String, reason: String },
}

const PROVIDERS: &str = "openai, anthropic, bedrock, ollama, openai-compatible, replay";

impl ModelSpec {
    /// The host and port a spec's requests go to.
    pub fn endpoint(&self) -> (String, u16) {
        let url = match self {
            Self::OpenAi { .. } => "https://api.openai.com/v1".to_owned(),
            Self::Anthropic { .. } => "https://api.anthropic.com/v1".to_owned(),
            Self::Bedrock { .. } => "https://bedrock-runtime.us-east-1.amazonaws.com".to_owned(),
            Self::Ollama { .. } => OLLAMA_DEFAULT_BASE_URL.to_owned(),
            Self::OpenAiCompatible { base_url, .. } => base_url.clone(),
            Self::Replay { .. } => String::new(),
        };
        let (scheme, rest) = url.split_once("://").unwrap_or(("http", url.as_str()));
        let authority = rest.split('/').next().unwrap_or_default();
        let default_port = if scheme == "https" { 443 } else { 80 };
        match authority.rsplit_once(':') {
            Some((host, port)) if !host.ends_with(']') || port.parse::<u16>().is_ok() => (
                host.trim_matches(['[', ']']).to_owned(),
                port.parse().unwrap_or(default_port),
            ),
            _ => (authority.trim_matches(['[', ']']).to_owned(), default_port),
        }
    }

    /// Parses a spec string; surrounding whitespace is ignored.
    pub fn parse(spec: &str) -> Result<Self, SpecError> {
        let spec = spec.trim();
        if spec.is_empty() {
            return Err(SpecError::Empty);
        }
        let Some((provider, rest)) = spec.split_once(':') else {
            return Err(SpecError::MissingProvider { spec: spec.into() });
        };
        let provider = provider.trim();
        let rest = rest.trim();
        let name: &'static str = match provider {
            "openai" => "openai",
            "anthropic" => "anthropic",
            "bedrock" => "bedrock",
            "ollama" => "ollama",
            "openai-compatible" => "openai-compatible",
            "replay" => "replay",
            other => {
                return Err(SpecError::UnknownProvider {
                    provider: other.into(),
                });
            }
        };
        if rest.is_empty() {
            return Err(SpecError::EmptyModel {
                provider: name,
                spec: spec.into(),
            });
        }
        let model = rest.to_owned();
        Ok(match name {
            "openai" => Self::OpenAi { model },
            "anthropic" => Self::Anthropic { model },
            "bedrock" => Self::Bedrock { model },
            "ollama" => Self::Ollama { model },
            "replay" => Self::Replay {
                path: PathBuf::from(rest),
            },
            _ => parse_compatible(spec, rest)?,
        })
    }

    /// The provider word of the spec, as written before the `:`.
    pub fn provider(&self) -> &'static str {
        match self {
            Self::OpenAi { .. } => "openai",
            Self::Anthropic { .. } => "anthropic",
            Self::Bedrock { .. } => "bedrock",
            Self::Ollama { .. } => "ollama",
            Self::OpenAiCompatible { .. } => "openai-compatible",
            Self::Replay { .. } => "replay",
        }
    }
}

/// `MODEL@BASE_URL`: the URL starts at the last `@` followed by `http://` or `https://`, so
/// a model name may itself contain `@`.
fn parse_compatible(spec: &str, rest: &str) -> Result<ModelSpec, SpecError> {
    let split = rest.match_indices('@').map(|(at, _)| at).rfind(|&at| {
        let after = rest.get(at + 1..).unwrap_or_default();
        after.starts_with("http://") || after.starts_with("https://")
    });
    let Some(at) = split else {
        return Err(SpecError::MissingBaseUrl { spec: spec.into() });
    };
    let model = rest.get(..at).unwrap_or_default().trim();
    let url = rest.get(at + 1..).unwrap_or_default().trim();
    if model.is_empty() {
        return Err(SpecError::EmptyModel {
            provider: "openai-compatible",
            spec: spec.into(),
        });
    }
    Ok(ModelSpec::OpenAiCompatible {
        model: model.to_owned(),
        base_url: normalize_base_url(url)?,
    })
}

/// Checks an `http(s)` URL and ends it with `/`, so endpoint paths join under it instead of
/// replacing its last segment.
pub(crate) fn normalize_base_url(url: &str) -> Result<String, SpecError> {
    let invalid = |reason: &str| SpecError::InvalidBaseUrl {
        url: url.into(),
        reason: reason.into(),
    };
    let parsed = reqwest::Url::parse(url).map_err(|e| invalid(&e.to_string()))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(invalid("the scheme must be http or https"));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(invalid("it names no host"));
    }
    if parsed.query().is_some() || parsed.fragment().is_some() {
        return Err(invalid("it must not have a query or fragment"));
    }
    let mut normalized = parsed.to_string();
    if !normalized.ends_with('/') {
        normalized.push('/');
    }
    Ok(normalized)
}

impl FromStr for ModelSpec {
    type Err = SpecError;

    fn from_str(spec: &str) -> Result<Self, Self::Err> {
        Self::parse(spec)
    }
}

impl fmt::Display for ModelSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::OpenAi { model }
            | Self::Anthropic { model }
            | Self::Bedrock { model }
            | Self::Ollama { model } => write!(f, "{}:{model}", self.provider()),
            Self::OpenAiCompatible { model, base_url } => {
                write!(f, "openai-compatible:{model}@{base_url}")
            }
            Self::Replay { path } => write!(f, "replay:{}", path.display()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn model(s: &str) -> String {
        s.to_owned()
    }

    #[test]
    fn every_provider_parses() {
        let cases = [
            (
                "openai:gpt-4o-mini",
                ModelSpec::OpenAi {
                    model: model("gpt-4o-mini"),
                },
            ),
            (
                "anthropic:claude-sonnet-4-5",
                ModelSpec::Anthropic {
                    model: model("claude-sonnet-4-5"),
                },
            ),
            (
                "bedrock:anthropic.claude-3-5-haiku-20241022-v1:0",
                ModelSpec::Bedrock {
                    model: model("anthropic.claude-3-5-haiku-20241022-v1:0"),
                },
            ),
            (
                "ollama:qwen3:4b",
                ModelSpec::Ollama {
                    model: model("qwen3:4b"),
                },
            ),
            (
                "openai-compatible:gemma@http://127.0.0.1:8080/v1",
                ModelSpec::OpenAiCompatible {
                    model: model("gemma"),
                    base_url: model("http://127.0.0.1:8080/v1/"),
                },
            ),
            (
                "openai-compatible:org/m@v2@https://host.example/v1/",
                ModelSpec::OpenAiCompatible {
                    model: model("org/m@v2"),
                    base_url: model("https://host.example/v1/"),
                },
            ),
            (
                " replay:tests/data/hello.json ",
                ModelSpec::Replay {
                    path: PathBuf::from("tests/data/hello.json"),
                },
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(ModelSpec::parse(text), Ok(expected), "{text}");
        }
    }

    #[test]
    fn display_round_trips() {
        for text in [
            "openai:gpt-4o",
            "anthropic:claude-haiku-4-5",
            "bedrock:amazon.nova-lite-v1:0",
            "ollama:llama3.2",
            "openai-compatible:m@http://127.0.0.1:9/v1/",
            "replay:a.json",
        ] {
            let spec = ModelSpec::parse(text).unwrap();
            assert_eq!(spec.to_string(), text);
            assert_eq!(text.parse::<ModelSpec>(), Ok(spec));
        }
    }

    #[test]
    fn bad_specs_give_typed_errors() {
        let cases = [
            ("", SpecError::Empty),
            ("  ", SpecError::Empty),
            (
                "gpt-4o",
                SpecError::MissingProvider {
                    spec: "gpt-4o".into(),
                },
            ),
            (
                "gemini:pro",
                SpecError::UnknownProvider {
                    provider: "gemini".into(),
                },
            ),
            (
                "openai:",
                SpecError::EmptyModel {
                    provider: "openai",
                    spec: "openai:".into(),
                },
            ),
            (
                "openai-compatible:m",
                SpecError::MissingBaseUrl {
                    spec: "openai-compatible:m".into(),
                },
            ),
            (
                "openai-compatible:@http://h/v1",
                SpecError::EmptyModel {
                    provider: "openai-compatible",
                    spec: "openai-compatible:@http://h/v1".into(),
                },
            ),
            (
                "openai-compatible:m@http://",
                SpecError::InvalidBaseUrl {
                    url: "http://".into(),
                    reason: "empty host".into(),
                },
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(ModelSpec::parse(text), Err(expected), "{text:?}");
        }
    }

    #[test]
    fn base_urls_are_checked_and_end_with_a_slash() {
        assert_eq!(
            normalize_base_url("http://127.0.0.1:11434/v1"),
            Ok("http://127.0.0.1:11434/v1/".into())
        );
        assert_eq!(
            normalize_base_url("ftp://h/"),
            Err(SpecError::InvalidBaseUrl {
                url: "ftp://h/".into(),
                reason: "the scheme must be http or https".into()
            })
        );
        assert!(normalize_base_url("http://h/v1?x=1").is_err());
    }

    #[test]
    fn the_endpoint_of_each_kind_of_spec() {
        let cases = [
            ("ollama:llama3.2", ("127.0.0.1", 11434)),
            ("openai:gpt-4o-mini", ("api.openai.com", 443)),
            (
                "openai-compatible:q@http://10.0.0.2:8080/v1",
                ("10.0.0.2", 8080),
            ),
            ("openai-compatible:q@https://llm.lan/v1", ("llm.lan", 443)),
        ];
        for (spec, (host, port)) in cases {
            assert_eq!(
                ModelSpec::parse(spec).unwrap().endpoint(),
                (host.to_owned(), port),
                "{spec}"
            );
        }
    }
}
