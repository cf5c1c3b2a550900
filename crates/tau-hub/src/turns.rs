//! One session's turns: queued behind its agent's lock, so they run one at a time, and
//! how a turn that waits on stored questions goes on.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use tau_core::{ChannelSink, TauAgent};
use tau_protocol::{ChannelEvent, DecidedBy, SessionId, Source, TurnStop};
use tau_state::{Answered, ApprovalRow, ApprovalState};

use crate::HubError;
use crate::hub::{Hub, SessionEvent, Slot};

/// What a queued turn does.
pub(crate) enum Work {
    /// A message for the model: a question still pending is superseded, then the turn
    /// runs. `source` names who wrote it when that was not the person (a forward);
    /// `None` is the person's own text.
    Prompt {
        text: String,
        source: Option<Source>,
    },
    /// Questions were decided (answered, expired): the waiting turn goes on.
    Settle,
}

/// Messages of one conversation that may wait behind its running turn.
const MAX_WAITING: usize = 8;

impl Hub {
    pub(crate) fn queue(&self, slot: Arc<Slot>, work: Work) -> Result<(), HubError> {
        if self.stopping() {
            return Err(HubError::ShuttingDown);
        }
        if matches!(work, Work::Prompt { .. }) && slot.queued.load(Ordering::SeqCst) > MAX_WAITING {
            return Err(HubError::Busy);
        }
        slot.queued.fetch_add(1, Ordering::SeqCst);
        let hub = self.clone();
        self.inner.tasks.spawn(async move {
            hub.run(&slot, work).await;
            slot.queued.fetch_sub(1, Ordering::SeqCst);
        });
        Ok(())
    }

    async fn run(&self, slot: &Slot, work: Work) {
        let mut agent = slot.agent.lock().await;
        if self.stopping() {
            return;
        }
        let sink = self.sink(&slot.session);
        match work {
            Work::Prompt { text, source } => {
                self.publish(&slot.session, SessionEvent::Prompt { text: text.clone() });
                self.settle(slot, &mut agent, &sink, true).await;
                if !agent.pending_approvals().is_empty() {
                    // A question that cannot be superseded (the store failed): the turn
                    // it belongs to still waits, so this message cannot be answered.
                    tracing::error!(session = %slot.session, "a stored question could not be superseded; the message is not answered");
                    sink.send(ChannelEvent::TurnEnded {
                        stop_reason: TurnStop::Failed,
                        usage: tau_protocol::TurnUsage::default(),
                    });
                } else if let Err(error) = agent.stream_from(&text, source, Some(&sink)).await {
                    tracing::warn!(session = %slot.session, %error, "turn failed");
                }
            }
            Work::Settle => self.settle(slot, &mut agent, &sink, false).await,
        }
        self.mark_settled(&slot.session, &agent);
        if !agent.pending_approvals().is_empty() {
            self.inner.sweep.notify_one();
        }
    }

    /// Where a turn's events go: the session's subscribers, and hub-wide for a new
    /// stored question.
    fn sink(&self, session: &SessionId) -> ChannelSink {
        let hub = self.clone();
        let session = session.clone();
        ChannelSink::from_fn(move |event| {
            if let ChannelEvent::ApprovalRequested(question) = &event {
                let stored = hub
                    .inner
                    .state
                    .approvals()
                    .approval(&question.approval_id)
                    .ok()
                    .flatten();
                match stored {
                    Some(row) => {
                        let _ = hub.inner.changes.send(row);
                    }
                    None => {
                        tracing::warn!(approval_id = %question.approval_id, "an announced question is not in the store");
                    }
                }
                hub.inner.sweep.notify_one();
            }
            hub.publish(&session, SessionEvent::Turn(event));
        })
    }

    /// Lets a turn that waits on stored questions go on once every one is decided: a
    /// person's answers (and expiries without a newer message) resume it, the gate
    /// checking each again; questions a newer message superseded close it without a
    /// model call. With `newer_message`, questions still pending are superseded first.
    async fn settle(
        &self,
        slot: &Slot,
        agent: &mut TauAgent,
        sink: &ChannelSink,
        newer_message: bool,
    ) {
        let waiting = agent.pending_approvals();
        if waiting.is_empty() {
            return;
        }
        let mut states = Vec::new();
        for id in &waiting {
            let row = match self.inner.state.approvals().approval(id) {
                Ok(row) => row,
                Err(error) => {
                    tracing::error!(approval_id = %id, %error, "cannot read a stored question");
                    return;
                }
            };
            let state = match row {
                Some(row) if row.state == ApprovalState::Pending && newer_message => {
                    self.supersede(&row)
                }
                Some(row) => Some(row.state),
                // Gone from the store: resuming lets the gate refuse it.
                None => Some(ApprovalState::Cancelled),
            };
            match state {
                Some(ApprovalState::Pending) | None => return,
                Some(state) => states.push(state),
            }
        }
        let closing = closing_reason(&states, newer_message);
        if let Err(error) = agent.resume_stored(Some(sink), closing).await {
            tracing::warn!(session = %slot.session, %error, "the waiting turn could not go on");
        }
    }

    /// `pending -> superseded`; the state the row ends in (another answer may have won).
    fn supersede(&self, row: &ApprovalRow) -> Option<ApprovalState> {
        match self.decide(row, ApprovalState::Superseded, &DecidedBy::Superseded) {
            Ok(
                Answered::Decided(row)
                | Answered::AlreadyDecided(row)
                | Answered::StepMissing(row)
                | Answered::NotUsed(row),
            ) => Some(row.state),
            Ok(Answered::NotFound) => Some(ApprovalState::Cancelled),
            Err(error) => {
                tracing::error!(approval_id = %row.id, %error, "cannot supersede a question");
                None
            }
        }
    }

    /// Every decided question of the session the turn no longer waits on is settled.
    fn mark_settled(&self, session: &SessionId, agent: &TauAgent) {
        let waiting = agent.pending_approvals();
        if let Err(error) = self
            .inner
            .state
            .approvals()
            .settle_session_approvals(session, &waiting)
        {
            tracing::warn!(%session, %error, "cannot settle the session's questions");
        }
    }
}

/// How the waiting turn ends: a person's answer (or an expiry nobody moved on from)
/// needs the model again; a turn whose questions were all withdrawn ends quietly.
fn closing_reason(states: &[ApprovalState], newer_message: bool) -> Option<TurnStop> {
    let mut closing = None;
    for state in states {
        match state {
            ApprovalState::Approved | ApprovalState::Rejected | ApprovalState::Pending => {
                return None;
            }
            ApprovalState::Expired if !newer_message => return None,
            ApprovalState::Expired => {
                closing = closing.or(Some(TurnStop::Expired));
            }
            ApprovalState::Superseded => closing = Some(TurnStop::Superseded),
            ApprovalState::Cancelled => closing = closing.or(Some(TurnStop::Cancelled)),
        }
    }
    closing
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn how_a_waiting_turn_ends() {
        use ApprovalState::{Approved, Cancelled, Expired, Rejected, Superseded};
        let cases: Vec<(&[ApprovalState], bool, Option<TurnStop>)> = vec![
            (&[Approved], false, None),
            (&[Rejected], true, None),
            (&[Expired], false, None),
            (&[Expired], true, Some(TurnStop::Expired)),
            (&[Superseded], true, Some(TurnStop::Superseded)),
            (&[Expired, Superseded], true, Some(TurnStop::Superseded)),
            (&[Superseded, Approved], true, None),
            (&[Cancelled], false, Some(TurnStop::Cancelled)),
        ];
        for (states, newer, expected) in cases {
            assert_eq!(
                closing_reason(states, newer),
                expected,
                "{states:?} {newer}"
            );
        }
    }
}
