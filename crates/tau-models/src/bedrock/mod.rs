//! Bedrock ConverseStream, natively over reqwest.
//!
//! genai 0.7.2 speaks Converse too, but drops `toolResult.status`, so a refused tier-2 call
//! would reach the model as a success; and tau's messages are already Converse-shaped. The
//! adapter authenticates with a Bedrock API key (`Authorization: Bearer`), not SigV4.

mod eventstream;
mod request;
mod translate;

use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use futures::{Stream, StreamExt};
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use tau_agent::{ChunkStream, Model, ModelError, ModelRequest};

use crate::drive::{primed, timed_out, translate};
use crate::errors::ErrorContext;
use crate::genai_model::reqwest_error;
use crate::secret::ApiKey;
use eventstream::{Decoder, Frame};
pub(crate) use request::Inference;
use translate::BedrockTranslator;

/// Where Bedrock's runtime listens in `region`.
pub(crate) fn default_base_url(region: &str) -> String {
    format!("https://bedrock-runtime.{region}.amazonaws.com/")
}

pub(crate) struct BedrockModel {
    pub model: String,
    pub base_url: String,
    pub key: ApiKey,
    pub errors: ErrorContext,
    pub inference: Inference,
    pub timeout: Duration,
    pub http: reqwest::Client,
}

impl fmt::Debug for BedrockModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BedrockModel")
            .field("model", &self.model)
            .field("endpoint", &self.base_url)
            .field("key_env", &self.errors.key_env)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl Model for BedrockModel {
    async fn stream(&self, request: ModelRequest<'_>) -> Result<ChunkStream, ModelError> {
        let body = request::converse_body(&request, &self.inference);
        let send = self
            .http
            .post(request::stream_url(&self.base_url, &self.model))
            .header(AUTHORIZATION, format!("Bearer {}", self.key.expose()))
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/vnd.amazon.eventstream")
            .body(body.to_string())
            .send();
        let response = tokio::time::timeout(self.timeout, send)
            .await
            .map_err(|_| timed_out(self.timeout))?
            .map_err(|e| reqwest_error(&self.errors, &e))?;
        let status = response.status();
        if !status.is_success() {
            let headers = response.headers().clone();
            let text = tokio::time::timeout(self.timeout, response.text())
                .await
                .map_err(|_| timed_out(self.timeout))?
                .unwrap_or_default();
            return Err(self.errors.http(status.as_u16(), &headers, &text));
        }
        let frames = frames(response.bytes_stream(), self.errors.clone());
        let translator = BedrockTranslator::new(self.errors.clone());
        primed(translate(Box::pin(frames), translator, self.timeout)).await
    }
}

/// Body bytes into event-stream frames; a body that ends inside a frame is incomplete.
fn frames<B>(
    body: impl Stream<Item = Result<B, reqwest::Error>> + Send + Unpin + 'static,
    errors: ErrorContext,
) -> impl Stream<Item = Result<Frame, ModelError>> + Send + 'static
where
    B: AsRef<[u8]> + Send + 'static,
{
    let state = (body, Decoder::default(), errors, false);
    futures::stream::unfold(state, |(mut body, mut decoder, errors, done)| async move {
        if done {
            return None;
        }
        loop {
            match decoder.next_frame() {
                Ok(Some(frame)) => return Some((Ok(frame), (body, decoder, errors, false))),
                Ok(None) => {}
                Err(e) => {
                    let error = errors.malformed(&e.to_string());
                    return Some((Err(error), (body, decoder, errors, true)));
                }
            }
            match body.next().await {
                Some(Ok(bytes)) => decoder.push(bytes.as_ref()),
                Some(Err(e)) => {
                    let error = reqwest_error(&errors, &e);
                    return Some((Err(error), (body, decoder, errors, true)));
                }
                None if decoder.has_partial() => {
                    let error =
                        ModelError::incomplete("the stream ended inside an event-stream frame");
                    return Some((Err(error), (body, decoder, errors, true)));
                }
                None => return None,
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_names_the_variable_not_the_key() {
        let model = BedrockModel {
            model: "amazon.nova-lite-v1:0".into(),
            base_url: "http://127.0.0.1:9/".into(),
            key: ApiKey::new("bedrock-secret-1"),
            errors: ErrorContext {
                server: "Bedrock".into(),
                key_env: Some("AWS_BEARER_TOKEN_BEDROCK".into()),
                key: Some(ApiKey::new("bedrock-secret-1")),
                ..Default::default()
            },
            inference: Inference {
                max_tokens: 10,
                temperature: None,
                tool_choice: None,
            },
            timeout: Duration::from_secs(1),
            http: reqwest::Client::new(),
        };
        assert_eq!(
            format!("{model:?}"),
            "BedrockModel { model: \"amazon.nova-lite-v1:0\", endpoint: \"http://127.0.0.1:9/\", key_env: Some(\"AWS_BEARER_TOKEN_BEDROCK\"), .. }"
        );
    }
}
