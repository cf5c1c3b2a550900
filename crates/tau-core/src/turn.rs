//! `TauAgent`: one conversation, turn by turn, with the loop guard, notices in the UI
//! language and every interrupt refused inside the turn.

use std::sync::{Arc, Mutex, PoisonError};

use serde::{Deserialize, Serialize};
use serde_json::json;
use tau_agent::{
    Agent, AgentError, AgentResult, CancelHandle, EventSink, Input, InterruptResponse, Limits,
    Message, ModelError, StopReason, TurnEvent, Usage,
};

use crate::approval::TierGate;
use crate::catalog::ToolCatalog;
use crate::config::CoreConfig;
use crate::events::{AgentEvent, ErrorSite, EventBus};
use crate::i18n::{Language, Notice};

/// The answer tau gives every interrupt a hook raises: nobody is asked.
pub fn interrupt_rejection() -> serde_json::Value {
    json!({"tau": "rejected"})
}

/// What a channel receives during a turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ChatEvent {
    /// Something the loop streamed.
    Turn { event: TurnEvent },
    /// A notice for the person, already in the UI language.
    Notice { notice: Notice, text: String },
}

/// Where a channel reads its turn from.
pub type ChatSink = tau_agent::Sink<ChatEvent>;

/// How a turn ended.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnOutcome {
    pub stop_reason: StopReason,
    pub message: Option<Message>,
    pub usage: Usage,
    pub model_calls: u32,
    pub notices: Vec<Notice>,
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
}

/// What one user turn collects: its sink, its language and the notices shown so far.
#[derive(Clone)]
struct Turn {
    sink: Option<ChatSink>,
    language: Language,
    notices: Arc<Mutex<Vec<Notice>>>,
}

impl Turn {
    fn notice(&self, notice: Notice) {
        if let Some(sink) = &self.sink {
            sink.send(ChatEvent::Notice {
                text: notice.text(self.language),
                notice: notice.clone(),
            });
        }
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
            if let Some(sink) = &turn.sink {
                sink.send(ChatEvent::Turn { event });
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
    ) -> Self {
        Self {
            agent,
            gate,
            catalog,
            language: config.ui.language(),
            max_turns: config.agent.max_turns,
            events,
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

    /// Runs one user turn, streaming to `sink`. Interrupts never outlive the turn.
    pub async fn stream(
        &mut self,
        prompt: &str,
        sink: Option<&ChatSink>,
    ) -> Result<TurnOutcome, TurnError> {
        let turn = Turn {
            sink: sink.cloned(),
            language: self.language,
            notices: Arc::default(),
        };
        if self.agent.interrupt_state().activated {
            // Restored mid-interrupt (the process died before refusing it): clear it first.
            self.refuse_pending(&turn, &self.agent.interrupt_state().pending());
            self.agent
                .deactivate_interrupts()
                .map_err(|source| TurnError {
                    notice: None,
                    source,
                })?;
        }
        let mut budget = self.max_turns;
        let mut refusals = 0u32;
        let mut usage = Usage::default();
        let mut calls = 0u32;
        let mut input = Input::from(prompt);
        loop {
            let limits = Limits {
                max_turns: Some(budget),
                ..self.agent.limits()
            };
            self.agent.set_limits(limits);
            let result = self.agent.invoke(input, Some(&turn.events())).await;
            let result = match result {
                Ok(result) => result,
                Err(source) => return Err(self.fail(&turn, source)),
            };
            usage.add(result.usage);
            calls = calls.saturating_add(result.model_calls);
            budget = budget.saturating_sub(result.model_calls);
            if result.stop_reason != StopReason::Interrupt {
                return Ok(self.finish(&turn, result, usage, calls));
            }
            self.refuse_pending(&turn, &result.interrupts);
            refusals += 1;
            if refusals > self.max_turns || budget == 0 {
                // The refusals did not clear it: leave the interrupt state; the next turn repairs the history.
                self.agent
                    .deactivate_interrupts()
                    .map_err(|source| TurnError {
                        notice: None,
                        source,
                    })?;
                return Ok(self.finish(&turn, result, usage, calls));
            }
            input = Input::Resume(
                result
                    .interrupts
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
            self.events.emit(&AgentEvent::error(
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

    fn finish(&self, turn: &Turn, result: AgentResult, usage: Usage, calls: u32) -> TurnOutcome {
        match result.stop_reason {
            StopReason::LimitTurns => {
                self.events.emit(&AgentEvent::TurnLimit {
                    max_turns: self.max_turns,
                });
                turn.notice(Notice::TurnLimit {
                    max_turns: self.max_turns,
                });
            }
            StopReason::LimitOutputTokens | StopReason::LimitTotalTokens => {
                turn.notice(Notice::TokenLimit);
            }
            StopReason::MaxTokens => turn.notice(Notice::MaxTokens),
            StopReason::Cancelled => turn.notice(Notice::Cancelled),
            StopReason::EndTurn
            | StopReason::ToolUse
            | StopReason::StopSequence
            | StopReason::ContentFiltered
            | StopReason::GuardrailIntervened
            | StopReason::Interrupt => {}
        }
        self.events.emit(&AgentEvent::TurnEnd {
            stop_reason: result.stop_reason.as_str().to_owned(),
            model_calls: calls,
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
        });
        TurnOutcome {
            stop_reason: result.stop_reason,
            message: result.message,
            usage,
            model_calls: calls,
            notices: turn.notices(),
        }
    }

    fn fail(&self, turn: &Turn, source: AgentError) -> TurnError {
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
            .emit(&AgentEvent::error(site, source.to_string(), None, None));
        if let Some(notice) = &notice {
            turn.notice(notice.clone());
        }
        TurnError { notice, source }
    }
}
