//! What the engine needs from the process that hosts it (`tau serve`'s hub; fakes in
//! tests): the store durable questions live in and the channels that show them, prompt
//! actions run as turns in a session, and whether webhooks can reach it.

use async_trait::async_trait;
use tau_core::{RoutineOutcome, StoredAnswers};
use tau_protocol::SessionId;
use tau_state::Approvals;

use crate::validate::{AskChannel, Routine};

/// A prompt action to run as one turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptRun {
    pub routine: String,
    /// The routine's own session (`routine-NAME`), or its conversation's on its channel.
    pub session: SessionId,
    pub prompt: String,
    /// Where its tier-2 calls are asked; `None`: they are refused.
    pub ask: Option<AskChannel>,
    /// What fired it, in words.
    pub trigger: String,
}

/// How a prompt action's turn ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptOutcome {
    pub outcome: RoutineOutcome,
    pub detail: Option<String>,
}

/// The host could not do what the engine asked.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// The routine's name makes no session id.
    #[error(transparent)]
    Session(#[from] tau_protocol::InvalidSessionId),
    /// The hub refused or failed the routine's conversation or turn.
    #[error(transparent)]
    Hub(#[from] tau_hub::HubError),
    /// No agent could be built for the turn.
    #[error(transparent)]
    Build(#[from] tau_core::BuildError),
    /// The turn started and failed.
    #[error("the turn failed: {0}")]
    Turn(#[source] tau_core::TurnError),
    /// This host runs no prompt actions (a routine of fixed calls only).
    #[error("this routine has no prompt")]
    NoPrompt,
    /// The routine's session is not this process's to run a turn in: another tau holds
    /// its lock, or the lock could not be taken (the host's own words).
    #[error(transparent)]
    Locked(Box<dyn std::error::Error + Send + Sync>),
}

/// Runs a prompt action: one agent turn in `run.session`, its tier-2 calls asked on
/// `run.ask` or, when that is `None`, refused (the `AutoRejectApprover`). Returns when
/// the turn is over, questions included, so a routine never overlaps itself.
#[async_trait]
pub trait PromptRunner: Send + Sync {
    async fn run_prompt(&self, run: PromptRun) -> Result<PromptOutcome, HostError>;
}

/// Runs no prompt: for a routine of fixed calls, run where no turn can be (`tau routines
/// run` of a fixed-argument routine).
pub struct NoPrompts;

#[async_trait]
impl PromptRunner for NoPrompts {
    async fn run_prompt(&self, _run: PromptRun) -> Result<PromptOutcome, HostError> {
        Err(HostError::NoPrompt)
    }
}

/// The process that hosts the engine: it runs prompt actions, and shows and records the
/// answers to a routine's stored questions (`StoredAnswers`), expiring them at their
/// deadline with every other question.
#[async_trait]
pub trait RoutineHost: PromptRunner + StoredAnswers {
    /// Where a routine's questions are stored; `None` when no channel could answer one
    /// (then every call that is not exempt is refused).
    fn approvals(&self) -> Option<Approvals>;

    /// The channels that can answer a routine's questions here.
    fn channels(&self) -> Vec<AskChannel>;

    /// The session a routine's turns and questions belong to, given where it asks: by
    /// default its own `routine-NAME`. A hub may make it its owner's conversation on the
    /// `ask` channel, so the routine's questions and turns show there, to them.
    fn session_for(&self, routine: &Routine) -> Result<SessionId, HostError> {
        Ok(crate::validate::session_of(routine.name())?)
    }

    /// Whether this host serves the engine's webhooks under its HTTP listener
    /// (`POST /hooks/NAME`, handled by `Engine::webhook`).
    fn serves_webhooks(&self) -> bool;

    /// Whether a question asked on `channel` reaches its person from here now. A hub that
    /// shares its store and its bot with others, and does not poll the bot, says no for
    /// Telegram: it leaves the routines that ask there to the hub that does.
    fn can_ask_now(&self, _channel: AskChannel) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn a_host_error_says_what_failed_in_the_words_of_what_failed() {
        assert_eq!(
            HostError::NoPrompt.to_string(),
            "this routine has no prompt"
        );
        let hub = HostError::from(tau_hub::HubError::ShuttingDown);
        assert_eq!(hub.to_string(), "the hub is shutting down");
        assert!(matches!(
            hub,
            HostError::Hub(tau_hub::HubError::ShuttingDown)
        ));
        let session = crate::validate::session_of("../x").map_err(HostError::from);
        assert!(matches!(session, Err(HostError::Session(_))), "{session:?}");
    }
}
