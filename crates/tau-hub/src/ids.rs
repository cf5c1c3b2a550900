//! Session ids of new conversations, and creating a conversation that is surely new.

use tau_protocol::SessionId;
use tau_state::StateDb;

use crate::HubError;

/// How many fresh ids a new conversation tries before it gives up. With 128 random bits a
/// second try already means the randomness is broken; the bound keeps that from looping.
const ATTEMPTS: usize = 4;

/// `{channel}-{yyyymmdd}-{hhmmss}-{32 random hex}`: sortable, with 128 random bits (the
/// time is for reading, not for uniqueness), a valid session id.
pub(crate) fn new_session_id(channel: &str) -> Result<SessionId, HubError> {
    let random = tau_core::random_id("s")?;
    let bits = random.get(2..).unwrap_or_default();
    let now = jiff::Timestamp::now().strftime("%Y%m%d-%H%M%S");
    Ok(SessionId::parse(&format!("{channel}-{now}-{bits}"))?)
}

/// A new conversation of `channel` whose key is its session id, the id taken from
/// `fresh`. An id that is taken already (by a conversation or a stored session) is never
/// handed out: it is logged and another is drawn, up to [`ATTEMPTS`] in all.
pub(crate) fn create_conversation(
    state: &StateDb,
    channel: &str,
    mut fresh: impl FnMut() -> Result<SessionId, HubError>,
) -> Result<SessionId, HubError> {
    for _ in 0..ATTEMPTS {
        let session = fresh()?;
        if let Some(made) =
            state
                .conversations()
                .create_conversation(channel, session.as_str(), &session)?
        {
            return Ok(made.session);
        }
        tracing::warn!(%session, channel, "a new conversation's id was taken already; drawing another");
    }
    Err(HubError::NoFreshId {
        channel: channel.to_owned(),
        attempts: ATTEMPTS,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use std::collections::{HashSet, VecDeque};

    fn store() -> (tempfile::TempDir, StateDb) {
        let dir = tempfile::tempdir().unwrap();
        let store = StateDb::open(&dir.path().join("state.db")).unwrap();
        (dir, store)
    }

    fn ids(list: &[&str]) -> impl FnMut() -> Result<SessionId, HubError> {
        let mut queue: VecDeque<SessionId> = list
            .iter()
            .map(|id| SessionId::parse(id).unwrap())
            .collect();
        move || Ok(queue.pop_front().unwrap())
    }

    #[test]
    fn an_id_has_the_channel_the_time_and_128_random_bits() {
        let id = new_session_id("telegram").unwrap();
        let parts: Vec<&str> = id.as_str().split('-').collect();
        assert_eq!(parts.len(), 4, "{id}");
        assert_eq!(parts[0], "telegram");
        assert_eq!((parts[1].len(), parts[2].len()), (8, 6), "{id}");
        assert_eq!(parts[3].len(), 32, "{id}");
        assert!(parts[3].bytes().all(|b| b.is_ascii_hexdigit()), "{id}");
        let many: HashSet<String> = (0..10_000)
            .map(|_| new_session_id("web").unwrap().as_str().to_owned())
            .collect();
        assert_eq!(many.len(), 10_000, "ids drawn in the same second differ");
    }

    #[test]
    fn a_taken_id_is_never_handed_out_again() {
        let (_dir, store) = store();
        let first = create_conversation(&store, "web", ids(&["web-1"])).unwrap();
        assert_eq!(first.as_str(), "web-1");

        // The generator collides twice (with the conversation, then with a session of
        // `tau chat` that belongs to none), the third id is new.
        store
            .sessions()
            .ensure_session(&SessionId::parse("web-2").unwrap())
            .unwrap();
        let second = create_conversation(&store, "web", ids(&["web-1", "web-2", "web-3"])).unwrap();
        assert_eq!(second.as_str(), "web-3");
        let keys: Vec<String> = store
            .conversations()
            .conversations_of("web")
            .unwrap()
            .into_iter()
            .map(|c| c.session.as_str().to_owned())
            .collect();
        assert_eq!(keys, ["web-1", "web-3"]);
    }

    #[test]
    fn a_generator_that_only_collides_is_an_error_not_an_old_conversation() {
        let (_dir, store) = store();
        create_conversation(&store, "web", ids(&["web-1"])).unwrap();
        let error = create_conversation(&store, "web", || Ok(SessionId::parse("web-1").unwrap()))
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "no unused id for a new web conversation after 4 tries"
        );
        assert!(
            matches!(&error, HubError::NoFreshId { channel, attempts: ATTEMPTS } if channel == "web"),
            "{error:?}"
        );
        assert_eq!(
            store.conversations().conversations_of("web").unwrap().len(),
            1
        );
    }

    /// The store's error reaches the caller whole, its words unchanged.
    #[test]
    fn a_store_error_is_kept_not_retold() {
        let error = HubError::from(tau_state::StateError::Vanished {
            channel: "web".into(),
            key: "a".into(),
        });
        assert_eq!(error.to_string(), "state.db: conversation web/a vanished");
        assert!(matches!(
            error,
            HubError::Store(tau_state::StateError::Vanished { .. })
        ));
        let bad = new_session_id("no spaces allowed").unwrap_err();
        assert!(matches!(bad, HubError::InvalidSessionId(_)), "{bad:?}");
    }
}
