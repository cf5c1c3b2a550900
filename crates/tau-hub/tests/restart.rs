//! The hub across restarts: a stored question outlives the process, an answer recorded
//! just before a crash goes on at the next start, what expired or was given up while the
//! hub was down is settled at start.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod support;

use std::sync::atomic::Ordering;
use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::json;
use tau_agent::SessionRepository;
use tau_core::{DecidedBy, StopReason};
use tau_hub::{Answered, ApprovalState, Reply, StateDb};

use support::*;

#[tokio::test]
async fn a_question_outlives_the_hub_and_runs_once_after_a_restart() {
    let setup = Setup::new();
    let first = setup.hub(lights_script(), HOUR);
    first.start().await.unwrap();
    let (session, _events, id) = ask(&first).await;
    first.shutdown().await;
    drop(first);

    let second = setup.hub(lights_script(), HOUR);
    let recovery = second.start().await.unwrap();
    assert_eq!(
        recovery
            .pending
            .iter()
            .map(|r| r.id.as_str())
            .collect::<Vec<_>>(),
        [id.as_str()]
    );
    let mut events = second.subscribe("web", &session).unwrap();
    second
        .answer("web", None, &id, Reply::Approve)
        .await
        .unwrap();
    until_turn_ends(&mut events, StopReason::EndTurn).await;
    assert_eq!(
        *setup.lights.inputs.lock().unwrap(),
        vec![json!({"room": "kitchen"})]
    );
    assert_eq!(
        setup.decided_by_of_runs(),
        vec![json!({"kind": "person", "channel": "web"})]
    );
    second.shutdown().await;

    // A third start finds nothing to do and runs nothing again.
    let third = setup.hub(lights_script(), HOUR);
    let recovery = third.start().await.unwrap();
    assert_eq!((recovery.resumed, recovery.pending.len()), (0, 0));
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(setup.lights.runs.load(Ordering::SeqCst), 1);
    third.shutdown().await;
}

#[tokio::test]
async fn an_answer_recorded_just_before_a_crash_resumes_at_the_next_start() {
    let setup = Setup::new();
    let first = setup.hub(lights_script(), HOUR);
    first.start().await.unwrap();
    let (session, _events, id) = ask(&first).await;
    first.shutdown().await;
    drop(first);
    // The answer landed in the store, the hub died before the turn went on.
    StateDb::open(&setup.db())
        .unwrap()
        .decide_approval(
            &id,
            ApprovalState::Approved,
            &DecidedBy::person("web"),
            jiff::Timestamp::now(),
        )
        .unwrap();
    let second = setup.hub(lights_script(), HOUR);
    let mut events = second.subscribe("web", &session).unwrap();
    let recovery = second.start().await.unwrap();
    assert_eq!((recovery.resumed, recovery.pending.len()), (1, 0));
    until_turn_ends(&mut events, StopReason::EndTurn).await;
    assert_eq!(setup.lights.runs.load(Ordering::SeqCst), 1);
    second.shutdown().await;
}

#[tokio::test]
async fn a_question_that_expired_while_the_hub_was_down_expires_at_start() {
    let setup = Setup::new();
    let first = setup.hub(lights_script(), Duration::from_secs(1));
    let (session, _events, id) = ask(&first).await;
    first.shutdown().await;
    drop(first);
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let second = setup.hub(lights_script(), Duration::from_secs(1));
    let mut events = second.subscribe("web", &session).unwrap();
    let recovery = second.start().await.unwrap();
    assert_eq!((recovery.expired, recovery.pending.len()), (1, 0));
    let seen = until_turn_ends(&mut events, StopReason::EndTurn).await;
    assert_eq!(seen[0]["decision"], "timeout");
    let row = second.state().approval(&id).unwrap().unwrap();
    assert_eq!(row.state, ApprovalState::Expired);
    assert_eq!(setup.lights.runs.load(Ordering::SeqCst), 0);
    second.shutdown().await;
}

#[tokio::test]
async fn a_question_whose_turn_was_given_up_while_down_is_cancelled_at_start() {
    let setup = Setup::new();
    let first = setup.hub(lights_script(), HOUR);
    let (session, _events, id) = ask(&first).await;
    first.shutdown().await;
    drop(first);
    // Another tau cleared the turn's interrupt (as tau chat does with a stored question).
    let sessions = StateDb::open(&setup.db()).unwrap();
    let mut state = sessions.load_state(&session).unwrap().unwrap();
    state.interrupt_state.deactivate();
    sessions.save_state(&session, &state).unwrap();
    let second = setup.hub(lights_script(), HOUR);
    let recovery = second.start().await.unwrap();
    assert_eq!((recovery.cancelled, recovery.pending.len()), (1, 0));
    let late = second
        .answer("web", None, &id, Reply::Approve)
        .await
        .unwrap();
    assert!(matches!(late, Answered::AlreadyDecided(r) if r.state == ApprovalState::Cancelled));
    assert_eq!(setup.lights.runs.load(Ordering::SeqCst), 0);
    second.shutdown().await;
}
