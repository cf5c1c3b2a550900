//! Asking on a routine's `ask` channel: an `Approver` whose question is a durable row.
//!
//! A routine's fixed call runs outside any turn, so there is no turn to pause and resume:
//! the routine's own run is what waits. The gate asks this approver as it asks any other;
//! the approver stores the question as an `ApprovalRow` (the gate's approval id, the
//! routine's session, the ask channel, a deadline), lets the host show it on the channel,
//! and waits until the channel decided it (a compare-and-set on the row, as for every
//! durable question) or the deadline passed. An approved row is consumed (a second
//! compare-and-set) before the answer is given, so one yes runs one call. The answer
//! carries the row's `decided_by`, and the gate still accepts only a person's yes.
//! Dropping the wait (the gate's timeout, the engine stopping) closes the row.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use jiff::{SignedDuration, Timestamp};
use tau_core::approval::{
    Answer, ApprovalQuestion, ApprovalRow, ApprovalState, Approver, ApproverError, CallToRun,
    NewApproval, Recheck, StateDb, canonical_arguments, recheck,
};
use tau_core::{CardNote, DecidedBy, Decision};
use tau_protocol::{ApprovalId, SessionId};

use tokio_util::sync::CancellationToken;

use crate::host::RoutineHost;
use crate::validate::AskChannel;

pub(crate) struct AskApprover {
    pub host: Arc<dyn RoutineHost>,
    pub store: StateDb,
    pub channel: AskChannel,
    pub session: SessionId,
    pub timeout: Duration,
    /// The routine stopped (edited, deleted, the engine shutting down): stop waiting.
    pub cancel: CancellationToken,
    /// Whose question it is and what fires it, as the card's first note says.
    pub origin: String,
}

/// The card's note that names the routine asking and what fires it: tau's words, so that
/// nobody takes a routine's question for one they caused.
pub(crate) fn origin_note(routine: &crate::validate::Routine) -> CardNote {
    CardNote::info(
        "routine",
        format!("{} · {}", routine.name(), routine.origin()),
    )
}

/// Closes a still-pending row when the wait is dropped.
struct Withdraw {
    store: StateDb,
    host: Arc<dyn RoutineHost>,
    id: ApprovalId,
    armed: bool,
}

impl Drop for Withdraw {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let now = Timestamp::now();
        let Ok(Some(row)) = self.store.approval(&self.id) else {
            return;
        };
        let (to, by) = if now >= row.deadline {
            (ApprovalState::Expired, DecidedBy::Timeout)
        } else {
            (ApprovalState::Cancelled, DecidedBy::Cancelled)
        };
        if let Ok(tau_core::approval::Answered::Decided(row)) =
            self.store.decide_approval(&self.id, to, &by, now)
        {
            self.host.withdrawn(&row);
        }
        self.host.settled(&self.id);
    }
}

fn failed(message: impl Into<String>) -> ApproverError {
    ApproverError::new(message)
}

#[async_trait]
impl Approver for AskApprover {
    fn name(&self) -> &str {
        self.channel.as_str()
    }

    fn timeout(&self) -> Option<Duration> {
        Some(self.timeout)
    }

    async fn decide(&self, request: ApprovalQuestion) -> Result<Answer, ApproverError> {
        let now = Timestamp::now();
        let deadline = SignedDuration::try_from(self.timeout)
            .ok()
            .and_then(|span| now.checked_add(span).ok())
            .unwrap_or(now);
        let id = request.approval_id.clone();
        let row = NewApproval {
            id,
            session: self.session.clone(),
            call_id: request.call_id.clone(),
            tool: request.tool.clone(),
            tier: request.tier,
            effect: request.effect.clone(),
            arguments: request.arguments.clone(),
            channel: self.channel.as_str().to_owned(),
            created_at: now,
            deadline,
            card: self.stored_card(&request.card),
        }
        .into_row();
        self.store
            .create_approval(&row)
            .map_err(|e| failed(e.to_string()))?;
        let mut withdraw = Withdraw {
            store: self.store.clone(),
            host: Arc::clone(&self.host),
            id: row.id.clone(),
            armed: true,
        };
        self.host.announce(&row);
        let answer = self.wait(&row, &request).await;
        withdraw.armed = self.still_pending(&row.id);
        if !withdraw.armed {
            self.host.settled(&row.id);
        }
        answer
    }
}

impl AskApprover {
    fn still_pending(&self, id: &ApprovalId) -> bool {
        matches!(self.store.approval(id), Ok(Some(row)) if row.state == ApprovalState::Pending)
    }

    async fn wait(
        &self,
        asked: &ApprovalRow,
        request: &ApprovalQuestion,
    ) -> Result<Answer, ApproverError> {
        loop {
            let row = self
                .store
                .approval(&asked.id)
                .map_err(|e| failed(e.to_string()))?
                .ok_or_else(|| failed(format!("the stored question '{}' is gone", asked.id)))?;
            let decided_by = row.decided_by.clone().unwrap_or(DecidedBy::ApproverFailed);
            match row.state {
                ApprovalState::Pending => {
                    let now = Timestamp::now();
                    if now >= row.deadline {
                        let _ = self.store.decide_approval(
                            &row.id,
                            ApprovalState::Expired,
                            &DecidedBy::Timeout,
                            now,
                        );
                        self.host.withdrawn(&row);
                        return Ok(Answer::new(Decision::Timeout, DecidedBy::Timeout));
                    }
                    let left = crate::clock::until(now, row.deadline);
                    tokio::select! {
                        () = self.cancel.cancelled() => {
                            // The guard closes the row as cancelled.
                            return Err(failed("the routine stopped while its question was open"));
                        }
                        _ = tokio::time::timeout(left, self.host.changed(&row.id)) => {}
                    }
                }
                ApprovalState::Approved => return self.approved(&row, request, decided_by),
                ApprovalState::Expired => {
                    return Ok(Answer::new(Decision::Timeout, DecidedBy::Timeout));
                }
                ApprovalState::Rejected | ApprovalState::Superseded | ApprovalState::Cancelled => {
                    return Ok(Answer::rejected(decided_by));
                }
            }
        }
    }

    /// The card as stored: the gate's, with the note naming the routine first.
    fn stored_card(&self, card: &tau_core::CallCard) -> tau_core::CallCard {
        let mut card = card.clone();
        card.notes
            .insert(0, CardNote::info("routine", self.origin.clone()));
        card
    }

    /// Checks an approved row again and consumes it; anything off fails the approver,
    /// which refuses the call.
    fn approved(
        &self,
        row: &ApprovalRow,
        request: &ApprovalQuestion,
        decided_by: DecidedBy,
    ) -> Result<Answer, ApproverError> {
        // The one ladder every stored yes passes (the conversation gate's too). The gate
        // asked about this call a moment ago, so its tier then is the registered one.
        let arguments_sha256 = canonical_arguments(&request.arguments).1;
        let call = CallToRun {
            session: &self.session,
            call_id: &request.call_id,
            tool: &request.tool,
            arguments_sha256: &arguments_sha256,
            channel: self.channel.as_str(),
            registered_tier: Some(request.tier),
            now: Timestamp::now(),
        };
        match recheck(row, &call) {
            Recheck::Approved => {}
            failed_step => return Err(failed(failed_step.reason())),
        }
        if row.card != self.stored_card(&request.card) {
            return Err(failed("the stored question's card is not the one asked"));
        }
        // A stored yes to a question with a second step passed it when it was given
        // (`answer_durable` refuses one that does not); the gate checks it again.
        let answer = Answer::new(Decision::Approved, decided_by);
        let answer = match &row.card.confirm {
            Some(step) => answer.confirmed_with(step.code.clone()),
            None => answer,
        };
        match self.store.consume_approval(&row.id, Timestamp::now()) {
            Ok(true) => Ok(answer),
            Ok(false) => Err(failed("the approval was already used")),
            Err(error) => Err(failed(error.to_string())),
        }
    }
}

/// The approver that asks `routine`'s `ask` channel through a durable question in `store`
/// (for `session`), waiting up to `timeout`. `None` when the routine has no `ask` channel.
pub fn ask_approver(
    host: Arc<dyn RoutineHost>,
    store: StateDb,
    routine: &crate::validate::Routine,
    session: SessionId,
    timeout: Duration,
    cancel: CancellationToken,
) -> Option<Arc<dyn Approver>> {
    let channel = routine.ask?;
    Some(Arc::new(AskApprover {
        host,
        store,
        channel,
        session,
        timeout,
        cancel,
        origin: origin_note(routine).text,
    }))
}
