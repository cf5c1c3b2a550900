//! Prompt actions run as one turn of a `TauAgent` in the routine's own session, built with
//! the same `build_agent` as every conversation, so the same gate sits in the loop. Used
//! by `tau routines run` (a person at the terminal answers) and by tests; a hub that asks
//! durably builds its own turns the same way.

use std::sync::Arc;

use async_trait::async_trait;
use tau_agent::{AgentStop, Model, SessionRepository};
use tau_core::approval::Approver;
use tau_core::{
    AgentParts, AuditEvent, AutoRejectApprover, CallStatus, ChannelSink, CoreConfig, EventBus,
    RecordedEvents, RoutineOutcome, ToolCatalog, build_agent,
};

use crate::host::{HostError, PromptOutcome, PromptRun, PromptRunner};
use crate::validate::AskChannel;

/// Who is asked about a prompt action's tier-2 calls.
#[derive(Clone)]
pub enum PromptApprover {
    /// As the routine says: with no `ask` channel, nobody (every call is refused by the
    /// `AutoRejectApprover`); with one, the approver this gives for it (`None`: refused).
    ByAsk(Arc<dyn Fn(AskChannel) -> Option<Arc<dyn Approver>> + Send + Sync>),
    /// This approver, whatever the routine says: a person started the run here.
    Always(Arc<dyn Approver>),
}

/// Runs prompt actions as turns.
pub struct TurnPrompts {
    pub config: CoreConfig,
    pub model: Arc<dyn Model>,
    pub catalog: ToolCatalog,
    /// Where the routine's session is kept; `None`: each run starts afresh.
    pub sessions: Option<Arc<dyn SessionRepository>>,
    pub events: EventBus,
    pub approver: PromptApprover,
    /// Where the turn is shown, if anywhere.
    pub sink: Option<ChannelSink>,
}

impl TurnPrompts {
    fn approver(&self, ask: Option<AskChannel>) -> Arc<dyn Approver> {
        match (&self.approver, ask) {
            (PromptApprover::Always(approver), _) => Arc::clone(approver),
            (PromptApprover::ByAsk(_), None) => Arc::new(AutoRejectApprover),
            (PromptApprover::ByAsk(by), Some(channel)) => {
                by(channel).unwrap_or_else(|| Arc::new(AutoRejectApprover))
            }
        }
    }
}

#[async_trait]
impl PromptRunner for TurnPrompts {
    async fn run_prompt(&self, run: PromptRun) -> Result<PromptOutcome, HostError> {
        let session = match &self.sessions {
            Some(repository) => Some((Arc::clone(repository), run.session.clone())),
            None => None,
        };
        let mut agent = build_agent(AgentParts {
            config: self.config.clone(),
            model: Arc::clone(&self.model),
            catalog: self.catalog.clone(),
            approver: self.approver(run.ask),
            hooks: Vec::new(),
            plugins: Vec::new(),
            session,
            events: self.events.clone(),
            durable: None,
            grants: None,
            dispatches: None,
        })
        .await?;
        let calls = RecordedEvents::subscribed_to(agent.events());
        let outcome = agent
            .stream(&run.prompt, self.sink.as_ref())
            .await
            .map_err(HostError::Turn)?;
        let refused: Vec<String> = calls
            .events()
            .into_iter()
            .filter_map(|event| match event {
                AuditEvent::ToolCall {
                    tool,
                    status: CallStatus::Refused | CallStatus::UnknownTool | CallStatus::Invalid,
                    ..
                } => Some(tool),
                _ => None,
            })
            .collect();
        let stop = outcome.stop_reason;
        Ok(match stop {
            _ if !refused.is_empty() => PromptOutcome {
                outcome: RoutineOutcome::Refused,
                detail: Some(format!("refused: {}", refused.join(", "))),
            },
            AgentStop::EndTurn | AgentStop::StopSequence => PromptOutcome {
                outcome: RoutineOutcome::Success,
                detail: outcome.message.map(|m| m.text()),
            },
            AgentStop::ToolUse
            | AgentStop::MaxTokens
            | AgentStop::ContentFiltered
            | AgentStop::GuardrailIntervened
            | AgentStop::Interrupt
            | AgentStop::LimitTurns
            | AgentStop::LimitOutputTokens
            | AgentStop::LimitTotalTokens
            | AgentStop::Cancelled => PromptOutcome {
                outcome: RoutineOutcome::Error,
                detail: Some(format!("the turn ended with {}", stop.as_str())),
            },
        })
    }
}
