//! The ports: a channel's port acts as that channel only, whatever it is asked; the
//! routines' port runs a turn of a routine's conversation and waits until it is over.
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
use tau_core::AuditEvent;
use tau_hub::{HubError, RefusedAnswer, Reply, RoutinePort, RoutineTurn};
use tau_protocol::TurnStop;
use tau_state::{Answered, ApprovalState, routine_key, routine_of_key};

use support::*;

#[tokio::test]
async fn a_channel_s_port_reaches_its_own_conversations_and_questions_only() {
    let setup = Setup::new();
    let hub = setup.hub(lights_script(), HOUR);
    hub.start().await.unwrap();
    let (session, _events, id) = ask(&hub).await;
    let web = hub.port("web");
    let telegram = hub.port("telegram");
    assert_eq!(telegram.channel(), "telegram");

    // Another channel's question is seen (to say where it waits) and never answered.
    assert_eq!(telegram.question(&id).unwrap().unwrap().channel, "web");
    assert!(telegram.approvals(None).unwrap().is_empty());
    assert_eq!(
        telegram
            .approvals_of_every_channel(Some(ApprovalState::Pending))
            .unwrap()
            .len(),
        1
    );
    let refused = telegram
        .answer(Some("42".into()), &id, Reply::Approve)
        .await
        .unwrap_err();
    assert!(matches!(refused, HubError::UnknownApproval(_)), "{refused}");
    // Nor is its conversation talked to, read, renamed, cancelled or deleted.
    assert!(matches!(
        telegram.send(&session, "hi".into()).await.unwrap_err(),
        HubError::UnknownSession(_)
    ));
    assert!(telegram.subscribe(&session).is_err());
    assert!(telegram.messages(&session).is_err());
    assert!(telegram.title(&session).is_err());
    assert!(telegram.rename_conversation(&session, Some("x")).is_err());
    assert!(telegram.cancel(&session).is_err());
    assert!(telegram.delete_conversation(&session).await.is_err());
    assert!(telegram.conversations().unwrap().is_empty());
    assert_eq!(setup.lights.runs.load(Ordering::SeqCst), 0);

    // Its own channel answers it, as itself.
    let answered = web.answer(None, &id, Reply::Approve).await.unwrap();
    assert!(matches!(answered, Answered::Decided(_)), "{answered:?}");
    let row = web.question(&id).unwrap().unwrap();
    assert_eq!(
        serde_json::to_value(row.decided_by).unwrap(),
        serde_json::json!({"kind": "person", "channel": "web"})
    );
    assert_eq!(web.conversations().unwrap().len(), 1);
    hub.shutdown().await;
}

#[tokio::test]
async fn an_answer_a_channel_did_not_count_is_audited_as_that_channel_s() {
    let setup = Setup::new();
    let hub = setup.hub(lights_script(), HOUR);
    hub.port("telegram").refused_answer(RefusedAnswer {
        approval_id: Some("ap_1".into()),
        user: Some("666".into()),
        person: None,
        place: Some("4242".into()),
        reason: "not an owner".into(),
        count: None,
    });
    let lines: Vec<AuditEvent> = setup
        .audit
        .events()
        .into_iter()
        .filter(|e| matches!(e, AuditEvent::AnswerRefused { .. }))
        .collect();
    assert_eq!(
        lines,
        vec![AuditEvent::AnswerRefused {
            channel: "telegram".into(),
            approval_id: Some("ap_1".into()),
            user: Some("666".into()),
            person: None,
            place: Some("4242".into()),
            reason: "not an owner".into(),
            count: None,
        }]
    );
}

#[tokio::test]
async fn a_routine_s_turn_runs_in_its_conversation_and_returns_once_its_question_is_answered() {
    let setup = Setup::new();
    let hub = setup.hub(lights_script(), HOUR);
    hub.start().await.unwrap();
    let session = RoutinePort::open_conversation(&hub, "web", "doorbell", None).unwrap();
    let conversation = hub.conversation_of(&session).unwrap().unwrap();
    assert_eq!(conversation.key, routine_key("doorbell", None));
    assert_eq!(routine_of_key(&conversation.key), Some("doorbell"));
    assert_eq!(routine_of_key("web-1"), None);

    let answering = {
        let hub = hub.clone();
        tokio::spawn(async move {
            let web = hub.port("web");
            loop {
                let waiting = web.approvals(Some(ApprovalState::Pending)).unwrap();
                if let Some(row) = waiting.first() {
                    return web.answer(None, &row.id, Reply::Approve).await.unwrap();
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
    };
    let turn = hub
        .run_turn(
            "web",
            &session,
            "someone rang".into(),
            Duration::from_secs(20),
        )
        .await
        .unwrap();
    assert_eq!(
        turn,
        RoutineTurn {
            stop_reason: TurnStop::EndTurn,
            refused: Vec::new()
        }
    );
    assert!(matches!(answering.await.unwrap(), Answered::Decided(_)));
    assert_eq!(setup.lights.runs.load(Ordering::SeqCst), 1);
    hub.shutdown().await;
}

#[tokio::test]
async fn a_routine_s_turn_nobody_answers_is_given_up_when_its_wait_is_over() {
    let setup = Setup::new();
    let hub = setup.hub(lights_script(), HOUR);
    hub.start().await.unwrap();
    let session = RoutinePort::open_conversation(&hub, "web", "doorbell", None).unwrap();
    let error = hub
        .run_turn(
            "web",
            &session,
            "someone rang".into(),
            Duration::from_millis(300),
        )
        .await
        .unwrap_err();
    assert!(matches!(error, HubError::TimedOut { .. }), "{error}");
    assert_eq!(setup.lights.runs.load(Ordering::SeqCst), 0);
    // Another channel cannot run a turn in it.
    let error = hub
        .run_turn("telegram", &session, "hi".into(), Duration::from_secs(1))
        .await
        .unwrap_err();
    assert!(matches!(error, HubError::UnknownSession(_)), "{error}");
    hub.shutdown().await;
}
