//! Turns this hub holds, of a store several hubs share. A question's turn is the hub's
//! that asked it (`asked_by`) while that hub's lease holds: another hub that takes the
//! answer (TauBar, Telegram polled there) only stores it, and this hub, looking at the
//! store every second, sees the question decided and resumes the turn, so the approved
//! call runs here, in this hub's workspace. A question whose asking hub is gone (its
//! lease ran out) is claimed by one hub (a compare-and-set on `asked_by`), which resumes
//! it; the gate's `approved -> consumed` compare-and-set still lets the call through once.
//! A store that is one hub's (a file) has no such task: the hub that took the answer
//! resumes the turn at once, as it always did.

use std::collections::{BTreeSet, HashSet};
use std::time::Duration;

use tau_protocol::{ApprovalId, SessionId};

use crate::HubError;
use crate::hub::Hub;
use crate::types::SessionEvent;

/// How often the store is looked at for questions decided elsewhere, and for hubs gone.
const LOOK_EVERY: Duration = Duration::from_secs(1);

impl Hub {
    /// Claims the decided, unsettled questions this hub may hold and queues the turns that
    /// wait on them; how many turns it queued. `seen` keeps the questions already dealt
    /// with out of later looks (a turn that no longer waits on one is not looked at again).
    pub(crate) async fn resume_held_turns(
        &self,
        seen: &mut HashSet<ApprovalId>,
        announce: bool,
    ) -> Result<usize, HubError> {
        let mut sessions = BTreeSet::new();
        for row in self.inner.state.approvals().unsettled_approvals()? {
            // A turn that runs or is queued here settles its question when done.
            if seen.contains(&row.id)
                || self.inner.live.busy(&row.session)
                || !self.inner.state.approvals().claim_turn(&row.id)?
            {
                continue;
            }
            if announce {
                // The hub that took the answer showed it; this hub's channels learn it here.
                if let Some(event) = tau_core::approval::decided_event(&row) {
                    self.publish(&row.session, SessionEvent::Turn(event));
                }
                let _ = self.inner.changes.send(row.clone());
            }
            seen.insert(row.id.clone());
            sessions.insert(row.session);
        }
        let mut resumed = 0;
        for session in sessions {
            if self.waits_on_a_decided_question(&session)? {
                self.settle_later(&session).await;
                resumed += 1;
            }
        }
        Ok(resumed)
    }

    /// Looks at the store every second, until the hub stops, for turns this hub holds
    /// whose questions another hub decided, or whose asking hub is gone.
    pub(crate) async fn resume_held_turns_forever(&self) {
        let mut seen = HashSet::new();
        loop {
            tokio::select! {
                () = self.inner.stop.cancelled() => return,
                () = tokio::time::sleep(LOOK_EVERY) => {}
            }
            if let Err(error) = self.resume_held_turns(&mut seen, true).await {
                tracing::warn!(%error, "cannot look for turns decided on another hub");
            }
        }
    }

    /// Whether this hub resumes the turn of the question `id` it decided: false when
    /// another live hub asked it (that hub resumes it when it sees the answer).
    pub(crate) fn holds_turn(&self, id: &ApprovalId, session: &SessionId) -> bool {
        match self.inner.state.approvals().claim_turn(id) {
            Ok(held) => held,
            Err(error) => {
                // The answer is stored: the next start (or the look) resumes it.
                tracing::warn!(approval_id = %id, %session, %error, "cannot tell which hub resumes the turn");
                false
            }
        }
    }
}
