//! Answers to stored questions: the compare-and-set on the row, and the one record of
//! the decision (the `approval` line, which every channel reads projected as
//! `approval_decided`), whoever answered: a person on a channel, the expirer, a newer
//! message, the start's checks.

use jiff::Timestamp;
use tau_protocol::{ApprovalId, ChannelEvent, DecidedBy, Decision, GrantRequest, Ruling};

use super::record::approval_event;
use crate::audit::{AuditEvent, EventBus};
use crate::turn::from_audit;
use tau_state::{Answered, ApprovalRow, ApprovalState, Approvals, StateError};

/// The audit event of a call closed as `effect_uncertain`.
pub fn effect_uncertain_event(row: &ApprovalRow) -> AuditEvent {
    AuditEvent::EffectUncertain {
        approval_id: row.id.clone(),
        tool: row.tool.clone(),
        tool_use_id: row.call_id.clone(),
        channel: row.channel.clone(),
        dispatched_at: row.consumed_at.map(|at| at.to_string()).unwrap_or_default(),
    }
}

/// A stored, still pending question as a channel shows it (again, after a restart).
pub fn requested_event(row: &ApprovalRow) -> ChannelEvent {
    ChannelEvent::ApprovalRequested(Box::new(row.question()))
}

/// What a question's state says was decided; `None` while it is pending.
pub fn decision_of(state: ApprovalState) -> Option<Decision> {
    match state {
        ApprovalState::Pending => None,
        ApprovalState::Approved => Some(Decision::Approved),
        ApprovalState::Expired => Some(Decision::Timeout),
        ApprovalState::Rejected | ApprovalState::Superseded | ApprovalState::Cancelled => {
            Some(Decision::Rejected)
        }
    }
}

/// The `approval` line of stored question `row`, decided by `ruling` as `approver`
/// recorded it.
pub fn stored_approval_event(row: &ApprovalRow, ruling: Ruling, approver: &str) -> AuditEvent {
    approval_event(&row.question(), ruling, approver, None)
}

/// How a decided stored question ends on a channel (its `approval_decided`); `None`
/// while it is pending.
pub fn decided_event(row: &ApprovalRow) -> Option<ChannelEvent> {
    let decision = decision_of(row.state)?;
    let by = row.decided_by.clone().unwrap_or(DecidedBy::Cancelled);
    from_audit(&stored_approval_event(
        row,
        Ruling::new(decision, by),
        "durable",
    ))
}

/// Answers a stored question: the compare-and-set `pending -> to`, and when this answer
/// decided it, the `approval` audit event on `events`. Returns what the answer did and,
/// when it decided, the channel event that closes the question. A yes to a question whose
/// card asks for a second step counts only when `confirmation` passes it; otherwise
/// nothing changes ([`Answered::StepMissing`]).
pub fn answer_durable(
    store: &Approvals,
    events: &EventBus,
    id: &ApprovalId,
    to: ApprovalState,
    decided_by: &DecidedBy,
    confirmation: Option<&str>,
) -> Result<(Answered, Option<ChannelEvent>), StateError> {
    answer_durable_granting(store, events, id, to, decided_by, confirmation, None)
}

/// [`answer_durable`] with the grant a person asked for with their yes ("yes, and allow
/// this again"), kept with the question and made when its call goes through.
pub fn answer_durable_granting(
    store: &Approvals,
    events: &EventBus,
    id: &ApprovalId,
    to: ApprovalState,
    decided_by: &DecidedBy,
    confirmation: Option<&str>,
    grant: Option<&GrantRequest>,
) -> Result<(Answered, Option<ChannelEvent>), StateError> {
    let answer = StoredAnswer {
        to,
        decided_by,
        confirmation,
        grant,
    };
    match store.approval(id)? {
        Some(row) => answer_row(store, events, &row, answer),
        // The compare-and-set says what became of it.
        None => decide(store, events, id, answer),
    }
}

/// One answer to a stored question.
#[derive(Debug, Clone, Copy)]
pub struct StoredAnswer<'a> {
    pub to: ApprovalState,
    pub decided_by: &'a DecidedBy,
    /// What the person typed or pressed for the card's second step.
    pub confirmation: Option<&'a str>,
    /// "Yes, and allow this again".
    pub grant: Option<&'a GrantRequest>,
}

/// [`answer_durable_granting`] for a question whose row the caller read already: the row
/// is not read again before the compare-and-set.
pub fn answer_row(
    store: &Approvals,
    events: &EventBus,
    row: &ApprovalRow,
    answer: StoredAnswer<'_>,
) -> Result<(Answered, Option<ChannelEvent>), StateError> {
    // A question not shown yet has no second step to ask for: it answers nothing
    // (`decide_approval` says so), and must not be named by a "step missing" either.
    if answer.to == ApprovalState::Approved
        && row.state == ApprovalState::Pending
        && let Some(step) = &row.card.confirm
        && !answer.confirmation.is_some_and(|typed| step.accepts(typed))
        && store.approval_shown(&row.id)?
    {
        tracing::info!(approval_id = %row.id, tool = %row.tool, "a yes without the second step; the question stays open");
        return Ok((Answered::StepMissing(row.clone()), None));
    }
    decide(store, events, &row.id, answer)
}

/// The compare-and-set, and when it decided, the one `approval` line and its projection.
fn decide(
    store: &Approvals,
    events: &EventBus,
    id: &ApprovalId,
    answer: StoredAnswer<'_>,
) -> Result<(Answered, Option<ChannelEvent>), StateError> {
    let StoredAnswer {
        to,
        decided_by,
        grant,
        ..
    } = answer;
    let answered = store.decide_approval_granting(id, to, decided_by, Timestamp::now(), grant)?;
    let Answered::Decided(row) = &answered else {
        return Ok((answered, None));
    };
    if decided_by.is_person() {
        crate::failpoint::reach(crate::failpoint::ANSWERED);
    }
    let decision = decision_of(row.state).unwrap_or_default();
    tracing::info!(approval_id = %row.id, tool = %row.tool, state = row.state.as_str(), ?decided_by, "stored approval decided");
    let event = stored_approval_event(row, Ruling::new(decision, decided_by.clone()), "durable");
    events.emit(&event);
    Ok((answered, from_audit(&event)))
}
