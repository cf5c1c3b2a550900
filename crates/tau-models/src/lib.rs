//! tau-models: the model providers behind tau-agent's `Model` trait.
//!
//! Owns the wire formats (OpenAI chat completions, which also covers Ollama, llama.cpp,
//! vLLM and LM Studio through a base URL; Anthropic Messages; Bedrock Converse), the
//! `provider:model` spec string, the `[model]` config table, API keys read from the
//! environment, and the mapping of every provider failure into `ModelError`. It knows
//! nothing of tiers, approvals or channels: a refusal reaches it as an ordinary error tool
//! result and leaves it as that provider's error form.
//!
//! Why genai, and where not: genai 0.7.2 already streams OpenAI-compatible and Anthropic
//! answers, tool calls and usage, so those two go through it, always with an explicit
//! `ServiceTarget` so its model-name guessing never picks an adapter or URL. It falls short
//! in two places, handled here: Anthropic tool results carry no `is_error`, so they are sent
//! as raw `tool_result` blocks; and its Bedrock adapter drops `toolResult.status`, so Bedrock
//! Converse is a small native adapter (tau's messages already have the Converse shape).
//! Bedrock authenticates with a Bedrock API key (bearer token), not AWS SigV4 credentials.
//!
//! Layout
//! - `spec.rs`: [`ModelSpec`]; `config.rs`: [`ModelConfig`]; `builder.rs`: [`build_model`]
//! - `genai_request.rs`, `genai_stream.rs`, `genai_model.rs`: OpenAI and Anthropic via genai
//! - `bedrock/`: ConverseStream, its event-stream framing and its events
//! - `drive.rs`: translation with an idle timeout; `errors.rs`: failures into `ModelError`
//! - `secret.rs`: the API key, which never shows in Debug output or messages
//! - `hints.rs`: what a person can do about a failure, per provider; `probe.rs`: the
//!   start-up check that the model can be reached; `doctor.rs`: `tau doctor`'s model row

mod bedrock;
mod builder;
mod config;
mod doctor;
mod drive;
mod errors;
mod genai_model;
mod genai_request;
mod genai_stream;
mod hints;
mod probe;
mod secret;
mod spec;

pub use builder::{
    ANTHROPIC_DEFAULT_BASE_URL, ANTHROPIC_KEY_ENV, BEDROCK_KEY_ENV, ModelBuildError,
    OPENAI_DEFAULT_BASE_URL, OPENAI_KEY_ENV, build_model,
};
pub use config::{
    ConfigError, DEFAULT_MAX_TOKENS, DEFAULT_REQUEST_TIMEOUT_SECONDS, DEFAULT_SPEC, ModelConfig,
};
pub use doctor::{DoctorRow, doctor_row};
pub use probe::{Reachability, check_model};
pub use spec::{ModelSpec, OLLAMA_DEFAULT_BASE_URL, SpecError};

/// True for the log targets of the model library itself. genai logs failed response
/// bodies, which may quote the API key, unscrubbed and at ERROR; tau-models reports every
/// failure as a `ModelError` with keys scrubbed. So a subscriber drops these targets
/// whatever its level or `TAU_LOG` says.
pub fn is_unscrubbed_log_target(target: &str) -> bool {
    target == "genai" || target.starts_with("genai::")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_library_targets_are_the_unscrubbed_ones() {
        for (target, unscrubbed) in [
            ("genai", true),
            ("genai::adapter::adapters::openai::streamer", true),
            ("genai_extra", false),
            ("tau_models::drive", false),
            ("tau_core::turn", false),
        ] {
            assert_eq!(is_unscrubbed_log_target(target), unscrubbed, "{target}");
        }
    }
}
