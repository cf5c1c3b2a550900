//! The hub across restarts: a stored question outlives the process, an answer recorded
//! just before a crash goes on at the next start, what expired or was given up while the
//! hub was down is settled at start, and a question edited in `state.db` while the hub was
//! down is refused at start, never run.
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
use tau_core::{AuditEvent, StoredSessions};
use tau_hub::Reply;
use tau_protocol::{DecidedBy, Decision, TurnStop};
use tau_state::{Answered, ApprovalState, StateDb};

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
    until_turn_ends(&mut events, TurnStop::EndTurn).await;
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
    // The answer landed in the store and the audit log, the hub died before the turn
    // went on.
    setup.answer_while_down(&id, ApprovalState::Approved);
    let second = setup.hub(lights_script(), HOUR);
    let mut events = second.subscribe("web", &session).unwrap();
    let recovery = second.start().await.unwrap();
    assert_eq!((recovery.resumed, recovery.pending.len()), (1, 0));
    until_turn_ends(&mut events, TurnStop::EndTurn).await;
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
    let seen = until_turn_ends(&mut events, TurnStop::EndTurn).await;
    assert_eq!(seen[0]["decision"], "timeout");
    let row = second.state().approvals().approval(&id).unwrap().unwrap();
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
    // Another tau cleared the turn's interrupt (as a `tau chat` did before the hub held
    // the conversations whose turn waits on a question).
    let sessions = StoredSessions::new(StateDb::open(&setup.db()).unwrap().sessions());
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

/// The audit events of the refusal at start: the `error` line's message and the closing
/// `approval` line's decision and approver.
fn refusal_lines(setup: &Setup) -> (Vec<String>, Vec<(Decision, String, DecidedBy)>) {
    let events = setup.audit.events();
    let errors = events
        .iter()
        .filter_map(|e| match e {
            AuditEvent::Error { message, .. } => Some(message.clone()),
            _ => None,
        })
        .collect();
    let closings = events
        .iter()
        .filter_map(|e| match e {
            AuditEvent::Approval {
                ruling:
                    tau_protocol::Ruling {
                        decision,
                        decided_by,
                    },
                approver,
                ..
            } if approver == "start_check" => {
                Some((*decision, approver.clone(), decided_by.clone()))
            }
            _ => None,
        })
        .collect();
    (errors, closings)
}

#[tokio::test]
async fn an_approval_written_into_state_db_while_down_is_refused_at_start_not_run() {
    let setup = Setup::new();
    let first = setup.hub(lights_script(), HOUR);
    first.start().await.unwrap();
    let (session, _events, id) = ask(&first).await;
    first.shutdown().await;
    drop(first);
    // Another program approves the row as if a person had: no answer was ever given.
    setup.edit_state_db(
        r#"UPDATE approvals SET state = 'approved', decided_by = '{"kind":"person","channel":"web"}',
           decided_at = '2026-01-01T00:00:00Z' WHERE id = ?1"#,
        &id,
    );
    let second = setup.hub(lights_script(), HOUR);
    let mut events = second.subscribe("web", &session).unwrap();
    let recovery = second.start().await.unwrap();
    assert_eq!(
        recovery
            .refused
            .iter()
            .map(|r| (r.row.id.as_str(), r.why.as_str()))
            .collect::<Vec<_>>(),
        [(
            id.as_str(),
            "it is approved in state.db but the audit log records no answer to it (edited while tau was not running)"
        )]
    );
    assert_eq!((recovery.resumed, recovery.pending.len()), (1, 0));
    // The turn is closed without asking the model again, as for a cancelled question.
    let seen = until_turn_ends(&mut events, TurnStop::Cancelled).await;
    let finished: Vec<&serde_json::Value> = seen
        .iter()
        .filter(|e| e["type"] == "tool_call_finished")
        .collect();
    assert_eq!(finished.len(), 1, "{seen:#?}");
    assert_eq!(
        (&finished[0]["status"], &finished[0]["decided_by"]["kind"]),
        (&json!("refused"), &json!("approver_failed"))
    );
    assert_eq!(setup.lights.runs.load(Ordering::SeqCst), 0, "never run");
    let row = second.state().approvals().approval(&id).unwrap().unwrap();
    assert_eq!(
        (row.state, row.decided_by, row.consumed_at),
        (
            ApprovalState::Cancelled,
            Some(DecidedBy::ApproverFailed),
            None
        )
    );
    let (errors, closings) = refusal_lines(&setup);
    assert_eq!(
        errors,
        [
            "stored approval refused at start: it is approved in state.db but the audit log records no answer to it (edited while tau was not running)"
        ]
    );
    assert_eq!(
        closings,
        [(
            Decision::Rejected,
            "start_check".to_owned(),
            DecidedBy::ApproverFailed
        )]
    );
    second.shutdown().await;

    // Nothing is left to refuse or run at the next start.
    let third = setup.hub(lights_script(), HOUR);
    let recovery = third.start().await.unwrap();
    assert_eq!((recovery.refused.len(), recovery.resumed), (0, 0));
    assert_eq!(setup.lights.runs.load(Ordering::SeqCst), 0);
    third.shutdown().await;
}

#[tokio::test]
async fn an_arguments_column_edited_while_down_is_refused_pending_or_approved() {
    // Approved with its line on record, then the card's arguments are changed: the card
    // would show one call while the hash of another is checked.
    let setup = Setup::new();
    let first = setup.hub(lights_script(), HOUR);
    let (approved_session, _events, approved) = ask(&first).await;
    first.shutdown().await;
    drop(first);
    setup.answer_while_down(&approved, ApprovalState::Approved);
    setup.edit_state_db(
        r#"UPDATE approvals SET arguments = '{"room":"garage"}' WHERE id = ?1"#,
        &approved,
    );
    // A second conversation's question, still pending, edited the same way.
    let second = setup.hub(lights_script(), HOUR);
    let (_, _events, pending) = ask(&second).await;
    second.shutdown().await;
    drop(second);
    setup.edit_state_db(
        r#"UPDATE approvals SET arguments = '{"room":"garage"}' WHERE id = ?1"#,
        &pending,
    );

    let third = setup.hub(lights_script(), HOUR);
    let mut events = third.subscribe("web", &approved_session).unwrap();
    let recovery = third.start().await.unwrap();
    let mut refused: Vec<(&str, &str)> = recovery
        .refused
        .iter()
        .map(|r| (r.row.id.as_str(), r.why.as_str()))
        .collect();
    refused.sort_unstable();
    let why = "its arguments in state.db do not hash to its stored hash (edited while tau was not running)";
    let mut expected = [(approved.as_str(), why), (pending.as_str(), why)];
    expected.sort_unstable();
    assert_eq!(refused, expected);
    assert_eq!(
        recovery.pending.len(),
        0,
        "no card shows the edited arguments"
    );
    let answer = third
        .answer("web", None, &pending, Reply::Approve)
        .await
        .unwrap();
    assert!(matches!(answer, Answered::AlreadyDecided(r) if r.state == ApprovalState::Cancelled));
    // The turn is closed without asking the model again, as for a cancelled question.
    let seen = until_turn_ends(&mut events, TurnStop::Cancelled).await;
    assert!(
        seen.iter()
            .any(|e| e["type"] == "tool_call_finished" && e["status"] == "refused"),
        "{seen:#?}"
    );
    assert_eq!(setup.lights.runs.load(Ordering::SeqCst), 0, "never run");
    third.shutdown().await;
}
