//! Turns this hub holds, of a store several hubs share. A question's turn is the hub's
//! that asked it (`asked_by`) while that hub's lease holds: another hub that takes the
//! answer (TauBar, Telegram polled there) only stores it, and this hub, looking at the
//! store every second, sees the question decided and resumes the turn, so the approved
//! call runs here, in this hub's workspace. A question whose asking hub is gone (its
//! lease ran out) is claimed by one hub (a compare-and-set on `asked_by`), which resumes
//! it; the gate's `approved -> consumed` compare-and-set still lets the call through once.
//! The look comes at once when another connection commits (a thread of its own waits on
//! the store, `LISTEN` on PostgreSQL), and every second regardless.
//! A store that is one hub's (a file) has no such task: the hub that took the answer
//! resumes the turn at once, as it always did.

use std::collections::{BTreeSet, HashSet};
use std::sync::{Arc, Weak};
use std::time::Duration;

use tau_protocol::{ApprovalId, SessionId};
use tau_state::StateDb;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::HubError;
use crate::hub::Hub;
use crate::types::SessionEvent;

/// How often the store is looked at for questions decided elsewhere, and for hubs gone.
const LOOK_EVERY: Duration = Duration::from_secs(1);
/// The least time between two looks a commit wakes: every commit of every hub wakes the
/// waiter, thousands a second under load.
const WAKE_GAP: Duration = Duration::from_millis(100);

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

    /// Looks at the store when another connection commits and every second, until the hub
    /// stops, for turns this hub holds whose questions another hub decided, or whose
    /// asking hub is gone.
    pub(crate) async fn resume_held_turns_forever(&self) {
        let wake = Arc::new(Notify::new());
        wake_on_commits(
            self.inner.state.clone(),
            Arc::downgrade(&wake),
            self.inner.stop.clone(),
        );
        let mut seen = HashSet::new();
        loop {
            tokio::select! {
                () = self.inner.stop.cancelled() => return,
                () = tokio::time::sleep(LOOK_EVERY) => {}
                () = wake.notified() => {}
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

/// Starts a thread that wakes `wake` whenever a commit reaches the store, on a connection of
/// its own (the hub's must not wait). It ends when the hub stops or nobody holds `wake`;
/// a plain thread, so a wait under way never holds up the runtime's shutdown. A store it
/// cannot reach only delays the looks to [`LOOK_EVERY`]: it tries again each time.
pub(crate) fn wake_on_commits(
    state: StateDb,
    wake: Weak<Notify>,
    stop: CancellationToken,
) -> Option<std::thread::JoinHandle<()>> {
    let watching = move || {
        let mut waiter = None;
        while !stop.is_cancelled() && wake.strong_count() > 0 {
            let store = match &waiter {
                Some(store) => store,
                None => match state.another_connection() {
                    Ok(store) => waiter.insert(store),
                    Err(error) => {
                        tracing::debug!(%error, "cannot open a connection to wait for commits");
                        std::thread::sleep(LOOK_EVERY);
                        continue;
                    }
                },
            };
            match store.wait_for_change(LOOK_EVERY) {
                Ok(false) => {}
                Ok(true) => {
                    if let Some(wake) = wake.upgrade() {
                        wake.notify_one();
                    }
                    std::thread::sleep(WAKE_GAP);
                }
                Err(error) => {
                    tracing::debug!(%error, "cannot wait for commits");
                    std::thread::sleep(LOOK_EVERY);
                }
            }
        }
    };
    let started = std::thread::Builder::new()
        .name("tau-commits".to_owned())
        .spawn(watching);
    started
        .inspect_err(|error| {
            tracing::warn!(%error, "cannot start the thread that waits for commits; looking every second");
        })
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Commits on `db` until `wake` is woken: the waiter's connection may open after the
    /// first commit, which is then not news to it.
    async fn commit_until_woken(db: &StateDb, wake: &Notify) {
        for n in 0.. {
            let session = SessionId::parse(&format!("web-{n}")).unwrap();
            db.sessions().ensure_session(&session).unwrap();
            tokio::select! {
                () = wake.notified() => return,
                () = tokio::time::sleep(Duration::from_millis(50)) => {}
            }
        }
    }

    #[tokio::test]
    async fn a_commit_wakes_the_look_and_a_stopped_hub_s_thread_ends() {
        let dir = tempfile::tempdir().unwrap();
        let db = StateDb::open(&dir.path().join("state.db")).unwrap();
        let wake = Arc::new(Notify::new());
        let stop = CancellationToken::new();
        let thread = wake_on_commits(db.clone(), Arc::downgrade(&wake), stop.clone()).unwrap();
        tokio::time::timeout(Duration::from_secs(30), commit_until_woken(&db, &wake))
            .await
            .expect("a commit on another connection wakes the look");
        stop.cancel();
        let ended = tokio::task::spawn_blocking(move || thread.join().is_ok());
        assert!(ended.await.unwrap(), "the thread ended without a panic");
    }

    #[tokio::test]
    async fn the_thread_ends_once_nobody_holds_the_wake() {
        let dir = tempfile::tempdir().unwrap();
        let db = StateDb::open(&dir.path().join("state.db")).unwrap();
        let wake = Arc::new(Notify::new());
        let thread = wake_on_commits(db, Arc::downgrade(&wake), CancellationToken::new()).unwrap();
        drop(wake);
        let ended = tokio::task::spawn_blocking(move || thread.join().is_ok());
        assert!(ended.await.unwrap(), "the thread ended without a panic");
    }
}
