//! Deadlines and restarts: after the cross-check (`check.rs`), a stored question past its
//! deadline expires (its turn goes on with `timeout`), and at start the hub closes the
//! approved calls that were running when it stopped (never running them again), expires
//! what the downtime let pass, resumes the
//! turns whose questions were decided just before it stopped (of a shared store, those it
//! holds: `held_turns.rs`), and reports what is still pending so channels show it again.

use std::time::Duration;

use jiff::Timestamp;
use tau_core::approval::{ExpiredQuestion, expire_due, next_deadline};
use tau_core::waits_on;
use tau_protocol::{ApprovalId, DecidedBy, SessionId};
use tau_state::{Answered, ApprovalRow, ApprovalState};

use crate::HubError;
use crate::hub::{Hub, Recovery};
use crate::types::SessionEvent;

/// The longest the expiry task sleeps; a question stored by another process is seen by
/// then at the latest.
const MAX_SLEEP: Duration = Duration::from_secs(30);

impl Hub {
    /// Recovers from the last run and starts the expiry task. Call once, before the
    /// channels start.
    pub async fn start(&self) -> Result<Recovery, HubError> {
        let refused = self.refuse_untrusted()?;
        let refused_grants = self.refuse_untrusted_grants()?;
        let uncertain = self.close_cut_off_calls()?;
        let cancelled = self.cancel_abandoned()?;
        // What is still hidden has a saved turn waiting on it: tau stopped after saving
        // the turn and before showing its question. Show it now.
        self.inner.state.approvals().show_waiting_approvals()?;
        let expired = self.expire_due().await?;
        let resumed = self
            .resume_held_turns(&mut std::collections::HashSet::new(), false)
            .await?;
        let pending = self
            .inner
            .state
            .approvals()
            .approvals(Some(ApprovalState::Pending))?;
        let hub = self.clone();
        self.inner
            .tasks
            .spawn(async move { hub.expire_forever().await });
        if self.inner.state.is_shared() {
            let hub = self.clone();
            self.inner
                .tasks
                .spawn(async move { hub.resume_held_turns_forever().await });
        }
        Ok(Recovery {
            uncertain,
            cancelled,
            expired,
            resumed,
            pending,
            refused,
            refused_grants,
        })
    }

    /// Approved calls that were let through and whose result was never stored: tau
    /// stopped while they ran. None runs again. A turn that still waits on its question
    /// closes it when it goes on (the model and the channel hear it then); any other (a
    /// routine's run died with the process, a `tau chat` was killed) is closed here as
    /// `effect_uncertain`, with its audit line, unless its session is open in another tau
    /// that may still be running it. The same sweep `tau chat` makes when it starts.
    fn close_cut_off_calls(&self) -> Result<usize, HubError> {
        let bus_of = |session: &SessionId| self.bus(session);
        let factory = &self.inner.factory;
        let found = tau_core::close_cut_off_calls(
            &self.inner.state.approvals(),
            &self.inner.state.sessions(),
            &bus_of,
            &|row: &ApprovalRow| !factory.open_elsewhere(&row.session),
        )?;
        Ok(found.closed.len() + found.waiting.len())
    }

    /// True when the stored turn of `session` waits on question `id`.
    pub(crate) fn session_waits_on(
        &self,
        session: &SessionId,
        id: &ApprovalId,
    ) -> Result<bool, HubError> {
        Ok(tau_core::turn_waits_on(
            &self.inner.state.sessions(),
            session,
            id,
        )?)
    }

    /// Cancels pending questions nobody waits on: their session no longer does (it was
    /// deleted, or `tau chat` opened it while the hub was down and gave the turn up), or
    /// they were a routine's, whose run died with the process. An answer to one could
    /// never run anything, so no card may offer it.
    fn cancel_abandoned(&self) -> Result<usize, HubError> {
        let mut cancelled = 0;
        for row in self
            .inner
            .state
            .approvals()
            .all_approvals(Some(ApprovalState::Pending))?
        {
            let waits = self.session_waits_on(&row.session, &row.id)?;
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
    pub(crate) fn waits_on_a_decided_question(
        &self,
        session: &SessionId,
    ) -> Result<bool, HubError> {
        let Some(state) = tau_core::load_agent_state(&self.inner.state.sessions(), session)? else {
            return Ok(false);
        };
        for interrupt in state.interrupt_state.unfinished() {
            let Some(id) = waits_on(&interrupt) else {
                continue;
            };
            match self.inner.state.approvals().approval(&id)? {
                Some(row) if row.state == ApprovalState::Pending => {}
                Some(_) | None => return Ok(true),
            }
        }
        Ok(false)
    }

    /// Expires every pending question past its deadline (the one expirer, for a turn's
    /// questions and a routine's alike), shows each closed on its channel, and lets its
    /// turn go on (a routine's run sees the change and goes on by itself).
    async fn expire_due(&self) -> Result<usize, HubError> {
        let bus_of = |session: &SessionId| self.bus(session);
        let expired = expire_due(&self.inner.state.approvals(), &bus_of, Timestamp::now())?;
        for ExpiredQuestion { row, closing } in &expired {
            self.publish(&row.session, SessionEvent::Turn(closing.clone()));
            let _ = self.inner.changes.send(row.clone());
            if self.holds_turn(&row.id, &row.session) {
                self.settle_later(&row.session).await;
            }
        }
        Ok(expired.len())
    }

    /// Sleeps until the next deadline (or a new question, or `MAX_SLEEP`), expires what is
    /// due, until the hub stops.
    async fn expire_forever(&self) {
        loop {
            if let Err(error) = self.expire_due().await {
                tracing::error!(%error, "cannot expire stored questions");
            }
            let next = next_deadline(&self.inner.state.approval_reader())
                .ok()
                .flatten();
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
