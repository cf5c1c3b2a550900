//! Routines hosted beside the hub: the engine's [`RoutineHost`] over the hub's
//! [`RoutinePort`], and what the channels learn of the routines ([`tau_hub::Routines`]).
//! A routine's questions are stored with every other question and shown in its own
//! conversation on its `ask` channel (`routine:NAME`), where the person answers them like
//! any other; its prompt actions run as turns of that conversation. A prompt action
//! without an `ask` channel runs on the host's local runner, its tier-2 calls refused.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tau_core::{RoutineOutcome, StoredAnswers};
use tau_hub::{RoutineOrigin, RoutinePort, WebhookDelivery};
use tau_protocol::{ApprovalId, RoutineAllowance, SessionId, TurnStop};
use tau_state::{ApprovalRow, Approvals};

use crate::book::{Book, load};
use crate::engine::Engine;
use crate::host::{HostError, PromptOutcome, PromptRun, PromptRunner, RoutineHost};
use crate::store::{RoutineStore, StoreError};
use crate::validate::{AskChannel, Checks, Routine, session_of};

/// How long past a question's own wait a routine's turn may take.
const TURN_GRACE: Duration = Duration::from_secs(300);
/// How long the engine waits for a question's change before it looks again itself.
const CHANGE_WAIT: Duration = Duration::from_secs(1);

/// The hub as the engine's host.
pub struct HubHost {
    hub: Arc<dyn RoutinePort>,
    /// Runs a prompt action that asks nowhere.
    local: Arc<dyn PromptRunner>,
    /// How long a stored question waits (`[approval] remote_timeout_seconds`).
    timeout: Duration,
    /// The channels the hub runs, where routines may ask.
    channels: Vec<AskChannel>,
    /// Whether a channel reaches people from this hub now (see `asking_while`).
    live: Arc<dyn Fn(AskChannel) -> bool + Send + Sync>,
}

impl HubHost {
    /// Webhooks are served under the hub's web listener.
    pub const SERVES_WEBHOOKS: bool = true;

    pub fn new(
        hub: Arc<dyn RoutinePort>,
        local: Arc<dyn PromptRunner>,
        timeout: Duration,
        channels: Vec<AskChannel>,
    ) -> Self {
        Self {
            hub,
            local,
            timeout,
            channels,
            live: Arc::new(|_| true),
        }
    }

    /// A routine asking on a channel runs here only while `live` says that channel
    /// reaches people from this hub (a bot another hub polls does not).
    #[must_use]
    pub fn asking_while(mut self, live: Arc<dyn Fn(AskChannel) -> bool + Send + Sync>) -> Self {
        self.live = live;
        self
    }
}

/// What a routine's turn in the hub amounts to for its run.
fn outcome_of(stop_reason: TurnStop, refused: &[String]) -> PromptOutcome {
    if !refused.is_empty() {
        return PromptOutcome {
            outcome: RoutineOutcome::Refused,
            detail: Some(format!("refused: {}", refused.join(", "))),
        };
    }
    match stop_reason {
        TurnStop::EndTurn | TurnStop::StopSequence => PromptOutcome {
            outcome: RoutineOutcome::Success,
            detail: None,
        },
        other => PromptOutcome {
            outcome: RoutineOutcome::Error,
            detail: Some(format!(
                "the turn ended with {}",
                serde_json::to_value(other)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default()
            )),
        },
    }
}

#[async_trait]
impl PromptRunner for HubHost {
    async fn run_prompt(&self, run: PromptRun) -> Result<PromptOutcome, HostError> {
        let Some(channel) = run.ask else {
            return self.local.run_prompt(run).await;
        };
        // A question waits up to the remote timeout; a little more for the turn around it.
        let turn = self
            .hub
            .run_turn(
                channel.as_str(),
                &run.session,
                run.prompt,
                self.timeout + TURN_GRACE,
            )
            .await?;
        Ok(outcome_of(turn.stop_reason, &turn.refused))
    }
}

#[async_trait]
impl RoutineHost for HubHost {
    fn approvals(&self) -> Option<Approvals> {
        Some(self.hub.questions())
    }

    fn channels(&self) -> Vec<AskChannel> {
        self.channels.clone()
    }

    fn session_for(&self, routine: &Routine) -> Result<SessionId, HostError> {
        match routine.ask {
            None => Ok(session_of(routine.name())?),
            Some(channel) => Ok(self.hub.open_conversation(
                channel.as_str(),
                routine.name(),
                routine.owner.as_ref(),
            )?),
        }
    }

    fn serves_webhooks(&self) -> bool {
        Self::SERVES_WEBHOOKS
    }

    fn can_ask_now(&self, channel: AskChannel) -> bool {
        (self.live)(channel)
    }
}

#[async_trait]
impl StoredAnswers for HubHost {
    fn show_question(&self, row: &ApprovalRow) {
        self.hub.show_question(row);
    }

    async fn changed(&self, id: &ApprovalId) {
        self.hub.changed(id, CHANGE_WAIT).await;
    }

    fn settled(&self, id: &ApprovalId) {
        self.hub.settled(id);
    }
}

/// The routines as the hub's channels see them: webhooks delivered, the list a page
/// shows, which conversation is a routine's, and the exemptions among the grants.
pub struct HostedRoutines {
    engine: Engine,
    store: Arc<RoutineStore>,
    /// The routines of `tau.toml`.
    config: Vec<Routine>,
    zone: jiff::tz::TimeZone,
    people: tau_core::Household,
}

impl HostedRoutines {
    pub fn new(
        engine: Engine,
        store: Arc<RoutineStore>,
        config: Vec<Routine>,
        zone: jiff::tz::TimeZone,
        people: tau_core::Household,
    ) -> Self {
        Self {
            engine,
            store,
            config,
            zone,
            people,
        }
    }

    /// Every routine there is now: those of `tau.toml` and those made in a conversation.
    fn book(&self) -> Result<Book, StoreError> {
        let no_env = |_: &str| None;
        let checks = Checks {
            tools: None,
            zone: &self.zone,
            env: &no_env,
            now: jiff::Timestamp::now(),
            at_must_be_future: false,
            webhooks: None,
            people: &self.people,
        };
        load(&self.config, &self.store, &checks)
    }
}

impl tau_hub::Routines for HostedRoutines {
    fn webhook(
        &self,
        name: &str,
        authorization: Option<&str>,
        sender: &str,
    ) -> Result<WebhookDelivery, (u16, String)> {
        match self.engine.webhook(name, authorization, sender) {
            Ok(call) => Ok(Box::new(move |body: &[u8]| {
                let reply = call.deliver(body);
                (reply.status, reply.text)
            })),
            Err(refused) => Err((refused.status, refused.text)),
        }
    }

    fn list(&self) -> serde_json::Value {
        self.book()
            .and_then(|book| crate::tools::routines_json(&book, &self.store))
            .unwrap_or_else(|error| {
                tracing::error!(%error, "cannot list the routines");
                serde_json::json!([])
            })
    }

    fn allowances(&self) -> Vec<RoutineAllowance> {
        self.book()
            .map(|book| crate::exemption::allowances(&book))
            .unwrap_or_else(|error| {
                tracing::error!(%error, "cannot list the routines' exemptions");
                Vec::new()
            })
    }

    fn origin(&self, key: &str) -> Option<RoutineOrigin> {
        let name = tau_state::routine_of_key(key)?;
        let trigger = match self.book() {
            Ok(book) => book.get(name).map(Routine::origin),
            Err(error) => {
                tracing::warn!(%error, "cannot read the routines");
                None
            }
        };
        Some(RoutineOrigin {
            routine: name.to_owned(),
            // A routine since deleted still owns its conversation.
            trigger: trigger.unwrap_or_else(|| "no longer set up".to_owned()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_routine_turn_is_refused_when_any_call_was_and_an_error_unless_it_ended() {
        let refused = outcome_of(TurnStop::EndTurn, &["run_command".to_owned()]);
        assert_eq!(refused.outcome, RoutineOutcome::Refused);
        assert_eq!(refused.detail.as_deref(), Some("refused: run_command"));
        assert_eq!(
            outcome_of(TurnStop::EndTurn, &[]),
            PromptOutcome {
                outcome: RoutineOutcome::Success,
                detail: None
            }
        );
        let cut = outcome_of(TurnStop::MaxTokens, &[]);
        assert_eq!(cut.outcome, RoutineOutcome::Error);
        assert_eq!(
            cut.detail.as_deref(),
            Some("the turn ended with max_tokens")
        );
    }
}
