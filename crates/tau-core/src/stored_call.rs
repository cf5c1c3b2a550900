//! A gated call asked durably outside any turn: a routine's fixed call on its `ask`
//! channel. It takes the conversation gate's own path: the question stored by
//! [`TierGate::check`] (a durable gate's) and shown by [`TierGate::announce_stored`], the stored
//! answer checked again and consumed by [`TierGate::resume_durable`], the call's outcome
//! recorded by [`TierGate::call_finished`], with the same failpoints on the way. Only the
//! wait differs: where a turn pauses and the hub resumes it once its question is decided,
//! this call's run waits for the row to be decided. It never decides the row itself,
//! except to withdraw it when the run is stopped: the deadline is the one expirer's
//! (`approval::expire_due`).

use std::time::Duration;

use async_trait::async_trait;
use jiff::{SignedDuration, Timestamp};
use serde_json::Value;
use tau_agent::ToolContext;
use tau_protocol::{ApprovalId, CallDecision, DecidedBy, Verdict};

use crate::approval::{TierGate, answer_durable};
use crate::catalog::ToolCatalog;
use crate::gated::{Checked, GatedOutcome, run_checked};
use tau_state::{Answered, ApprovalRow, ApprovalState, Approvals};

/// How long past its deadline a question may stay pending before the run stops waiting
/// for the expirer (a host that runs none): the call is refused, the row left as it is.
const EXPIRER_GRACE: Duration = Duration::from_secs(60);

/// The longest the run waits before it reads the row again, whatever the host says.
const LOOK_AGAIN: Duration = Duration::from_secs(1);

/// The process that shows stored questions on their channels and records the answers
/// (`tau serve`'s hub).
#[async_trait]
pub trait StoredAnswers: Send + Sync {
    /// Shows question `row` on its channel: newly asked, or how it ended.
    fn show_question(&self, row: &ApprovalRow);
    /// Resolves when question `id` may have been decided.
    async fn changed(&self, id: &ApprovalId);
    /// Nothing waits on question `id` any more.
    fn settled(&self, id: &ApprovalId);
}

/// How the wait for a stored answer ended.
enum Waited {
    Decided,
    /// The run was stopped (the routine edited or deleted, the host stopping).
    Stopped,
    /// Still pending well past its deadline: no expirer runs.
    Overdue,
    Unreadable(String),
}

/// Checks `tool` with `arguments` on `gate`, which must ask durably
/// ([`TierGate::with_durable`]); a tier-2 call waits for its stored answer, shown through
/// `answers`, and runs only if that answer passes the gate's re-check. Every call ends in
/// one `tool_call` event, as with [`crate::gated_call`].
pub async fn stored_gated_call(
    gate: &TierGate,
    catalog: &ToolCatalog,
    tool: &str,
    tool_use_id: &str,
    arguments: Value,
    context: ToolContext,
    answers: &dyn StoredAnswers,
) -> GatedOutcome {
    let decision = gate.check(tool, &arguments, tool_use_id).await;
    let (decision, stored) = match (&decision.verdict, decision.approval_id.clone()) {
        (Verdict::Asked, Some(approval_id)) => {
            let call = StoredCall {
                tool,
                tool_use_id,
                arguments: &arguments,
                id: &approval_id,
            };
            (
                call.answered(gate, answers, &context).await,
                Some(approval_id),
            )
        }
        _ => (decision, None),
    };
    let call = Checked {
        decision,
        tool,
        tool_use_id,
        arguments,
    };
    let outcome = run_checked(gate, catalog, call, context, stored.as_ref()).await;
    if let Some(id) = &stored {
        answers.settled(id);
    }
    outcome
}

/// A call whose question `id` is stored.
struct StoredCall<'a> {
    tool: &'a str,
    tool_use_id: &'a str,
    arguments: &'a Value,
    id: &'a ApprovalId,
}

impl StoredCall<'_> {
    /// Shows the question, waits for its answer and checks it as a resumed turn would;
    /// a run stopped meanwhile withdraws it and refuses.
    async fn answered(
        &self,
        gate: &TierGate,
        answers: &dyn StoredAnswers,
        context: &ToolContext,
    ) -> CallDecision {
        let Self {
            tool,
            tool_use_id,
            arguments,
            id,
        } = *self;
        // No turn state to save first: the question is shown at once.
        gate.announce_stored(true);
        if let Some(store) = gate.durable_store() {
            if let Ok(Some(row)) = store.approval(id)
                && row.state == ApprovalState::Pending
            {
                answers.show_question(&row);
            }
            match wait(store, id, answers, context).await {
                Waited::Decided => {}
                Waited::Stopped => {
                    withdraw(gate, store, id, answers);
                    return gate.stopped_waiting(tool, tool_use_id, id);
                }
                Waited::Overdue => {
                    tracing::error!(approval_id = %id, tool, "the question outlived its deadline and nobody expired it; the call is refused");
                }
                Waited::Unreadable(error) => {
                    tracing::error!(approval_id = %id, tool, %error, "cannot read the stored question");
                }
            }
        }
        gate.resume_durable(tool, arguments, tool_use_id, id)
    }
}

/// Waits until question `id` is no longer pending, the run is stopped, or the question is
/// overdue.
async fn wait(
    store: &Approvals,
    id: &ApprovalId,
    answers: &dyn StoredAnswers,
    context: &ToolContext,
) -> Waited {
    loop {
        let row = match store.approval(id) {
            Ok(Some(row)) => row,
            Ok(None) => return Waited::Unreadable(format!("the stored question '{id}' is gone")),
            Err(error) => return Waited::Unreadable(error.to_string()),
        };
        if row.state != ApprovalState::Pending {
            return Waited::Decided;
        }
        let overdue = SignedDuration::try_from(EXPIRER_GRACE)
            .ok()
            .and_then(|grace| row.deadline.checked_add(grace).ok())
            .unwrap_or(row.deadline);
        if Timestamp::now() > overdue {
            return Waited::Overdue;
        }
        tokio::select! {
            () = context.cancelled() => return Waited::Stopped,
            _ = tokio::time::timeout(LOOK_AGAIN, answers.changed(id)) => {}
        }
    }
}

/// Closes a question nobody waits for any more as `cancelled`, unless it was decided
/// first; the channel stops showing it.
fn withdraw(gate: &TierGate, store: &Approvals, id: &ApprovalId, answers: &dyn StoredAnswers) {
    match answer_durable(
        store,
        gate.events(),
        id,
        ApprovalState::Cancelled,
        &DecidedBy::Cancelled,
        None,
    ) {
        Ok((Answered::Decided(row), _)) => answers.show_question(&row),
        Ok(_) => {}
        Err(error) => {
            tracing::error!(approval_id = %id, %error, "cannot withdraw a stored question");
        }
    }
}
