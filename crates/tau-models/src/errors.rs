//! Provider failures into tau-agent's `ModelError`, one ladder for every wire format.

use std::time::Duration;

use reqwest::header::HeaderMap;
use serde_json::Value;
use tau_agent::ModelError;

use crate::hints::{Hint, with_hint};
use crate::secret::ApiKey;

/// Who was called, for messages a person can act on.
#[derive(Debug, Clone, Default)]
pub(crate) struct ErrorContext {
    /// e.g. `OpenAI`, `the OpenAI-compatible server at http://127.0.0.1:8080/v1/`.
    pub server: String,
    /// The variable the key came from, when there is one.
    pub key_env: Option<String>,
    pub key: Option<ApiKey>,
    /// What the person can do when the server cannot be reached or lacks the model.
    pub hint: Hint,
}

/// Longest piece of a provider's error body quoted in a message.
const MAX_QUOTED: usize = 600;

/// Phrases providers use when the prompt no longer fits (OpenAI, Anthropic, Bedrock,
/// vLLM, llama.cpp and llama-cpp-python, in that order).
const OVERFLOW_PHRASES: &[&str] = &[
    "context_length_exceeded",
    "maximum context length",
    "prompt is too long",
    "input is too long",
    "exceeds the available context size",
    "exceed context window",
];

impl ErrorContext {
    /// An HTTP error status with its body.
    ///
    /// 1. 429, 503, 529 -> throttled, with Retry-After when sent
    /// 2. 400 or 413 naming a context-length problem -> context window overflow
    /// 3. 401, 403 -> the key was refused; the message names where it came from
    /// 4. 3xx -> a redirect to another server, which is never followed (the key would go
    ///    with it); the message names where it pointed
    /// 5. 404 -> other, with the provider's hint for a model it does not have
    /// 6. anything else (5xx included) -> other, with the provider's message
    pub(crate) fn http(&self, status: u16, headers: &HeaderMap, body: &str) -> ModelError {
        let message = provider_message(body);
        let scrubbed = |text: String| self.scrub(&text);
        match status {
            429 | 503 | 529 => ModelError::Throttled {
                retry_after: retry_after(headers),
                message: scrubbed(format!("{} answered HTTP {status}: {message}", self.server)),
            },
            400 | 413 if is_overflow(body) => ModelError::ContextWindowOverflow {
                message: scrubbed(message),
            },
            401 | 403 => ModelError::other(scrubbed(self.refused_key(status, &message))),
            300..=399 => ModelError::other(scrubbed(format!(
                "{} answered HTTP {status}, a redirect to {}; tau does not follow a model server to another address, so the key stays with the one configured: set model.base_url to the address that answers",
                self.server,
                quoted(
                    headers
                        .get(reqwest::header::LOCATION)
                        .and_then(|l| l.to_str().ok())
                        .unwrap_or("an address it did not give")
                )
            ))),
            404 => ModelError::other(with_hint(
                scrubbed(format!("{} answered HTTP {status}: {message}", self.server)),
                self.hint.not_found(),
            )),
            _ => ModelError::other(scrubbed(format!(
                "{} answered HTTP {status}: {message}",
                self.server
            ))),
        }
    }

    /// An error event inside a stream that had started: `kind` is the provider's error type.
    pub(crate) fn stream_event(&self, kind: &str, message: &str) -> ModelError {
        let message = self.scrub(&quoted(message));
        let lower = kind.to_ascii_lowercase();
        if lower.contains("overloaded")
            || lower.contains("rate_limit")
            || lower.contains("throttl")
            || lower.contains("serviceunavailable")
        {
            return ModelError::Throttled {
                retry_after: None,
                message: self.scrub(&format!("{} is busy ({kind}): {message}", self.server)),
            };
        }
        if is_overflow(kind) || is_overflow(&message) {
            return ModelError::ContextWindowOverflow { message };
        }
        ModelError::other(self.scrub(&format!(
            "{} reported an error ({kind}): {message}",
            self.server
        )))
    }

    /// The request never got an answer: connection refused, TLS, a reset.
    pub(crate) fn network(&self, cause: &str) -> ModelError {
        ModelError::other(with_hint(
            self.scrub(&format!("cannot reach {}: {}", self.server, quoted(cause))),
            self.hint.unreachable(),
        ))
    }

    /// The server answered with something that is not its wire format.
    pub(crate) fn malformed(&self, cause: &str) -> ModelError {
        ModelError::other(self.scrub(&format!(
            "{} sent a malformed response: {}",
            self.server,
            quoted(cause)
        )))
    }

    /// Every text that may quote the server (a body, a cause, the server's address with
    /// its URL) passes here before it becomes part of an error.
    pub(crate) fn scrub(&self, text: &str) -> String {
        match &self.key {
            Some(key) => key.scrub(text),
            None => tau_secret::scrub(text),
        }
    }

    fn refused_key(&self, status: u16, message: &str) -> String {
        match &self.key_env {
            Some(env) => format!(
                "{} refused the API key from the environment variable {env} (HTTP {status}): {message}",
                self.server
            ),
            None => format!(
                "{} wants an API key (HTTP {status}); set model.api_key_env to the environment variable that holds it: {message}",
                self.server
            ),
        }
    }
}

fn is_overflow(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    OVERFLOW_PHRASES.iter().any(|phrase| lower.contains(phrase))
}

/// `error.message` (OpenAI, Anthropic), `message`/`Message` (Bedrock), a string `error`
/// (llama.cpp, Ollama), else the body itself, shortened.
pub(crate) fn provider_message(body: &str) -> String {
    let found = serde_json::from_str::<Value>(body).ok().and_then(|json| {
        [
            json.pointer("/error/message"),
            json.get("message"),
            json.get("Message"),
            json.get("error"),
            json.get("detail"),
        ]
        .into_iter()
        .flatten()
        .find_map(|v| v.as_str().map(str::to_owned))
    });
    let text = found.unwrap_or_else(|| body.trim().to_owned());
    if text.is_empty() {
        return "(no message)".to_owned();
    }
    quoted(&text)
}

/// `retry-after-ms` (OpenAI) wins over `retry-after` in seconds; an HTTP-date or garbage
/// gives `None`, leaving the delay to the caller's backoff.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let number = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<f64>().ok())
    };
    if let Some(ms) = number("retry-after-ms") {
        return Duration::try_from_secs_f64(ms / 1000.0).ok();
    }
    number("retry-after").and_then(|s| Duration::try_from_secs_f64(s).ok())
}

/// What a server said, cut for an error line.
fn quoted(text: &str) -> String {
    tau_protocol::ellipsized(text, MAX_QUOTED)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use reqwest::header::HeaderValue;

    fn ctx() -> ErrorContext {
        ErrorContext {
            server: "OpenAI".into(),
            key_env: Some("OPENAI_API_KEY".into()),
            key: Some(ApiKey::new("sk-secret-value")),
            hint: Hint::None,
        }
    }

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_static(value));
        }
        map
    }

    #[test]
    fn statuses_map_as_the_ladder_says() {
        let none = HeaderMap::new();
        let cases = [
            (
                429,
                headers(&[("retry-after", "7")]),
                r#"{"error":{"message":"Rate limit reached"}}"#,
                ModelError::Throttled {
                    retry_after: Some(Duration::from_secs(7)),
                    message: "OpenAI answered HTTP 429: Rate limit reached".into(),
                },
            ),
            (
                529,
                none.clone(),
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
                ModelError::Throttled {
                    retry_after: None,
                    message: "OpenAI answered HTTP 529: Overloaded".into(),
                },
            ),
            (
                400,
                none.clone(),
                r#"{"error":{"message":"This model's maximum context length is 8192 tokens.","code":"context_length_exceeded"}}"#,
                ModelError::ContextWindowOverflow {
                    message: "This model's maximum context length is 8192 tokens.".into(),
                },
            ),
            (
                400,
                none.clone(),
                r#"{"message":"Input is too long for requested model."}"#,
                ModelError::ContextWindowOverflow {
                    message: "Input is too long for requested model.".into(),
                },
            ),
            (
                400,
                none.clone(),
                r#"{"error":{"message":"messages: field required"}}"#,
                ModelError::other("OpenAI answered HTTP 400: messages: field required"),
            ),
            (
                401,
                none.clone(),
                r#"{"error":{"message":"Incorrect API key provided: sk-secret-value"}}"#,
                ModelError::other(
                    "OpenAI refused the API key from the environment variable OPENAI_API_KEY (HTTP 401): Incorrect API key provided: [redacted]",
                ),
            ),
            (
                502,
                none.clone(),
                "<html>bad gateway</html>",
                ModelError::other("OpenAI answered HTTP 502: <html>bad gateway</html>"),
            ),
        ];
        for (status, headers, body, expected) in cases {
            assert_eq!(
                ctx().http(status, &headers, body),
                expected,
                "{status} {body}"
            );
        }
    }

    #[test]
    fn a_missing_key_variable_is_suggested_when_none_was_used() {
        let ctx = ErrorContext {
            server: "the OpenAI-compatible server at http://127.0.0.1:1/v1/".into(),
            key_env: None,
            key: None,
            hint: Hint::OwnServer,
        };
        assert_eq!(
            ctx.http(401, &HeaderMap::new(), ""),
            ModelError::other(
                "the OpenAI-compatible server at http://127.0.0.1:1/v1/ wants an API key (HTTP 401); set model.api_key_env to the environment variable that holds it: (no message)"
            )
        );
    }

    #[test]
    fn retry_after_reads_seconds_and_milliseconds_and_ignores_garbage() {
        assert_eq!(
            retry_after(&headers(&[("retry-after", "2")])),
            Some(Duration::from_secs(2))
        );
        assert_eq!(
            retry_after(&headers(&[("retry-after", "1"), ("retry-after-ms", "250")])),
            Some(Duration::from_millis(250))
        );
        assert_eq!(retry_after(&headers(&[("retry-after", "-5")])), None);
        assert_eq!(
            retry_after(&headers(&[(
                "retry-after",
                "Wed, 21 Oct 2015 07:28:00 GMT"
            )])),
            None
        );
        assert_eq!(retry_after(&headers(&[("retry-after", "1e400")])), None);
    }

    #[test]
    fn stream_error_events_are_classified() {
        assert!(matches!(
            ctx().stream_event("overloaded_error", "Overloaded"),
            ModelError::Throttled { .. }
        ));
        assert!(matches!(
            ctx().stream_event("throttlingException", "slow down"),
            ModelError::Throttled { .. }
        ));
        assert!(matches!(
            ctx().stream_event("invalid_request_error", "prompt is too long: 210000 tokens"),
            ModelError::ContextWindowOverflow { .. }
        ));
        assert_eq!(
            ctx().stream_event("api_error", "sk-secret-value broke"),
            ModelError::other("OpenAI reported an error (api_error): [redacted] broke")
        );
    }

    #[test]
    fn long_bodies_are_shortened() {
        let body = "x".repeat(5000);
        assert!(provider_message(&body).chars().count() <= MAX_QUOTED + 1);
    }
}
