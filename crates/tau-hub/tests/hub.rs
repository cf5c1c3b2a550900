//! The hub in one process: conversations, stored questions answered, expired and
//! superseded, turns one at a time per session and side by side across sessions, what a
//! channel hears. The model is scripted per session and continues from the session's
//! stored history, as the `replay:` model does.
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
use tau_agent::{Message, Role};
use tau_hub::{HubError, Reply, SessionEvent};
use tau_protocol::{ApprovalId, ChannelEvent, DecidedBy, SessionId, TurnStop};
use tau_state::{Answered, ApprovalState};

use support::*;

#[tokio::test]
async fn an_approved_question_runs_once_and_the_turn_goes_on() {
    let setup = Setup::new();
    let hub = setup.hub(lights_script(), HOUR);
    hub.start().await.unwrap();
    let mut changes = hub.approval_changes();
    let (session, mut events, id) = ask(&hub).await;
    let asked = changes.recv().await.unwrap();
    assert_eq!(
        (asked.id.as_str(), asked.state),
        (id.as_str(), ApprovalState::Pending)
    );
    assert_eq!(
        hub.approvals("web", Some(ApprovalState::Pending))
            .unwrap()
            .len(),
        1
    );
    assert_eq!(hub.approvals("telegram", None).unwrap(), vec![]);
    assert_eq!(setup.lights.runs.load(Ordering::SeqCst), 0);

    let answered = hub
        .answer("web", Some("owner".into()), &id, Reply::Approve)
        .await
        .unwrap();
    let Answered::Decided(row) = answered else {
        panic!("the first answer decides: {answered:?}");
    };
    assert_eq!(row.state, ApprovalState::Approved);
    let seen = until_turn_ends(&mut events, TurnStop::EndTurn).await;
    assert_eq!(
        types(&seen),
        [
            "approval_decided",
            "tool_call_finished",
            "tool_output",
            "text_delta",
            "turn_ended"
        ]
    );
    assert_eq!(seen[1]["status"], "success");
    assert_eq!(
        seen[1]["decided_by"],
        json!({"kind": "person", "channel": "web", "user": "owner"})
    );
    assert_eq!(
        *setup.lights.inputs.lock().unwrap(),
        vec![json!({"room": "kitchen"})]
    );
    assert_eq!(changes.recv().await.unwrap().state, ApprovalState::Approved);

    // Again, and the other answer: nothing changes, nothing runs again.
    for reply in [Reply::Approve, Reply::Reject] {
        let again = hub.answer("web", None, &id, reply).await.unwrap();
        let Answered::AlreadyDecided(row) = again else {
            panic!("{again:?}");
        };
        assert_eq!(row.state, ApprovalState::Approved);
        assert!(row.consumed_at.is_some());
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(setup.lights.runs.load(Ordering::SeqCst), 1);
    let messages = hub.messages("web", &session).unwrap();
    assert_eq!(messages.last().unwrap().text(), "The kitchen light is on.");
    hub.shutdown().await;
}

#[tokio::test]
async fn only_the_channel_that_asked_can_answer() {
    let setup = Setup::new();
    let hub = setup.hub(lights_script(), HOUR);
    hub.start().await.unwrap();
    let (session, _events, id) = ask(&hub).await;
    let unknown = ApprovalId::parse("ap_0000").unwrap();
    for (channel, id) in [("telegram", &id), ("web", &unknown)] {
        let error = hub
            .answer(channel, None, id, Reply::Approve)
            .await
            .unwrap_err();
        assert!(matches!(error, HubError::UnknownApproval(_)), "{error}");
    }
    assert!(matches!(
        hub.send("telegram", &session, "hi".into())
            .await
            .unwrap_err(),
        HubError::UnknownSession(_)
    ));
    assert!(hub.subscribe("telegram", &session).is_err());
    assert!(hub.messages("telegram", &session).is_err());
    let row = hub.state().approvals().approval(&id).unwrap().unwrap();
    assert_eq!(row.state, ApprovalState::Pending);
    hub.shutdown().await;
}

#[tokio::test]
async fn a_rejected_question_refuses_and_the_model_answers() {
    let setup = Setup::new();
    let hub = setup.hub(lights_script(), HOUR);
    hub.start().await.unwrap();
    let (_session, mut events, id) = ask(&hub).await;
    hub.answer("web", None, &id, Reply::Reject).await.unwrap();
    let seen = until_turn_ends(&mut events, TurnStop::EndTurn).await;
    assert_eq!(seen[1]["status"], "refused");
    assert_eq!(seen[1]["approval"], "rejected");
    assert_eq!(setup.lights.runs.load(Ordering::SeqCst), 0);
    hub.shutdown().await;
}

#[tokio::test]
async fn a_newer_message_supersedes_the_question_and_is_answered() {
    let setup = Setup::new();
    let hub = setup.hub(
        vec![
            call("t1", "lights", json!({"room": "kitchen"})),
            say("It is ten o'clock."),
        ],
        HOUR,
    );
    hub.start().await.unwrap();
    let (session, mut events, id) = ask(&hub).await;
    hub.send("web", &session, "what time is it?".into())
        .await
        .unwrap();
    let closed = until_turn_ends(&mut events, TurnStop::Superseded).await;
    assert_eq!(
        types(&closed),
        [
            "prompt",
            "approval_decided",
            "tool_call_finished",
            "tool_output",
            "turn_ended"
        ]
    );
    assert_eq!(closed[1]["decided_by"], json!({"kind": "superseded"}));
    let answered = until_turn_ends(&mut events, TurnStop::EndTurn).await;
    assert_eq!(types(&answered), ["text_delta", "turn_ended"]);
    let row = hub.state().approvals().approval(&id).unwrap().unwrap();
    assert_eq!(
        (row.state, row.decided_by),
        (ApprovalState::Superseded, Some(DecidedBy::Superseded))
    );
    // Too late now.
    let late = hub.answer("web", None, &id, Reply::Approve).await.unwrap();
    assert!(matches!(late, Answered::AlreadyDecided(r) if r.state == ApprovalState::Superseded));
    assert_eq!(setup.lights.runs.load(Ordering::SeqCst), 0);
    hub.shutdown().await;
}

#[tokio::test]
async fn an_unanswered_question_expires_and_the_turn_goes_on_with_timeout() {
    let setup = Setup::new();
    let hub = setup.hub(lights_script(), Duration::from_secs(1));
    hub.start().await.unwrap();
    let (_session, mut events, id) = ask(&hub).await;
    let seen = until_turn_ends(&mut events, TurnStop::EndTurn).await;
    assert_eq!(
        types(&seen)[..2],
        ["approval_decided", "tool_call_finished"]
    );
    assert_eq!(seen[0]["decision"], "timeout");
    assert_eq!(seen[0]["decided_by"], json!({"kind": "timeout"}));
    assert_eq!(seen[1]["approval"], "timeout");
    let row = hub.state().approvals().approval(&id).unwrap().unwrap();
    assert_eq!(row.state, ApprovalState::Expired);
    let late = hub.answer("web", None, &id, Reply::Approve).await.unwrap();
    assert!(matches!(late, Answered::AlreadyDecided(r) if r.state == ApprovalState::Expired));
    assert_eq!(setup.lights.runs.load(Ordering::SeqCst), 0);
    hub.shutdown().await;
}

#[tokio::test]
async fn turns_of_one_session_queue_and_turns_of_two_sessions_run_side_by_side() {
    let setup = Setup::new();
    let hub = setup.hub(vec![say("quick")], HOUR);
    hub.start().await.unwrap();
    let slow = hub.new_conversation("web").unwrap();
    let quick = hub.new_conversation("web").unwrap();
    setup.script(
        &slow,
        vec![call("w1", "wait", json!({})), say("waited"), say("second")],
    );
    let mut slow_events = hub.subscribe("web", &slow).unwrap();
    let mut quick_events = hub.subscribe("web", &quick).unwrap();
    hub.send("web", &slow, "wait for it".into()).await.unwrap();
    hub.send("web", &slow, "and then?".into()).await.unwrap();
    assert!(hub.is_busy(&slow));
    // The other session's turn runs while the first one waits inside its tool...
    hub.send("web", &quick, "hello".into()).await.unwrap();
    let quick_seen = until_turn_ends(&mut quick_events, TurnStop::EndTurn).await;
    assert_eq!(quick_seen[0], json!({"type": "prompt", "text": "hello"}));
    // ...which is released only now.
    setup.release.add_permits(2);
    let seen = until_turn_ends(&mut slow_events, TurnStop::EndTurn).await;
    assert_eq!(seen[0], json!({"type": "prompt", "text": "wait for it"}));
    let second = until_turn_ends(&mut slow_events, TurnStop::EndTurn).await;
    assert_eq!(second[0], json!({"type": "prompt", "text": "and then?"}));
    let texts: Vec<String> = hub
        .messages("web", &slow)
        .unwrap()
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .map(Message::text)
        .collect();
    assert_eq!(texts, ["", "waited", "second"]);
    hub.shutdown().await;
}

#[tokio::test]
async fn shutdown_cancels_a_running_turn_and_keeps_pending_questions() {
    let setup = Setup::new();
    let hub = setup.hub(lights_script(), HOUR);
    hub.start().await.unwrap();
    let (_session, _events, id) = ask(&hub).await;
    let other = hub.new_conversation("web").unwrap();
    setup.script(&other, vec![call("w1", "wait", json!({}))]);
    let mut other_events = hub.subscribe("web", &other).unwrap();
    hub.send("web", &other, "wait".into()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    tokio::time::timeout(Duration::from_secs(5), hub.shutdown())
        .await
        .unwrap();
    let seen = until_turn_ends(&mut other_events, TurnStop::Cancelled).await;
    assert_eq!(types(&seen).last(), Some(&"turn_ended"));
    let row = hub.state().approvals().approval(&id).unwrap().unwrap();
    assert_eq!(row.state, ApprovalState::Pending);
    assert!(matches!(
        hub.send("web", &other, "more".into()).await.unwrap_err(),
        HubError::ShuttingDown
    ));
}

#[test]
fn conversations_are_listed_per_channel() {
    let setup = Setup::new();
    let hub = setup.hub(Vec::new(), HOUR);
    let a = hub.new_conversation("web").unwrap();
    let chat = hub.open_conversation("telegram", "4242").unwrap();
    assert_eq!(hub.open_conversation("telegram", "4242").unwrap(), chat);
    assert!(a.as_str().starts_with("web-"), "{a}");
    let listed: Vec<SessionId> = hub
        .conversations("web")
        .unwrap()
        .into_iter()
        .map(|c| c.conversation.session)
        .collect();
    assert_eq!(listed, vec![a]);
}

#[tokio::test]
async fn a_channel_hears_all_its_conversations_and_can_cancel_a_turn() {
    let setup = Setup::new();
    let hub = setup.hub(vec![say("hi")], HOUR);
    hub.start().await.unwrap();
    let mut telegram = hub.channel_events("telegram");
    let chat = hub.open_conversation("telegram", "42").unwrap();
    let web = hub.new_conversation("web").unwrap();
    setup.script(&chat, vec![call("w1", "wait", json!({}))]);
    hub.send("web", &web, "to the web".into()).await.unwrap();
    hub.send("telegram", &chat, "to the chat".into())
        .await
        .unwrap();
    let first = telegram.recv().await.unwrap();
    assert_eq!(
        (first.conversation.key.as_str(), first.event),
        (
            "42",
            SessionEvent::Prompt {
                text: "to the chat".into()
            }
        ),
        "only this channel's conversations"
    );
    // The turn waits inside its tool; cancelling ends it.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(matches!(
        hub.cancel("web", &chat),
        Err(HubError::UnknownSession(_))
    ));
    assert!(hub.cancel("telegram", &chat).unwrap());
    loop {
        let next = tokio::time::timeout(Duration::from_secs(5), telegram.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(next.conversation.session, chat);
        if let SessionEvent::Turn(ChannelEvent::TurnEnded { stop_reason, .. }) = next.event {
            assert_eq!(stop_reason, TurnStop::Cancelled);
            break;
        }
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!hub.cancel("telegram", &chat).unwrap(), "nothing runs now");
    hub.shutdown().await;
}

#[tokio::test]
async fn a_question_is_found_with_its_conversation_by_its_channel_only() {
    let setup = Setup::new();
    let hub = setup.hub(lights_script(), HOUR);
    hub.start().await.unwrap();
    let (session, _events, id) = ask(&hub).await;
    let (row, conversation) = hub.approval("web", &id).unwrap().unwrap();
    assert_eq!(
        (row.id.as_str(), conversation.session),
        (id.as_str(), session)
    );
    assert_eq!(hub.approval("telegram", &id).unwrap(), None);
    assert_eq!(
        hub.approval("web", &ApprovalId::parse("ap_0").unwrap())
            .unwrap(),
        None
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn a_flood_of_messages_is_refused_past_a_few_and_others_go_on() {
    let setup = Setup::new();
    let hub = setup.hub(vec![say("hi")], HOUR);
    hub.start().await.unwrap();
    let flooded = hub.new_conversation("web").unwrap();
    setup.script(&flooded, vec![call("w1", "wait", json!({}))]);
    let mut refused = 0;
    for n in 0..20 {
        match hub.send("web", &flooded, format!("message {n}")).await {
            Ok(()) => {}
            Err(HubError::Busy) => refused += 1,
            Err(other) => panic!("{other}"),
        }
    }
    assert_eq!(refused, 11, "one runs, eight wait, the rest are refused");
    let other = hub.new_conversation("web").unwrap();
    let mut events = hub.subscribe("web", &other).unwrap();
    hub.send("web", &other, "hello".into()).await.unwrap();
    until_turn_ends(&mut events, TurnStop::EndTurn).await;
    hub.shutdown().await;
}
