//! Calls a crash cut off: a person's yes let them through (recorded before they started,
//! on a stored question or as a yes given in memory), and tau stopped before their
//! outcome was recorded. None runs again. Whoever starts next closes each one as
//! `effect_uncertain` with its audit line ([`close_cut_off_calls`]: `tau serve` at its
//! start, `tau chat` and `tau tui` when they open the home), and the conversation the
//! call belonged to tells the model, in the same byte-exact words a resumed turn uses,
//! that it may or may not have run ([`TauAgent::answer_cut_off_calls`]).

use std::collections::BTreeMap;

use jiff::Timestamp;
use tau_agent::{AgentError, SessionError, ToolResult, unanswered_tool_uses};
use tau_protocol::SessionId;

use super::owner::{StoredTurnError, turn_waits_on};
use super::{ChannelSink, TauAgent, Turn};
use tau_state::{ApprovalRow, Approvals, Sessions};

use crate::approval::effect_uncertain_event;
use crate::audit::EventBus;
use crate::gated::CallRecord;
use crate::i18n::Notice;

/// What a sweep of cut-off calls found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CutOff {
    /// Closed now as `effect_uncertain`, each with its audit line.
    pub closed: Vec<ApprovalRow>,
    /// Left to the paused turn that waits on them: it closes each when it goes on, and the
    /// model reads it then.
    pub waiting: Vec<ApprovalRow>,
    /// Left alone: `may_close` said no (their session is open in a tau that may still be
    /// running them).
    pub left: Vec<ApprovalRow>,
}

/// Closes every call let through whose outcome was never recorded, unless a paused turn
/// waits on it (that turn closes it) or `may_close` says no; each closed call's
/// `effect_uncertain` line goes to `bus_of` its session.
pub fn close_cut_off_calls(
    store: &Approvals,
    sessions: &Sessions,
    bus_of: &dyn Fn(&SessionId) -> EventBus,
    may_close: &dyn Fn(&ApprovalRow) -> bool,
) -> Result<CutOff, StoredTurnError> {
    let mut found = CutOff::default();
    for row in store.dispatched_without_outcome()? {
        if turn_waits_on(sessions, &row.session, &row.id)? {
            found.waiting.push(row);
            continue;
        }
        if !may_close(&row) {
            found.left.push(row);
            continue;
        }
        if let Some(closed) = store.close_effect_uncertain(&row.id, Timestamp::now())? {
            tracing::warn!(approval_id = %row.id, session = %row.session, tool = %row.tool, "an approved call was running when tau stopped; its effect is uncertain");
            bus_of(&row.session).emit(&effect_uncertain_event(&closed));
            found.closed.push(closed);
        }
    }
    Ok(found)
}

impl TauAgent {
    /// Answers the calls of this conversation that a crash cut off, before anything else
    /// happens in it: its history ends on the model's tool uses, and a call among them was
    /// let through on a person's yes. Each is closed as `effect_uncertain` (unless it was
    /// already), recorded as a `tool_call` that failed, shown as a notice on `sink`, and
    /// the model reads that it may or may not have run. The other tool uses are left to
    /// the loop's own repair. How many calls it answered.
    pub async fn answer_cut_off_calls(
        &mut self,
        sink: Option<&ChannelSink>,
    ) -> Result<usize, AgentError> {
        let turn = self.turn(sink);
        let _attached = self.forwarder.attach(sink.cloned());
        self.answer_cut_off(&turn).await
    }

    pub(super) async fn answer_cut_off(&mut self, turn: &Turn) -> Result<usize, AgentError> {
        if self.agent.interrupt_state().activated {
            // A paused turn's calls are checked again when it is resumed.
            return Ok(0);
        }
        let uses = unanswered_tool_uses(self.agent.messages());
        let Some((store, session)) = self.gate.call_store() else {
            return Ok(0);
        };
        if uses.is_empty() {
            return Ok(0);
        }
        let (store, session) = (store.clone(), session.clone());
        let mut answers = BTreeMap::new();
        for tool_use in uses {
            let row = store
                .dispatched_call(&session, &tool_use.tool_use_id)
                .map_err(|e| AgentError::Session(SessionError::Store(Box::new(e))))?;
            let Some(row) = row else { continue };
            let said_before = row.outcome.is_some();
            // Closing it says so on the turn's sink (the `effect_uncertain` line becomes a
            // notice); one closed earlier (by another tau's start) is said here.
            let check = self.gate.effect_uncertain(&store, &row);
            if said_before {
                turn.notice(Notice::EffectUncertain {
                    tool: row.tool.clone(),
                });
            }
            let call = CallRecord::new(check, &row.tool, &tool_use.tool_use_id, tool_use.input);
            let result = ToolResult::error_text(&tool_use.tool_use_id, call.refusal_text());
            call.refused(&self.gate, None);
            answers.insert(tool_use.tool_use_id, result);
        }
        if answers.is_empty() {
            return Ok(0);
        }
        self.agent
            .repair_history_with(|tool_use| answers.get(&tool_use.tool_use_id).cloned())
            .await?;
        Ok(answers.len())
    }
}
