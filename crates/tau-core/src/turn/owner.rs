//! Who may open a conversation, across processes and restarts.
//!
//! The rule: a conversation whose turn waits on a stored question belongs to the hub
//! until that question ends and the turn has gone on. Its question may still wait for
//! an answer on its channel, or be answered (or expired) while the turn has not gone on
//! yet; either way only the hub resumes a paused turn, and only a resumed turn runs an
//! approved call (checking the stored answer again first). A tau that opened such a
//! session itself would have to give the paused turn up, and a person's yes would then
//! be stored with nothing left to run it. So every tau that opens a session of its own
//! (`tau chat`, `tau tui`, `tau routines run`, `tau sessions delete`) asks [`hub_hold`]
//! while it holds the session's lock (the hub cannot pause a turn in it meanwhile), and
//! refuses the session when the hub holds it.

use tau_agent::SessionError;
use tau_protocol::{ApprovalId, SessionId};

use super::waits_on;
use crate::sessions::load_agent_state;
use tau_state::{ApprovalReader, ApprovalRow, ApprovalState, Sessions, StateError};

/// `state.db` could not be read (or written) for a stored turn or its questions.
#[derive(Debug, thiserror::Error)]
pub enum StoredTurnError {
    #[error(transparent)]
    State(#[from] StateError),
    #[error(transparent)]
    Session(#[from] SessionError),
}

/// Why the hub holds a conversation.
#[derive(Debug, Clone, PartialEq)]
pub enum HubHold {
    /// Its question waits for an answer on the channel that asked it (listed there, and
    /// by `tau approvals`).
    Waiting(ApprovalRow),
    /// Its saved turn is paused on question `approval_id`, which no longer waits for an
    /// answer (answered, expired, or not shown yet when the hub stopped): the turn goes
    /// on when the hub next runs. `row` is the question, when it is still stored.
    Paused {
        approval_id: ApprovalId,
        row: Option<ApprovalRow>,
    },
}

/// Whether the hub holds `session`, and why (its shown questions in `approvals`, its saved
/// turn in `sessions`); `None` when any tau may open it.
pub fn hub_hold(
    approvals: &ApprovalReader,
    sessions: &Sessions,
    session: &SessionId,
) -> Result<Option<HubHold>, StoredTurnError> {
    // Shown questions only: one stored hidden with no saved turn waiting on it was never
    // seen by anyone and is cancelled at the hub's next start.
    if let Some(row) = approvals
        .approvals(Some(ApprovalState::Pending))?
        .into_iter()
        .find(|row| &row.session == session)
    {
        return Ok(Some(HubHold::Waiting(row)));
    }
    let Some(state) = load_agent_state(sessions, session)? else {
        return Ok(None);
    };
    let Some(approval_id) = state.interrupt_state.unfinished().iter().find_map(waits_on) else {
        return Ok(None);
    };
    let row = approvals.approval(&approval_id)?;
    Ok(Some(HubHold::Paused { approval_id, row }))
}

/// True when the saved turn of `session` waits on question `id`.
pub fn turn_waits_on(
    sessions: &Sessions,
    session: &SessionId,
    id: &ApprovalId,
) -> Result<bool, StoredTurnError> {
    Ok(load_agent_state(sessions, session)?.is_some_and(|state| {
        state
            .interrupt_state
            .unfinished()
            .iter()
            .any(|i| waits_on(i).as_ref() == Some(id))
    }))
}

#[cfg(test)]
mod tests {
    use jiff::Timestamp;
    use pretty_assertions::assert_eq;
    use serde_json::json;
    use tau_agent::{AgentState, Interrupt, SessionRepository, interrupt_id};
    use tau_protocol::{CallCard, DecidedBy, Tier};

    use super::*;
    use crate::approval::{APPROVAL_INTERRUPT, question_reason};
    use crate::sessions::StoredSessions;
    use tau_state::{NewApproval, StateDb};

    fn question(store: &StateDb, session: &SessionId, id: &str) -> ApprovalId {
        let id = ApprovalId::parse(id).unwrap();
        let row = NewApproval {
            id: id.clone(),
            session: session.clone(),
            call_id: "t1".into(),
            tool: "run_command".into(),
            tier: Tier::Physical,
            effect: "runs a command".into(),
            arguments: json!({"command": "make"}),
            channel: "web".into(),
            created_at: Timestamp::from_second(10).unwrap(),
            deadline: Timestamp::from_second(1810).unwrap(),
            card: CallCard::default(),
        }
        .into_row();
        store.approvals().create_hidden_approval(&row).unwrap();
        id
    }

    fn pause_on(store: &StateDb, session: &SessionId, id: &ApprovalId) {
        let interrupt = Interrupt {
            id: interrupt_id("t1", APPROVAL_INTERRUPT),
            name: APPROVAL_INTERRUPT.into(),
            reason: question_reason(id),
            response: None,
        };
        let mut state = AgentState::default();
        state.interrupt_state.activated = true;
        state
            .interrupt_state
            .interrupts
            .insert(interrupt.id.clone(), interrupt);
        let sessions = StoredSessions::new(store.sessions());
        sessions.ensure_session(session).unwrap();
        sessions.save_state(session, &state).unwrap();
    }

    /// The hub holds a conversation while its turn waits on a stored question, answered or
    /// not, and lets it go once the turn went on; another conversation is never held.
    #[test]
    fn the_hub_holds_a_conversation_until_its_paused_turn_went_on() {
        let dir = tempfile::tempdir().unwrap();
        let store = StateDb::open(&dir.path().join("state.db")).unwrap();
        let session = SessionId::parse("web-1").unwrap();
        let other = SessionId::parse("s1").unwrap();
        assert_eq!(
            hub_hold(&store.approval_reader(), &store.sessions(), &session).unwrap(),
            None
        );

        // Stored hidden, its turn not saved yet: nobody saw it and nothing waits on it.
        let id = question(&store, &session, "ap_1");
        assert_eq!(
            hub_hold(&store.approval_reader(), &store.sessions(), &session).unwrap(),
            None
        );
        // The turn saved, the question not shown yet: paused.
        pause_on(&store, &session, &id);
        let Some(HubHold::Paused { approval_id, row }) =
            hub_hold(&store.approval_reader(), &store.sessions(), &session).unwrap()
        else {
            panic!("paused");
        };
        assert_eq!(
            (approval_id, row.map(|r| r.id)),
            (id.clone(), Some(id.clone()))
        );
        // Shown: it waits for its answer.
        store.approvals().show_approval(&id).unwrap();
        let Some(HubHold::Waiting(row)) =
            hub_hold(&store.approval_reader(), &store.sessions(), &session).unwrap()
        else {
            panic!("waiting");
        };
        assert_eq!(row.id, id);
        assert!(turn_waits_on(&store.sessions(), &session, &id).unwrap());
        assert_eq!(
            hub_hold(&store.approval_reader(), &store.sessions(), &other).unwrap(),
            None
        );

        // Answered: still the hub's until the turn went on.
        store
            .approvals()
            .decide_approval(
                &id,
                ApprovalState::Approved,
                &DecidedBy::person("web"),
                Timestamp::from_second(20).unwrap(),
            )
            .unwrap();
        assert!(matches!(
            hub_hold(&store.approval_reader(), &store.sessions(), &session).unwrap(),
            Some(HubHold::Paused { .. })
        ));
        StoredSessions::new(store.sessions())
            .save_state(&session, &AgentState::default())
            .unwrap();
        assert_eq!(
            hub_hold(&store.approval_reader(), &store.sessions(), &session).unwrap(),
            None
        );
        assert!(!turn_waits_on(&store.sessions(), &session, &id).unwrap());
    }
}
