//! What a person can do about a model that cannot be reached or has no such model, in
//! each provider's own terms: appended to the failure's message as a sentence of its own.

/// The provider behind a model, as far as its remedies go.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) enum Hint {
    /// Nothing to add (Bedrock, a replay, tests).
    #[default]
    None,
    /// Ollama: its own commands start it and fetch models.
    Ollama { model: String },
    /// A server the person runs (llama.cpp, vLLM, LM Studio) at a base URL of their own.
    OwnServer,
    /// A hosted API (OpenAI, Anthropic) with a catalogue of models.
    Hosted { model: String },
}

impl Hint {
    /// The request got no answer at all (connection refused, no route, no name).
    pub(crate) fn unreachable(&self) -> Option<String> {
        match self {
            Self::None => None,
            Self::Ollama { model } => Some(format!(
                "Is `ollama serve` running? Then `ollama pull {model}`, if the model is not there yet."
            )),
            Self::OwnServer => Some(
                "Is the server running at that address? (model.spec, or model.base_url)".to_owned(),
            ),
            Self::Hosted { .. } => Some(
                "Check the network connection (and model.base_url, when it is set).".to_owned(),
            ),
        }
    }

    /// The server answered that it has no such model (HTTP 404).
    pub(crate) fn not_found(&self) -> Option<String> {
        match self {
            Self::None => None,
            Self::Ollama { model } => Some(format!("`ollama pull {model}` fetches it.")),
            Self::OwnServer => {
                Some("The server does not serve that model (model.spec).".to_owned())
            }
            Self::Hosted { model } => Some(format!(
                "There is no model \"{model}\" there for this key; check model.spec."
            )),
        }
    }
}

/// `message` with `hint` after it, as a sentence of its own.
pub(crate) fn with_hint(message: String, hint: Option<String>) -> String {
    match hint {
        Some(hint) => format!("{}. {hint}", message.trim_end_matches('.')),
        None => message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn each_provider_says_what_to_do() {
        let ollama = Hint::Ollama {
            model: "llama3.2".into(),
        };
        let hosted = Hint::Hosted {
            model: "gpt-4o".into(),
        };
        assert_eq!(
            [
                ollama.unreachable(),
                ollama.not_found(),
                Hint::OwnServer.unreachable(),
                Hint::OwnServer.not_found(),
                hosted.unreachable(),
                hosted.not_found(),
                Hint::None.unreachable(),
                Hint::None.not_found(),
            ],
            [
                Some("Is `ollama serve` running? Then `ollama pull llama3.2`, if the model is not there yet.".to_owned()),
                Some("`ollama pull llama3.2` fetches it.".to_owned()),
                Some("Is the server running at that address? (model.spec, or model.base_url)".to_owned()),
                Some("The server does not serve that model (model.spec).".to_owned()),
                Some("Check the network connection (and model.base_url, when it is set).".to_owned()),
                Some("There is no model \"gpt-4o\" there for this key; check model.spec.".to_owned()),
                None,
                None,
            ]
        );
        assert_eq!(
            with_hint("cannot reach X: refused".into(), ollama.not_found()),
            "cannot reach X: refused. `ollama pull llama3.2` fetches it."
        );
    }
}
