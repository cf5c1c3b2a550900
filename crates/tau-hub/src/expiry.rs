//! Deadlines and restarts: after the cross-check (`check.rs`), a stored question past its deadline expires (its turn goes on
//! with `timeout`), and at start the hub expires what the downtime let pass, resumes the
//! turns whose questions were decided just before it stopped, and reports what is still
//! pending so channels show it again.

use std::collections::BTreeSet;
use std::time::Duration;

use jiff::Timestamp;
use tau_agent::{SessionId, SessionRepository};
use tau_core::approval::{Answered, ApprovalState};
use tau_core::{DecidedBy, waits_on};

use crate::HubError;
use crate::hub::{Hub, Recovery};

/// The longest the expiry task sleeps; a question stored by another process is seen by
/// then at the latest.
const MAX_SLEEP: Duration = Duration::from_secs(30);

impl Hub {
    /// Recovers from the last run and starts the expiry task. Call once, before the
    /// channels start.
    pub async fn start(&self) -> Result<Recovery, HubError> {
        let refused = self.refuse_untrusted()?;
        let cancelled = self.cancel_abandoned()?;
        let expired = self.expire_due().await?;
        let mut resumed = 0;
        let mut sessions = BTreeSet::new();
        for row in self.inner.state.unsettled_approvals()? {
            sessions.insert(row.session);
        }
        for session in sessions {
            if self.waits_on_a_decided_question(&session)? {
                self.settle_later(&session).await;
                resumed += 1;
            }
        }
        let pending = self.inner.state.approvals(Some(ApprovalState::Pending))?;
        let hub = self.clone();
        self.inner
            .tasks
            .spawn(async move { hub.expire_forever().await });
        Ok(Recovery {
            cancelled,
            expired,
            resumed,
            pending,
            refused,
        })
    }

    /// Cancels pending questions whose session no longer waits on them (it was deleted,
    /// or `tau chat` opened it while the hub was down and gave the turn up): an answer to
    /// one could never run anything, so no card may offer it.
    fn cancel_abandoned(&self) -> Result<usize, HubError> {
        let mut cancelled = 0;
        for row in self.inner.state.approvals(Some(ApprovalState::Pending))? {
            // Only a hub conversation's questions: another asker (a routine) keeps its own.
            if self.conversation_of(&row.session)?.is_none() {
                continue;
            }
            let waits = self
                .inner
                .state
                .load_state(&row.session)?
                .is_some_and(|state| {
                    state
                        .interrupt_state
                        .pending()
                        .iter()
                        .any(|i| waits_on(i).as_ref() == Some(&row.id))
                });
            if !waits
                && let Answered::Decided(_) =
                    self.decide(&row, ApprovalState::Cancelled, &DecidedBy::Cancelled)?
            {
                tracing::warn!(approval_id = %row.id, session = %row.session, "a stored question nobody waits on was cancelled");
                cancelled += 1;
            }
        }
        Ok(cancelled)
    }

    /// True when the stored session waits on a question that is no longer pending.
    fn waits_on_a_decided_question(&self, session: &SessionId) -> Result<bool, HubError> {
        let Some(state) = self.inner.state.load_state(session)? else {
            return Ok(false);
        };
        for interrupt in state.interrupt_state.pending() {
            let Some(id) = waits_on(&interrupt) else {
                continue;
            };
            match self.inner.state.approval(&id)? {
                Some(row) if row.state == ApprovalState::Pending => {}
                Some(_) | None => return Ok(true),
            }
        }
        Ok(false)
    }

    /// Expires every pending question past its deadline and lets its turn go on.
    async fn expire_due(&self) -> Result<usize, HubError> {
        let now = Timestamp::now();
        let mut expired = 0;
        for row in self.inner.state.approvals(Some(ApprovalState::Pending))? {
            if row.deadline > now {
                continue;
            }
            if let Answered::Decided(_) =
                self.decide(&row, ApprovalState::Expired, &DecidedBy::Timeout)?
            {
                tracing::info!(approval_id = %row.id, tool = %row.tool, "stored question expired");
                expired += 1;
                self.settle_later(&row.session).await;
            }
        }
        Ok(expired)
    }

    /// Sleeps until the next deadline (or a new question, or `MAX_SLEEP`), expires what is
    /// due, until the hub stops.
    async fn expire_forever(&self) {
        loop {
            if let Err(error) = self.expire_due().await {
                tracing::error!(%error, "cannot expire stored questions");
            }
            let next = self
                .inner
                .state
                .approvals(Some(ApprovalState::Pending))
                .ok()
                .and_then(|rows| rows.iter().map(|r| r.deadline).min());
            let sleep = next
                .map_or(MAX_SLEEP, |deadline| {
                    // A deadline already past converts to nothing: wake at once.
                    Duration::try_from(deadline.duration_since(Timestamp::now()))
                        .unwrap_or(Duration::ZERO)
                        .min(MAX_SLEEP)
                })
                // Past deadlines round up a little, so a clock at the edge cannot spin.
                .max(Duration::from_millis(50));
            tokio::select! {
                () = self.inner.stop.cancelled() => return,
                () = self.inner.sweep.notified() => {}
                () = tokio::time::sleep(sleep) => {}
            }
        }
    }
}
