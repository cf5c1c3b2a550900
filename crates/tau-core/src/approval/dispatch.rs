//! What a gate that asks in memory (a terminal, the TUI) records of the calls a person
//! approved: the question's row, stored approved and let through right before the call
//! starts, and its outcome once it returned, as a stored question's call has them. So a
//! `tau chat` killed while an approved call runs leaves what a killed `tau serve` leaves,
//! a call let through without an outcome, and the next start closes it as
//! `effect_uncertain` on the same path (`turn::close_cut_off_calls`).

use jiff::Timestamp;
use tau_protocol::{ApprovalQuestion, DecidedBy, SessionId};

use super::asking::InMemory;
use super::gate::TierGate;
use crate::audit::ErrorSite;
use tau_state::{ApprovalState, Approvals, NewApproval};

/// Where a gate that asks in memory records the calls it lets through.
#[derive(Clone)]
pub struct DispatchRecord {
    pub store: Approvals,
    pub session: SessionId,
}

impl TierGate {
    /// Makes this gate record, before it lets a call through on a person's yes, that it
    /// did (and its outcome once it ran). A durable gate records them on its stored
    /// questions already; there this changes nothing.
    pub fn with_dispatch_record(mut self, record: DispatchRecord) -> Self {
        if self.asking.stored().is_none() {
            self.asking = Box::new(InMemory::recording(record));
        }
        self
    }

    /// Where the calls this gate let through are recorded, and for which session: its
    /// stored questions, or its dispatch record.
    pub(crate) fn call_store(&self) -> Option<(&Approvals, &SessionId)> {
        self.asking.call_store()
    }

    /// True when this gate asks in memory and records the calls a person's yes lets
    /// through.
    pub(crate) fn records_dispatches(&self) -> bool {
        self.asking.stored().is_none() && self.asking.call_store().is_some()
    }

    /// Records in `record` that the call `question` asked about is let through on
    /// `decided_by`'s yes, flushed before it returns; `Err` says why it could not be, and
    /// then the call must not run (a crash would leave no trace of it).
    pub(super) fn record_dispatch(
        &self,
        record: &DispatchRecord,
        question: &ApprovalQuestion,
        decided_by: &DecidedBy,
    ) -> Result<(), String> {
        let now = Timestamp::now();
        let deadline = question
            .deadline
            .as_deref()
            .and_then(|text| text.parse().ok())
            .unwrap_or(now);
        let mut row = NewApproval {
            id: question.approval_id.clone(),
            session: record.session.clone(),
            call_id: question.call_id.clone(),
            tool: question.tool.clone(),
            tier: question.tier,
            effect: question.effect.clone(),
            arguments: question.arguments.clone(),
            channel: question.channel.clone(),
            created_at: now,
            deadline,
            card: question.card.clone(),
        }
        .into_row();
        row.state = ApprovalState::Approved;
        row.decided_by = Some(decided_by.clone());
        row.decided_at = Some(now);
        record.store.record_dispatch(&row, now).map_err(|error| {
            let message = format!("cannot record that the approved call is let through: {error}");
            tracing::error!(tool = %question.tool, tool_use_id = %question.call_id, %message);
            self.emit_error(
                ErrorSite::TierGate,
                message.clone(),
                &question.tool,
                &question.call_id,
            );
            message
        })
    }
}
