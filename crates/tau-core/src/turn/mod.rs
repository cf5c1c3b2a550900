//! `TauAgent`: one conversation, turn by turn, with the loop guard, notices in the UI
//! language and every interrupt refused inside the turn. `TauAgent::stream` runs a turn
//! and streams it to the channel as `ChannelEvent`s (`project.rs`). A paused turn goes on
//! in `durable.rs`; `owner.rs` says when the hub holds a conversation (`hold_text.rs`:
//! what a tau refused it says); `cut_off.rs` closes the calls a crash cut off and tells
//! the model.

mod cut_off;
mod durable;
mod hold_text;
mod output;
mod owner;
mod project;

use std::sync::{Arc, Mutex, PoisonError};

use serde_json::json;
use tau_agent::{
    Agent, AgentError, AgentResult, AgentStop, CancelHandle, EventSink, Input, InterruptResponse,
    Limits, Message, ModelError, TurnEvent, Usage,
};
use tau_protocol::{ChannelEvent, TurnUsage};

use crate::approval::TierGate;
use crate::audit::{AuditEvent, ErrorSite, EventBus};
use crate::catalog::ToolCatalog;
use crate::config::CoreConfig;
use crate::i18n::{Language, Notice};

pub use cut_off::{CutOff, close_cut_off_calls};
pub use durable::waits_on;
pub use output::output_blocks;
pub use owner::{HubHold, StoredTurnError, hub_hold, turn_waits_on};
pub(crate) use project::TurnForwarder;
pub use project::{ChannelSink, from_audit, notice_event};

/// The answer tau gives every interrupt a hook raises: nobody is asked.
pub fn interrupt_rejection() -> serde_json::Value {
    json!({"tau": "rejected"})
}

/// How a turn ended.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnOutcome {
    pub stop_reason: AgentStop,
    pub message: Option<Message>,
    pub usage: Usage,
    pub model_calls: u32,
    pub notices: Vec<Notice>,
    /// The stored questions the turn waits on when it stopped with `interrupt` (a hub
    /// conversation); resume it with [`TauAgent::resume`] once one is answered.
    pub pending_approvals: Vec<tau_protocol::ApprovalId>,
}

/// A turn that could not finish; the notice was already shown.
#[derive(Debug, thiserror::Error)]
#[error("{source}")]
pub struct TurnError {
    pub notice: Option<Notice>,
    #[source]
    pub source: AgentError,
}

/// The agent as a channel drives it.
pub struct TauAgent {
    agent: Agent,
    gate: Arc<TierGate>,
    catalog: Arc<ToolCatalog>,
    language: Language,
    max_turns: u32,
    events: EventBus,
    forwarder: Arc<TurnForwarder>,
}

/// What one user turn collects: its sink, its language and the notices shown so far.
#[derive(Clone)]
struct Turn {
    sink: Option<ChannelSink>,
    gate: Arc<TierGate>,
    language: Language,
    notices: Arc<Mutex<Vec<Notice>>>,
}

impl Turn {
    fn send(&self, event: ChannelEvent) {
        if let Some(sink) = &self.sink {
            sink.send(event);
        }
    }

    fn notice(&self, notice: Notice) {
        self.send(ChannelEvent::Notice {
            kind: project::notice_kind(&notice),
            text: notice.text(self.language),
        });
        self.notices
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(notice);
    }

    fn notices(&self) -> Vec<Notice> {
        self.notices
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The loop's events, forwarded to the channel as they happen.
    fn events(&self) -> EventSink {
        let turn = self.clone();
        EventSink::from_fn(move |event| {
            match &event {
                TurnEvent::Throttled { attempt, delay } => {
                    turn.notice(Notice::Throttled {
                        attempt: *attempt,
                        seconds: delay.as_secs(),
                    });
                }
                TurnEvent::ContextReduced { removed } => {
                    turn.notice(Notice::ContextReduced { removed: *removed });
                }
                TurnEvent::TextDelta { .. }
                | TurnEvent::ToolUse { .. }
                | TurnEvent::ToolProgress { .. }
                | TurnEvent::ToolResult { .. }
                | TurnEvent::Stop { .. } => {}
            }
            if let Some(event) = project::from_loop(event, &turn.gate) {
                turn.send(event);
            }
        })
    }
}

impl TauAgent {
    pub(crate) fn new(
        agent: Agent,
        gate: Arc<TierGate>,
        catalog: Arc<ToolCatalog>,
        config: &CoreConfig,
        events: EventBus,
        forwarder: Arc<TurnForwarder>,
    ) -> Self {
        Self {
            agent,
            gate,
            catalog,
            language: config.ui.language(),
            max_turns: config.agent.max_turns,
            events,
            forwarder,
        }
    }

    pub fn agent(&self) -> &Agent {
        &self.agent
    }

    /// The loop itself. Hooks added through it are not audited by `build_agent`; the
    /// gate's after-call check still records a call that ran differently from what it decided.
    pub fn agent_mut(&mut self) -> &mut Agent {
        &mut self.agent
    }

    pub fn messages(&self) -> &[Message] {
        self.agent.messages()
    }

    pub fn gate(&self) -> &Arc<TierGate> {
        &self.gate
    }

    pub fn catalog(&self) -> &Arc<ToolCatalog> {
        &self.catalog
    }

    pub fn events(&self) -> &EventBus {
        &self.events
    }

    pub fn language(&self) -> Language {
        self.language
    }

    pub fn cancel_handle(&self) -> CancelHandle {
        self.agent.cancel_handle()
    }

    /// Runs one user turn, streaming it to `sink` as channel events, the last of them
    /// `turn_ended`. Interrupts never outlive the turn, except the gate's own stored
    /// questions in a hub conversation.
    pub async fn stream(
        &mut self,
        prompt: &str,
        sink: Option<&ChannelSink>,
    ) -> Result<TurnOutcome, TurnError> {
        self.stream_from(prompt, None, sink).await
    }

    /// [`Self::stream`] for a prompt someone else wrote when `source` says so (a message
    /// the person forwarded): it is stored with that source, read as outside text and
    /// shown to the model as quoted data. `None` is the person's own text.
    pub async fn stream_from(
        &mut self,
        prompt: &str,
        source: Option<tau_protocol::Source>,
        sink: Option<&ChannelSink>,
    ) -> Result<TurnOutcome, TurnError> {
        let turn = self.turn(sink);
        let _attached = self.forwarder.attach(sink.cloned());
        if self.agent.interrupt_state().activated {
            let pending = self.agent.interrupt_state().pending();
            // Answered ones too: a resumed turn cut off before it finished goes on first.
            let stored = self.stored_question_ids(&self.agent.interrupt_state().unfinished());
            if !stored.is_empty() {
                // A stored question waits: its answer, expiry or supersession comes first.
                let source = AgentError::MustResume {
                    pending: stored
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(", "),
                };
                return Err(self.fail(&turn, source, 0, Usage::default()));
            }
            // Restored mid-interrupt (the process died before refusing it): clear it first.
            self.refuse_pending(&turn, &pending);
            if let Err(source) = self.agent.deactivate_interrupts() {
                return Err(self.fail(&turn, source, 0, Usage::default()));
            }
        }
        // A call a crash cut off is answered before the prompt: it may or may not have run.
        if let Err(source) = self.answer_cut_off(&turn).await {
            return Err(self.fail(&turn, source, 0, Usage::default()));
        }
        let input = match source {
            Some(source) => Input::PromptFrom {
                content: vec![tau_agent::ContentBlock::Text(prompt.to_owned())],
                source,
            },
            None => Input::from(prompt),
        };
        self.run_turn(&turn, input, self.max_turns, None).await
    }

    fn turn(&self, sink: Option<&ChannelSink>) -> Turn {
        Turn {
            sink: sink.cloned(),
            gate: Arc::clone(&self.gate),
            language: self.language,
            notices: Arc::default(),
        }
    }

    /// Invokes the loop until the turn ends: every interrupt but the gate's stored
    /// questions is refused within the turn, on one budget of `budget` model calls. With
    /// `closing`, the turn ends (with that stop reason, quietly) where the budget ran out.
    async fn run_turn(
        &mut self,
        turn: &Turn,
        mut input: Input,
        mut budget: u32,
        closing: Option<tau_protocol::TurnStop>,
    ) -> Result<TurnOutcome, TurnError> {
        let mut refusals = 0u32;
        let mut usage = Usage::default();
        let mut calls = 0u32;
        loop {
            let limits = Limits {
                max_turns: Some(budget),
                ..self.agent.limits()
            };
            self.agent.set_limits(limits);
            let result = self.agent.invoke(input, Some(&turn.events())).await;
            // The paused state is saved (and flushed) when the loop returns: only now may
            // the questions it stored be shown.
            self.gate.announce_stored(result.is_ok());
            let result = match result {
                Ok(result) => result,
                Err(source) => return Err(self.fail(turn, source, calls, usage)),
            };
            usage.add(result.usage);
            calls = calls.saturating_add(result.model_calls);
            budget = budget.saturating_sub(result.model_calls);
            if result.stop_reason != AgentStop::Interrupt {
                return Ok(self.finish(turn, result, usage, calls, closing));
            }
            let foreign: Vec<_> = result
                .interrupts
                .iter()
                .filter(|i| self.stored_question_ids(std::slice::from_ref(i)).is_empty())
                .cloned()
                .collect();
            if foreign.is_empty() {
                // Only stored questions: the turn pauses until one is answered.
                return Ok(self.finish(turn, result, usage, calls, closing));
            }
            self.refuse_pending(turn, &foreign);
            refusals += 1;
            if refusals > self.max_turns || budget == 0 {
                // The refusals did not clear it: leave the interrupt state; the next turn repairs the history.
                if let Err(source) = self.agent.deactivate_interrupts() {
                    return Err(self.fail(turn, source, calls, usage));
                }
                return Ok(self.finish(turn, result, usage, calls, closing));
            }
            input = Input::Resume(
                foreign
                    .iter()
                    .map(|i| InterruptResponse {
                        interrupt_id: i.id.clone(),
                        response: interrupt_rejection(),
                    })
                    .collect(),
            );
        }
    }

    fn refuse_pending(&self, turn: &Turn, interrupts: &[tau_agent::Interrupt]) {
        for interrupt in interrupts {
            tracing::warn!(interrupt = %interrupt.name, id = %interrupt.id, "interrupt refused");
            self.events.emit(&AuditEvent::error(
                ErrorSite::Interrupt,
                format!(
                    "interrupt '{}' refused: tau does not pause turns",
                    interrupt.name
                ),
                None,
                None,
            ));
            turn.notice(Notice::InterruptRefused {
                name: interrupt.name.clone(),
            });
        }
    }

    fn finish(
        &self,
        turn: &Turn,
        result: AgentResult,
        usage: Usage,
        calls: u32,
        closing: Option<tau_protocol::TurnStop>,
    ) -> TurnOutcome {
        let pending_approvals = self.stored_question_ids(&result.interrupts);
        match result.stop_reason {
            // A closing turn had no model call to make: it stopped where it was meant to.
            AgentStop::LimitTurns if closing.is_some() => {}
            AgentStop::LimitTurns => {
                self.events.emit(&AuditEvent::TurnLimit {
                    max_turns: self.max_turns,
                });
                turn.notice(Notice::TurnLimit {
                    max_turns: self.max_turns,
                });
            }
            AgentStop::LimitOutputTokens | AgentStop::LimitTotalTokens => {
                turn.notice(Notice::TokenLimit);
            }
            AgentStop::MaxTokens => turn.notice(Notice::MaxTokens),
            AgentStop::Cancelled => turn.notice(Notice::Cancelled),
            AgentStop::EndTurn
            | AgentStop::ToolUse
            | AgentStop::StopSequence
            | AgentStop::ContentFiltered
            | AgentStop::GuardrailIntervened
            | AgentStop::Interrupt => {}
        }
        let stop_reason = match (closing, result.stop_reason) {
            (Some(closing), AgentStop::LimitTurns) => closing,
            (_, reason) => project::stop_reason(reason),
        };
        self.events.emit(&AuditEvent::TurnEnd {
            stop_reason: project::stop_reason_name(stop_reason).to_owned(),
            model_calls: calls,
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
        });
        turn.send(ChannelEvent::TurnEnded {
            stop_reason,
            usage: TurnUsage {
                model_calls: calls,
                input_tokens: usage.input_tokens,
                output_tokens: usage.output_tokens,
            },
        });
        TurnOutcome {
            stop_reason: result.stop_reason,
            message: result.message,
            usage,
            model_calls: calls,
            notices: turn.notices(),
            pending_approvals,
        }
    }

    /// Ends a turn that could not finish; `calls` and `usage` are what it is known to
    /// have spent.
    fn fail(&self, turn: &Turn, source: AgentError, calls: u32, usage: Usage) -> TurnError {
        let (site, notice) = match &source {
            AgentError::Model(ModelError::ContextWindowOverflow { .. }) => {
                (ErrorSite::Model, Some(Notice::ContextOverflow))
            }
            AgentError::Model(error) => (
                ErrorSite::Model,
                Some(Notice::ModelError {
                    message: error.to_string(),
                }),
            ),
            AgentError::Session(_) => (
                ErrorSite::Session,
                Some(Notice::ModelError {
                    message: source.to_string(),
                }),
            ),
            AgentError::Tools(_)
            | AgentError::MustResume { .. }
            | AgentError::NothingToResume
            | AgentError::UnknownInterrupt { .. }
            | AgentError::TooManyRetries { .. } => (ErrorSite::Agent, None),
        };
        tracing::error!(error = %source, "turn failed");
        self.events
            .emit(&AuditEvent::error(site, source.to_string(), None, None));
        if let Some(notice) = &notice {
            turn.notice(notice.clone());
        }
        self.events.emit(&AuditEvent::TurnEnd {
            stop_reason: "failed".to_owned(),
            model_calls: calls,
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
        });
        turn.send(ChannelEvent::TurnEnded {
            stop_reason: tau_protocol::TurnStop::Failed,
            usage: TurnUsage {
                model_calls: calls,
                input_tokens: usage.input_tokens,
                output_tokens: usage.output_tokens,
            },
        });
        TurnError { notice, source }
    }
}
