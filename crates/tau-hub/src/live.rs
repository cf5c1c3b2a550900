//! What the hub holds of each conversation in use, in one record per session: which
//! conversation it is, its open session (the slot its turns run in), its event stream and
//! its audit bus. They are made as they are first needed and dropped together when the
//! conversation is deleted, so no map outlives another.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use tau_protocol::SessionId;

use tau_agent::CancelHandle;
use tau_core::{EventBus, TauAgent};
use tau_state::Conversation;
use tokio::sync::broadcast;

use crate::types::{Opened, SessionEvent};

/// How many events a slow subscriber may fall behind before it is told it lagged.
const STREAM_CAPACITY: usize = 1024;

pub(crate) fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One open session: its agent behind a lock, so turns run one at a time.
pub(crate) struct Slot {
    pub(crate) session: SessionId,
    pub(crate) agent: tokio::sync::Mutex<TauAgent>,
    cancel: CancelHandle,
    /// Turns running or queued.
    pub(crate) queued: AtomicUsize,
    _guard: Box<dyn Send + Sync>,
}

impl Slot {
    pub(crate) fn new(session: &SessionId, opened: Opened) -> Self {
        Self {
            session: session.clone(),
            cancel: opened.agent.cancel_handle(),
            agent: tokio::sync::Mutex::new(opened.agent),
            queued: AtomicUsize::new(0),
            _guard: opened.guard,
        }
    }

    /// True while a turn runs or waits to run.
    pub(crate) fn busy(&self) -> bool {
        self.queued.load(Ordering::SeqCst) > 0
    }

    /// Cancels the running turn (a command it runs stops with it).
    pub(crate) fn cancel(&self) {
        self.cancel.cancel();
    }
}

/// One conversation in use.
struct Live {
    /// Which conversation the session is (it never changes once made); `None` until
    /// read from the store.
    conversation: Option<Conversation>,
    /// The open session; `None` until a turn or an answer needs it.
    slot: Option<Arc<Slot>>,
    /// The session's events, for its subscribers.
    stream: broadcast::Sender<SessionEvent>,
    /// Where its gate's audit events go; `None` until first needed.
    bus: Option<EventBus>,
}

impl Live {
    fn new() -> Self {
        Self {
            conversation: None,
            slot: None,
            stream: broadcast::channel(STREAM_CAPACITY).0,
            bus: None,
        }
    }
}

/// Every conversation in use, one record each.
#[derive(Default)]
pub(crate) struct LiveConversations(Mutex<HashMap<SessionId, Live>>);

impl LiveConversations {
    fn with<R>(&self, session: &SessionId, f: impl FnOnce(&mut Live) -> R) -> R {
        f(locked(&self.0)
            .entry(session.clone())
            .or_insert_with(Live::new))
    }

    /// The conversation `session` is, when it was read already.
    pub(crate) fn conversation(&self, session: &SessionId) -> Option<Conversation> {
        locked(&self.0)
            .get(session)
            .and_then(|live| live.conversation.clone())
    }

    pub(crate) fn remember(&self, session: &SessionId, conversation: &Conversation) {
        self.with(session, |live| {
            live.conversation = Some(conversation.clone());
        });
    }

    /// The open session, if it is open.
    pub(crate) fn slot(&self, session: &SessionId) -> Option<Arc<Slot>> {
        locked(&self.0)
            .get(session)
            .and_then(|live| live.slot.clone())
    }

    pub(crate) fn open(&self, session: &SessionId, slot: &Arc<Slot>) {
        self.with(session, |live| live.slot = Some(Arc::clone(slot)));
    }

    /// Every open session.
    pub(crate) fn slots(&self) -> Vec<Arc<Slot>> {
        locked(&self.0)
            .values()
            .filter_map(|live| live.slot.clone())
            .collect()
    }

    /// True while a turn of `session` runs or waits to run.
    pub(crate) fn busy(&self, session: &SessionId) -> bool {
        self.slot(session).is_some_and(|slot| slot.busy())
    }

    pub(crate) fn stream(&self, session: &SessionId) -> broadcast::Sender<SessionEvent> {
        self.with(session, |live| live.stream.clone())
    }

    /// The session's bus, made by `make` the first time.
    pub(crate) fn bus(&self, session: &SessionId, make: impl FnOnce() -> EventBus) -> EventBus {
        self.with(session, |live| live.bus.get_or_insert_with(make).clone())
    }

    /// Drops everything held of `session`: its slot (its session lock goes with it), its
    /// stream, its bus.
    pub(crate) fn forget(&self, session: &SessionId) {
        let live = locked(&self.0).remove(session);
        drop(live);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn a_forgotten_conversation_takes_its_stream_bus_and_name_with_it() {
        let live = LiveConversations::default();
        let session = SessionId::parse("web-1").unwrap();
        let conversation = Conversation {
            channel: "web".into(),
            key: "web-1".into(),
            session: session.clone(),
            created_at: jiff::Timestamp::UNIX_EPOCH,
        };
        live.remember(&session, &conversation);
        let mut listening = live.stream(&session).subscribe();
        let made = std::sync::atomic::AtomicUsize::new(0);
        let bus = || {
            made.fetch_add(1, Ordering::SeqCst);
            EventBus::new()
        };
        live.bus(&session, bus);
        live.bus(&session, bus);
        assert_eq!(made.load(Ordering::SeqCst), 1, "one bus per conversation");
        assert_eq!(live.conversation(&session), Some(conversation));

        live.forget(&session);
        assert_eq!(live.conversation(&session), None);
        assert!(live.slot(&session).is_none());
        assert_eq!(
            listening.try_recv(),
            Err(broadcast::error::TryRecvError::Closed)
        );
        live.bus(&session, bus);
        assert_eq!(
            made.load(Ordering::SeqCst),
            2,
            "a new bus after it was forgotten"
        );
    }
}
