//! The one expirer of stored questions: a question still pending at its deadline is
//! closed as `expired` (decided by the timeout), whoever asked it — a paused turn or a
//! routine's run. Nothing that asks expires its own question: it waits until the row is
//! decided, and the process that hosts the questions (`tau serve`'s hub) runs this.

use jiff::Timestamp;
use tau_protocol::{ChannelEvent, DecidedBy, SessionId};

use super::stored_answer::answer_durable;
use crate::audit::EventBus;
use tau_state::{Answered, ApprovalReader, ApprovalRow, ApprovalState, Approvals, StateError};

/// A question this sweep expired, with the channel event that closes it.
#[derive(Debug, Clone)]
pub struct ExpiredQuestion {
    pub row: ApprovalRow,
    pub closing: ChannelEvent,
}

/// Expires every question still pending at `now` whose deadline has come, shown or not
/// (a question its turn never managed to show still ends, and its turn goes on). Each is
/// the same compare-and-set as an answer, so a person's answer that landed first wins;
/// its `approval` audit line goes to `bus_of` its session.
pub fn expire_due(
    store: &Approvals,
    bus_of: &dyn Fn(&SessionId) -> EventBus,
    now: Timestamp,
) -> Result<Vec<ExpiredQuestion>, StateError> {
    let mut expired = Vec::new();
    for row in store.all_approvals(Some(ApprovalState::Pending))? {
        if row.deadline > now {
            continue;
        }
        let (answered, closing) = answer_durable(
            store,
            &bus_of(&row.session),
            &row.id,
            ApprovalState::Expired,
            &DecidedBy::Timeout,
            None,
        )?;
        if let (Answered::Decided(row), Some(closing)) = (answered, closing) {
            tracing::info!(approval_id = %row.id, tool = %row.tool, "stored question expired");
            expired.push(ExpiredQuestion { row, closing });
        }
    }
    Ok(expired)
}

/// The earliest deadline among the pending questions: when the expirer has work next.
pub fn next_deadline(store: &ApprovalReader) -> Result<Option<Timestamp>, StateError> {
    Ok(store
        .all_approvals(Some(ApprovalState::Pending))?
        .iter()
        .map(|row| row.deadline)
        .min())
}
