//! Whether the configured model can be reached, asked once when a channel starts
//! (`tau chat`, `tau tui`, `tau serve`), so a model that is down is said at once, with
//! what to do about it, rather than after the first message. Bounded by a short wait:
//! a server that is slow to answer is left to the first turn.

use std::time::Duration;

use reqwest::{RequestBuilder, StatusCode};
use serde_json::Value;
use tau_agent::ModelError;

use crate::builder::{ModelBuildError, Resolved, Target, http_client, resolve};
use crate::config::ModelConfig;
use crate::errors::ErrorContext;
use crate::genai_model::network_cause;
use crate::genai_request::Wire;
use crate::hints::{Hint, with_hint};

/// What the start-up check found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reachability {
    /// The server answered, and has the model as far as it can say.
    Reachable,
    /// Nothing to check here: a replay script, or Bedrock.
    NotChecked,
    /// No answer within the wait; nothing is known yet.
    NoAnswerYet,
    /// A problem a person can act on; the message ends with the provider's hint.
    Problem(String),
}

/// Checks the model `config` names, waiting at most `wait`.
///
/// 1. a replay script or Bedrock -> not checked
/// 2. no answer at all (refused, no route, no name) -> problem, with the provider's hint
/// 3. the key refused (401, 403) -> problem, naming the key's variable
/// 4. Ollama without the model among its models -> problem: `ollama pull MODEL`
/// 5. a hosted API that says 404 for the model -> problem, naming the model
/// 6. anything else -> reachable (a server that answers at all is left to the turn)
pub async fn check_model(
    config: &ModelConfig,
    env: &dyn Fn(&str) -> Option<String>,
    wait: Duration,
) -> Reachability {
    let target = match config
        .check()
        .map_err(ModelBuildError::from)
        .and_then(|c| resolve(&c, env))
    {
        Ok(Resolved::Genai(target)) => target,
        Ok(Resolved::Replay(_) | Resolved::Bedrock(_)) => return Reachability::NotChecked,
        Err(error) => return Reachability::Problem(error.to_string()),
    };
    match tokio::time::timeout(wait, ask(&target, wait)).await {
        Ok(found) => found,
        Err(_elapsed) => Reachability::NoAnswerYet,
    }
}

async fn ask(target: &Target, wait: Duration) -> Reachability {
    let ctx = &target.errors;
    let Ok(http) = http_client(&target.base_url, target.timeout.min(wait)) else {
        return Reachability::NotChecked;
    };
    let Some(url) = models_url(target) else {
        return Reachability::NotChecked;
    };
    let response = match authorized(target, http.get(url)).timeout(wait).send().await {
        Ok(response) => response,
        Err(error) if error.is_timeout() => return Reachability::NoAnswerYet,
        Err(error) => return problem(ctx.network(&network_cause(&error))),
    };
    let status = response.status();
    let headers = response.headers().clone();
    let body = response.text().await.unwrap_or_default();
    classify(ctx, &target.model, status, &headers, &body)
}

/// Steps 3 to 6 of [`check_model`], on the answer the server gave.
fn classify(
    ctx: &ErrorContext,
    model: &str,
    status: StatusCode,
    headers: &reqwest::header::HeaderMap,
    body: &str,
) -> Reachability {
    match (&ctx.hint, status.as_u16()) {
        (_, 401 | 403) => problem(ctx.http(status.as_u16(), headers, body)),
        (Hint::Ollama { .. }, 200) if !lists(body, model) => Reachability::Problem(with_hint(
            format!("{} has no model \"{model}\"", ctx.server),
            ctx.hint.not_found(),
        )),
        (Hint::Hosted { .. }, 404) => problem(ctx.http(404, headers, body)),
        _ => Reachability::Reachable,
    }
}

/// A failure as a problem, in the provider's words (without "model error:").
fn problem(error: ModelError) -> Reachability {
    Reachability::Problem(match error {
        ModelError::Other { message } => message,
        other => other.to_string(),
    })
}

/// Ollama lists `llama3.2:latest` for `llama3.2`.
fn lists(body: &str, model: &str) -> bool {
    let Ok(json) = serde_json::from_str::<Value>(body) else {
        // Not the list we know: say nothing rather than something wrong.
        return true;
    };
    let Some(models) = json.get("data").and_then(Value::as_array) else {
        return true;
    };
    let tagged = if model.contains(':') {
        model.to_owned()
    } else {
        format!("{model}:latest")
    };
    models
        .iter()
        .filter_map(|m| m.get("id").and_then(Value::as_str))
        .any(|id| id == model || id == tagged)
}

/// Ollama and servers of one's own: the list of models (it is cheap); a hosted API: the
/// model itself, so a 404 names it.
fn models_url(target: &Target) -> Option<reqwest::Url> {
    let mut url = reqwest::Url::parse(&target.base_url).ok()?;
    {
        let mut path = url.path_segments_mut().ok()?;
        path.pop_if_empty().push("models");
        if matches!(target.errors.hint, Hint::Hosted { .. }) {
            path.push(&target.model);
        }
    }
    Some(url)
}

fn authorized(target: &Target, request: RequestBuilder) -> RequestBuilder {
    let Some(key) = &target.key else {
        return request;
    };
    match target.wire {
        Wire::OpenAi => request.bearer_auth(key.expose()),
        Wire::Anthropic => request
            .header("x-api-key", key.expose())
            .header("anthropic-version", "2023-06-01"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use reqwest::header::HeaderMap;

    fn ctx(hint: Hint) -> ErrorContext {
        ErrorContext {
            server: "Ollama at http://127.0.0.1:11434/v1/".into(),
            hint,
            ..Default::default()
        }
    }

    fn ollama() -> Hint {
        Hint::Ollama {
            model: "llama3.2".into(),
        }
    }

    #[test]
    fn ollama_without_the_model_says_how_to_pull_it() {
        let listed = r#"{"object":"list","data":[{"id":"qwen2.5:latest"}]}"#;
        assert_eq!(
            classify(&ctx(ollama()), "llama3.2", StatusCode::OK, &HeaderMap::new(), listed),
            Reachability::Problem(
                "Ollama at http://127.0.0.1:11434/v1/ has no model \"llama3.2\". `ollama pull llama3.2` fetches it.".into()
            )
        );
        let with_it = r#"{"object":"list","data":[{"id":"llama3.2:latest"}]}"#;
        assert_eq!(
            classify(
                &ctx(ollama()),
                "llama3.2",
                StatusCode::OK,
                &HeaderMap::new(),
                with_it
            ),
            Reachability::Reachable
        );
        assert_eq!(
            classify(
                &ctx(ollama()),
                "llama3.2",
                StatusCode::OK,
                &HeaderMap::new(),
                "<html>"
            ),
            Reachability::Reachable,
            "an answer tau does not know says nothing"
        );
    }

    #[test]
    fn a_hosted_404_names_the_model_and_other_answers_are_left_to_the_turn() {
        let hosted = Hint::Hosted {
            model: "gpt-5o".into(),
        };
        let mut context = ctx(hosted);
        context.server = "OpenAI at https://api.openai.com/v1/".into();
        let body = r#"{"error":{"message":"The model `gpt-5o` does not exist"}}"#;
        assert_eq!(
            classify(&context, "gpt-5o", StatusCode::NOT_FOUND, &HeaderMap::new(), body),
            Reachability::Problem(
                "OpenAI at https://api.openai.com/v1/ answered HTTP 404: The model `gpt-5o` does not exist. There is no model \"gpt-5o\" there for this key; check model.spec.".into()
            )
        );
        for status in [StatusCode::OK, StatusCode::INTERNAL_SERVER_ERROR] {
            assert_eq!(
                classify(&context, "gpt-5o", status, &HeaderMap::new(), ""),
                Reachability::Reachable
            );
        }
        assert_eq!(
            classify(
                &ctx(Hint::OwnServer),
                "x",
                StatusCode::NOT_FOUND,
                &HeaderMap::new(),
                ""
            ),
            Reachability::Reachable,
            "a server of one's own need not list models"
        );
    }
}
