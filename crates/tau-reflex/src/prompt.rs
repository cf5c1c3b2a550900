//! Prompt actions run as one turn of a `TauAgent` in the routine's own session, built with
//! the same `build_agent` as every conversation, so the same gate sits in the loop. Used
//! by `tau routines run` (a person at the terminal answers) and by tests; a hub that asks
//! durably builds its own turns the same way.

use std::sync::Arc;

use async_trait::async_trait;
use tau_agent::{AgentStop, Model, SessionRepository};
use tau_core::{
    AgentParts, Approver, AuditEvent, AutoRejectApprover, ChannelSink, CoreConfig, EventBus,
    RecordedEvents, RoutineOutcome, ToolCatalog, build_agent,
};
use tau_protocol::{CallFate, CallStatus};

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

/// Why nobody could be asked about a run's calls: each refusal says so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unwatched {
    /// The routine names no `ask` channel.
    NoAskChannel,
    /// Its `ask` channel is not one this runner can ask on.
    ChannelNotHere(AskChannel),
}

impl TurnPrompts {
    /// Who is asked about the run's calls; `Err`: nobody, and why.
    fn approver(&self, ask: Option<AskChannel>) -> Result<Arc<dyn Approver>, Unwatched> {
        match (&self.approver, ask) {
            (PromptApprover::Always(approver), _) => Ok(Arc::clone(approver)),
            (PromptApprover::ByAsk(_), None) => Err(Unwatched::NoAskChannel),
            (PromptApprover::ByAsk(by), Some(channel)) => {
                by(channel).ok_or(Unwatched::ChannelNotHere(channel))
            }
        }
    }
}

/// A call of the run's turn that did not run, and whether it was asked only because the
/// run had read outside text (`CallProvenance::escalated`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct RefusedCall {
    tool: String,
    escalated: bool,
}

/// The run's detail for the calls refused in it: each tool, and for a call asked only
/// because of outside text, that reason and why nobody could say yes.
fn refused_detail(refused: &[RefusedCall], unwatched: Option<Unwatched>) -> String {
    let calls: Vec<String> = refused
        .iter()
        .map(|call| match (call.escalated, unwatched) {
            (false, _) => call.tool.clone(),
            (true, None) => format!("{} ({ASKED_FOR_OUTSIDE_TEXT})", call.tool),
            (true, Some(Unwatched::NoAskChannel)) => {
                format!("{} ({ASKED_FOR_OUTSIDE_TEXT}; {NO_ASK_CHANNEL})", call.tool)
            }
            (true, Some(Unwatched::ChannelNotHere(channel))) => format!(
                "{} ({ASKED_FOR_OUTSIDE_TEXT}; nobody can be asked on {})",
                call.tool,
                channel.as_str()
            ),
        })
        .collect();
    format!("refused: {}", calls.join(", "))
}

/// Why a call below tier 2 was asked at all, in a run's detail.
const ASKED_FOR_OUTSIDE_TEXT: &str = "asked because the run read text from outside";
/// Why nobody said yes to it.
const NO_ASK_CHANNEL: &str = "this routine has no ask channel";

#[async_trait]
impl PromptRunner for TurnPrompts {
    async fn run_prompt(&self, run: PromptRun) -> Result<PromptOutcome, HostError> {
        let session = match &self.sessions {
            Some(repository) => Some((Arc::clone(repository), run.session.clone())),
            None => None,
        };
        let (approver, unwatched) = match self.approver(run.ask) {
            Ok(approver) => (approver, None),
            Err(why) => (Arc::new(AutoRejectApprover) as Arc<dyn Approver>, Some(why)),
        };
        let mut agent = build_agent(AgentParts {
            config: self.config.clone(),
            model: Arc::clone(&self.model),
            catalog: self.catalog.clone(),
            approver,
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
            .stream_from(
                &run.prompt,
                // The routine's own prompt, written when the person set it up: theirs,
                // named as the routine's on every card.
                Some(tau_protocol::Source::Routine {
                    routine: run.routine.clone(),
                }),
                self.sink.as_ref(),
            )
            .await
            .map_err(HostError::Turn)?;
        let refused: Vec<RefusedCall> = calls
            .events()
            .into_iter()
            .filter_map(|event| match event {
                AuditEvent::ToolCall {
                    tool,
                    fate:
                        CallFate {
                            status:
                                CallStatus::Refused | CallStatus::UnknownTool | CallStatus::Invalid,
                            ..
                        },
                    provenance,
                    ..
                } => Some(RefusedCall {
                    tool,
                    escalated: provenance.escalated,
                }),
                _ => None,
            })
            .collect();
        let stop = outcome.stop_reason;
        Ok(match stop {
            _ if !refused.is_empty() => PromptOutcome {
                outcome: RoutineOutcome::Refused,
                detail: Some(refused_detail(&refused, unwatched)),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn call(tool: &str, escalated: bool) -> RefusedCall {
        RefusedCall {
            tool: tool.to_owned(),
            escalated,
        }
    }

    #[test]
    fn a_refusal_asked_for_outside_text_says_so_and_why_nobody_said_yes() {
        let refused = [call("lamp", false), call("office__send_email", true)];
        let cases = [
            (
                Some(Unwatched::NoAskChannel),
                "refused: lamp, office__send_email (asked because the run read text from outside; this routine has no ask channel)",
            ),
            (
                Some(Unwatched::ChannelNotHere(AskChannel::Telegram)),
                "refused: lamp, office__send_email (asked because the run read text from outside; nobody can be asked on telegram)",
            ),
            (
                None,
                "refused: lamp, office__send_email (asked because the run read text from outside)",
            ),
        ];
        for (unwatched, detail) in cases {
            assert_eq!(refused_detail(&refused, unwatched), detail, "{unwatched:?}");
        }
    }

    #[test]
    fn a_refusal_the_tier_alone_explains_names_only_the_tool() {
        assert_eq!(
            refused_detail(
                &[call("lamp", false), call("run_command", false)],
                Some(Unwatched::NoAskChannel)
            ),
            "refused: lamp, run_command"
        );
    }
}
