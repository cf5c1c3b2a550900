//! Answers nothing waits for. A person's yes is used only where something runs the call
//! it approves: the conversation's paused turn (the hub resumes it, and the gate checks
//! the stored answer again before the call runs, exactly once) or a routine's run that
//! waits on its question in this hub. A question with neither (its turn was given up,
//! its session is gone) would otherwise take a yes and run nothing. Such an answer is not
//! used: the question is closed (`cancelled`, an `approval` line), an `answer_refused`
//! line says the answer was not used and why, the conversation is told in a notice, and
//! the channel hears [`Answered::NotUsed`] (TauBar answers 409).

use std::collections::HashSet;
use std::sync::Mutex;

use tau_core::{AuditEvent, Notice, notice_event};
use tau_protocol::{ApprovalId, DecidedBy};
use tau_state::{Answered, ApprovalRow, ApprovalState};

use crate::HubError;
use crate::hub::{Hub, locked};
use crate::types::SessionEvent;

/// The `answer_refused` line's reason for an answer nothing waited for.
pub(crate) const NOT_USED_REASON: &str = "the answer was not used: no paused turn and no routine's run waits for this question any more, so nothing would run it; the question was closed";

/// The questions routines' runs in this hub wait on (their runs poll the store; these are
/// the hub's record that someone does).
#[derive(Default)]
pub(crate) struct RoutineWaits(Mutex<HashSet<ApprovalId>>);

impl RoutineWaits {
    pub(crate) fn waits(&self, id: &ApprovalId) {
        locked(&self.0).insert(id.clone());
    }

    pub(crate) fn done(&self, id: &ApprovalId) {
        locked(&self.0).remove(id);
    }

    fn contains(&self, id: &ApprovalId) -> bool {
        locked(&self.0).contains(id)
    }
}

impl Hub {
    /// True when something will use an answer to `row`: a routine's run waits on it, or
    /// the conversation's saved turn is paused on it. Looking opens the session (taking
    /// its lock), so no other tau can give the turn up between this look and the answer;
    /// a session another tau has open is an error (the answer waits, nothing decided). A
    /// turn another live hub holds is not opened here: its stored state answers.
    pub(crate) async fn awaited(&self, row: &ApprovalRow) -> Result<bool, HubError> {
        if self.inner.routine_waits.contains(&row.id) {
            return Ok(true);
        }
        if self.inner.state.approvals().turn_held_elsewhere(&row.id)? {
            // Another live hub holds the turn (and its session): the stored turn says.
            return self.session_waits_on(&row.session, &row.id);
        }
        match self.slot(&row.session).await {
            Ok(_) => {}
            // No conversation is left to resume.
            Err(HubError::UnknownSession(_)) => return Ok(false),
            Err(error) => return Err(error),
        }
        self.session_waits_on(&row.session, &row.id)
    }

    /// Closes `row`, which nothing waits on, instead of using `user`'s answer on
    /// `channel`: `cancelled`, with the lines and the notice that say why. When another
    /// answer decided it first, that one stands and is returned.
    pub(crate) fn not_used(
        &self,
        row: &ApprovalRow,
        channel: &str,
        user: Option<String>,
    ) -> Result<Answered, HubError> {
        let closed = match self.decide(row, ApprovalState::Cancelled, &DecidedBy::Cancelled)? {
            Answered::Decided(closed) => closed,
            other => return Ok(other),
        };
        tracing::warn!(approval_id = %row.id, session = %row.session, tool = %row.tool, "an answer nothing waited for was not used; the question was closed");
        self.bus(&row.session).emit(&AuditEvent::AnswerRefused {
            channel: channel.to_owned(),
            approval_id: Some(row.id.to_string()),
            user,
            person: None,
            place: None,
            reason: NOT_USED_REASON.to_owned(),
            count: None,
        });
        let notice = Notice::AnswerNotUsed {
            tool: row.tool.clone(),
        };
        self.publish(
            &row.session,
            SessionEvent::Turn(notice_event(&notice, self.inner.options.language)),
        );
        Ok(Answered::NotUsed(closed))
    }
}
