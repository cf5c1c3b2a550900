//! OpenAI chat completions and Anthropic Messages through genai.

use std::error::Error as StdError;
use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use genai::adapter::AdapterKind;
use genai::chat::{ChatOptions, ToolChoice as GenaiToolChoice};
use genai::resolver::{AuthData, Endpoint};
use genai::{Client, ModelIden, ServiceTarget};
use serde_json::Value;
use tau_agent::{ChunkStream, Model, ModelError, ModelRequest};

use crate::config::ToolChoice;
use crate::drive::{primed, translate};
use crate::errors::ErrorContext;
use crate::genai_request::{ANTHROPIC_RESERVED_TOOL, Wire, chat_request};
use crate::genai_stream::GenaiTranslator;
use crate::secret::ApiKey;

/// What a [`GenaiModel`] is built from.
pub(crate) struct GenaiSettings {
    pub wire: Wire,
    pub model: String,
    /// Ends with `/`; endpoint paths are joined under it.
    pub base_url: String,
    pub key: ApiKey,
    pub errors: ErrorContext,
    pub temperature: Option<f64>,
    pub max_tokens: u32,
    pub tool_choice: Option<ToolChoice>,
    pub timeout: Duration,
    pub http: reqwest::Client,
}

/// One model behind an OpenAI-compatible or Anthropic endpoint.
pub(crate) struct GenaiModel {
    wire: Wire,
    client: Client,
    /// Given to genai whole, so none of its model-name guessing picks the adapter or URL.
    target: ServiceTarget,
    options: ChatOptions,
    errors: ErrorContext,
    timeout: Duration,
}

impl GenaiModel {
    pub(crate) fn new(settings: GenaiSettings) -> Result<Self, genai::Error> {
        let kind = match settings.wire {
            Wire::OpenAi => AdapterKind::OpenAI,
            Wire::Anthropic => AdapterKind::Anthropic,
        };
        let target = ServiceTarget {
            endpoint: Endpoint::from_owned(settings.base_url),
            auth: AuthData::from_single(settings.key.expose()),
            model: ModelIden::new(kind, settings.model),
        };
        let mut options = ChatOptions::default()
            .with_capture_content(true)
            .with_capture_tool_calls(true)
            .with_capture_usage(true)
            .with_max_tokens(settings.max_tokens);
        if let Some(temperature) = settings.temperature {
            options = options.with_temperature(temperature);
        }
        if let Some(choice) = settings.tool_choice {
            options = options.with_tool_choice(match choice {
                ToolChoice::Auto => GenaiToolChoice::Auto,
                ToolChoice::None => GenaiToolChoice::None,
                ToolChoice::Required => GenaiToolChoice::Required,
                ToolChoice::Tool(name) => GenaiToolChoice::tool(name),
            });
        }
        Ok(Self {
            wire: settings.wire,
            client: Client::builder().with_reqwest(settings.http).build()?,
            target,
            options,
            errors: settings.errors,
            timeout: settings.timeout,
        })
    }
}

impl fmt::Debug for GenaiModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GenaiModel")
            .field("wire", &self.wire)
            .field("model", &self.target.model.model_name.to_string())
            .field("endpoint", &self.target.endpoint.base_url())
            .field("key_env", &self.errors.key_env)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl Model for GenaiModel {
    async fn stream(&self, request: ModelRequest<'_>) -> Result<ChunkStream, ModelError> {
        if self.wire == Wire::Anthropic
            && request
                .tool_specs
                .iter()
                .any(|spec| spec.name == ANTHROPIC_RESERVED_TOOL)
        {
            return Err(ModelError::other(format!(
                "a tool named {ANTHROPIC_RESERVED_TOOL:?} cannot be offered to Anthropic models \
                 here: it would be taken for Anthropic's own web search; rename the tool"
            )));
        }
        let chat = chat_request(self.wire, &request);
        let response = self
            .client
            .exec_chat_stream(self.target.clone(), chat, Some(&self.options))
            .await
            .map_err(|e| map_error(&self.errors, e))?;
        let translator = GenaiTranslator::new(self.errors.clone());
        primed(translate(response.stream, translator, self.timeout)).await
    }
}

/// genai's error shapes into tau's. An HTTP failure hides in three places (genai 0.7.2):
/// a boxed `HttpError` inside `WebStream`, `HttpError` itself, or a webc status error.
pub(crate) fn map_error(ctx: &ErrorContext, error: genai::Error) -> ModelError {
    use genai::Error as E;
    match error {
        E::WebStream { error, cause, .. } => boxed(ctx, error.as_ref(), &cause),
        E::HttpError {
            status,
            body,
            headers,
            ..
        } => ctx.http(status.as_u16(), &headers, &body),
        E::WebModelCall { webc_error, .. } | E::WebAdapterCall { webc_error, .. } => {
            webc(ctx, webc_error)
        }
        E::ChatResponse { body, .. } => stream_error_event(ctx, &body),
        // JSON that ends early is an event cut off, typically by a server that went away.
        E::StreamParse { serde_error, .. } if serde_error.is_eof() => {
            ModelError::incomplete(format!("{} cut an event short: {serde_error}", ctx.server))
        }
        E::StreamParse { serde_error, .. } => ctx.malformed(&serde_error.to_string()),
        E::JsonValueExt(error) => ctx.malformed(&error.to_string()),
        E::SerdeJson(error) => ctx.malformed(&error.to_string()),
        other => ModelError::other(ctx.scrub(&other.to_string())),
    }
}

fn boxed(
    ctx: &ErrorContext,
    error: &(dyn StdError + Send + Sync + 'static),
    cause: &str,
) -> ModelError {
    if let Some(inner) = error.downcast_ref::<genai::Error>() {
        return match inner {
            genai::Error::HttpError {
                status,
                body,
                headers,
                ..
            } => ctx.http(status.as_u16(), headers, body),
            other => ctx.malformed(&other.to_string()),
        };
    }
    if let Some(error) = error.downcast_ref::<reqwest::Error>() {
        return reqwest_error(ctx, error);
    }
    if error.downcast_ref::<std::str::Utf8Error>().is_some() {
        return ctx.malformed(cause);
    }
    ModelError::other(ctx.scrub(&format!("{}: {cause}", ctx.server)))
}

fn webc(ctx: &ErrorContext, error: genai::webc::Error) -> ModelError {
    use genai::webc::Error as W;
    match error {
        W::ResponseFailedStatus {
            status,
            body,
            headers,
        } => ctx.http(status.as_u16(), &headers, &body),
        W::Reqwest(error) => reqwest_error(ctx, &error),
        other => ctx.malformed(&other.to_string()),
    }
}

/// A body that broke off mid-stream is an incomplete message; anything before an answer is
/// a network failure.
pub(crate) fn reqwest_error(ctx: &ErrorContext, error: &reqwest::Error) -> ModelError {
    let chain = error_chain(error);
    if error.is_body() || error.is_decode() {
        return ModelError::incomplete(format!(
            "the stream from {} broke off: {}",
            ctx.server,
            ctx.scrub(&chain)
        ));
    }
    ctx.network(&network_cause(error))
}

/// What stopped a request that got no answer: for a failed connection or a timeout its
/// innermost cause ("Connection refused (os error 111)"), else the whole chain.
pub(crate) fn network_cause(error: &reqwest::Error) -> String {
    if !(error.is_connect() || error.is_timeout()) {
        return error_chain(error);
    }
    let mut innermost: &dyn StdError = error;
    while let Some(source) = innermost.source() {
        innermost = source;
    }
    innermost.to_string()
}

/// The error and its sources, so "error sending request" comes with "connection refused".
pub(crate) fn error_chain(error: &dyn StdError) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let part = cause.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = cause.source();
    }
    text
}

/// `{"type":"error","error":{"type":"overloaded_error","message":"..."}}` (Anthropic) or an
/// OpenAI `{"message":..,"type":..,"code":..}` object.
fn stream_error_event(ctx: &ErrorContext, body: &Value) -> ModelError {
    let inner = body.get("error").unwrap_or(body);
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
    let kind = text(inner.get("code"))
        .or_else(|| text(inner.get("type")))
        .unwrap_or_else(|| "error".to_owned());
    let message = text(inner.get("message")).unwrap_or_else(|| body.to_string());
    ctx.stream_event(&kind, &message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_names_the_variable_not_the_key() {
        let model = GenaiModel::new(GenaiSettings {
            wire: Wire::OpenAi,
            model: "gpt-4o".into(),
            base_url: "http://127.0.0.1:9/v1/".into(),
            key: ApiKey::new("sk-very-secret-1"),
            errors: ErrorContext {
                server: "OpenAI".into(),
                key_env: Some("OPENAI_API_KEY".into()),
                key: Some(ApiKey::new("sk-very-secret-1")),
                ..Default::default()
            },
            temperature: None,
            max_tokens: 10,
            tool_choice: None,
            timeout: Duration::from_secs(1),
            http: reqwest::Client::new(),
        })
        .unwrap();
        let debug = format!("{model:?}");
        assert_eq!(
            debug,
            "GenaiModel { wire: OpenAi, model: \"gpt-4o\", endpoint: \"http://127.0.0.1:9/v1/\", key_env: Some(\"OPENAI_API_KEY\"), .. }"
        );
        assert!(!format!("{:?}", model.target).contains("sk-very-secret-1"));
    }
}
