//! A person's answer to a question nothing waits for any more (its turn was given up
//! behind the hub's back) is never taken as a yes that runs nothing: it is not used, the
//! question is closed with its lines, the conversation is told, and the channel hears
//! why. A question its paused turn still waits on takes the yes and runs once.
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
use tau_agent::SessionRepository;
use tau_core::{AuditEvent, StoredSessions};
use tau_hub::{Reply, SessionEvent};
use tau_protocol::{ChannelEvent, DecidedBy, Decision, NoticeKind, TurnStop};
use tau_state::{Answered, ApprovalState, StateDb};

use support::*;

#[tokio::test]
async fn a_yes_nothing_waits_for_is_not_used_and_the_question_is_closed() {
    let setup = Setup::new();
    let first = setup.hub(lights_script(), HOUR);
    let (session, _events, id) = ask(&first).await;
    first.shutdown().await;
    drop(first);
    let second = setup.hub(lights_script(), HOUR);
    let recovery = second.start().await.unwrap();
    assert_eq!(recovery.pending.len(), 1, "shown again, its turn waits");
    // Then, while the hub runs without the session open, a tau from before the hub held
    // its conversations gives the paused turn up.
    let sessions = StoredSessions::new(StateDb::open(&setup.db()).unwrap().sessions());
    let mut state = sessions.load_state(&session).unwrap().unwrap();
    state.interrupt_state.deactivate();
    sessions.save_state(&session, &state).unwrap();

    let mut events = second.subscribe("web", &session).unwrap();
    let answered = second
        .answer("web", Some("ada".into()), &id, Reply::Approve)
        .await
        .unwrap();
    let Answered::NotUsed(row) = answered else {
        panic!("not used: {answered:?}");
    };
    assert_eq!(
        (row.state, row.decided_by.clone()),
        (ApprovalState::Cancelled, Some(DecidedBy::Cancelled))
    );
    // The card closes and the conversation is told, in that order.
    let mut seen = Vec::new();
    while seen.len() < 2 {
        let event = tokio::time::timeout(Duration::from_secs(5), events.recv())
            .await
            .unwrap()
            .unwrap();
        if let SessionEvent::Turn(event) = event {
            seen.push(event);
        }
    }
    assert!(
        matches!(
            &seen[0],
            ChannelEvent::ApprovalDecided {
                ruling: tau_protocol::Ruling {
                    decided_by: DecidedBy::Cancelled,
                    ..
                },
                ..
            }
        ),
        "{seen:#?}"
    );
    assert_eq!(
        seen[1],
        ChannelEvent::Notice {
            kind: NoticeKind::AnswerNotUsed,
            text: "Your answer about lights was not used: no turn waits for it any more, so nothing ran and the question is closed. Ask again if you still want it.".into(),
        }
    );
    // The lines: the question closed, and the answer not used, with who gave it.
    let lines: Vec<AuditEvent> = setup
        .audit
        .events()
        .into_iter()
        .filter(|e| {
            matches!(e, AuditEvent::AnswerRefused { .. })
                || matches!(e, AuditEvent::Approval { approval_id, .. } if *approval_id == id)
        })
        .collect();
    let [approval, refused] = lines.as_slice() else {
        panic!("{lines:#?}");
    };
    assert!(
        matches!(
            approval,
            AuditEvent::Approval {
                ruling: tau_protocol::Ruling {
                    decision: Decision::Rejected,
                    decided_by: DecidedBy::Cancelled
                },
                ..
            }
        ),
        "{approval:?}"
    );
    assert_eq!(
        refused,
        &AuditEvent::AnswerRefused {
            channel: "web".into(),
            approval_id: Some(id.to_string()),
            user: Some("ada".into()),
            person: None,
            place: None,
            reason: "the answer was not used: no paused turn and no routine's run waits for this question any more, so nothing would run it; the question was closed".into(),
            count: None,
        }
    );
    // A later answer learns how it ended; nothing ever ran.
    let late = second
        .answer("web", None, &id, Reply::Approve)
        .await
        .unwrap();
    assert!(matches!(late, Answered::AlreadyDecided(r) if r.state == ApprovalState::Cancelled));
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(setup.lights.runs.load(Ordering::SeqCst), 0);
    second.shutdown().await;
}

#[tokio::test]
async fn a_yes_its_paused_turn_waits_for_runs_once_after_a_restart() {
    let setup = Setup::new();
    let first = setup.hub(lights_script(), HOUR);
    let (session, _events, id) = ask(&first).await;
    first.shutdown().await;
    drop(first);
    let second = setup.hub(lights_script(), HOUR);
    second.start().await.unwrap();
    let mut events = second.subscribe("web", &session).unwrap();
    let answered = second
        .answer("web", None, &id, Reply::Approve)
        .await
        .unwrap();
    assert!(matches!(answered, Answered::Decided(_)), "{answered:?}");
    until_turn_ends(&mut events, TurnStop::EndTurn).await;
    assert_eq!(setup.lights.runs.load(Ordering::SeqCst), 1);
    second.shutdown().await;
}
