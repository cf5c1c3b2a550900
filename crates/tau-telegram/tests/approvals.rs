//! Questions on Telegram: only an owner, in the conversation's own chat, decides; every
//! other press changes nothing and is recorded; a decided question's message says so and
//! loses its buttons, across restarts too.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod support;

use std::sync::Arc;

use pretty_assertions::assert_eq;
use serde_json::json;
use support::{
    Call, FakeBotApi, FakeHub, OWNER, STRANGER, TOKEN, buttons, message, press, toasts, until,
};
use tau_core::Language;
use tau_protocol::{ChannelEvent, DecidedBy};
use tau_state::ApprovalState;
use tau_telegram::{HubEvent, PressRefusal, RefusedPress, Store, TelegramChannel, TelegramConfig};
use tokio::sync::mpsc::Receiver;
use tokio::task::JoinHandle;

const CHAT: &str = "4242";

fn start(
    config: &TelegramConfig,
    hub: &Arc<FakeHub>,
    store: Store,
    events: Receiver<HubEvent>,
) -> JoinHandle<tau_telegram::PollError> {
    let channel = TelegramChannel::new(
        config,
        TOKEN,
        hub.clone(),
        store,
        Language::En,
        jiff::tz::TimeZone::UTC,
    )
    .unwrap();
    tokio::spawn(channel.run(events))
}

fn text(call: &Call) -> &str {
    call.body["text"].as_str().unwrap_or_default()
}

/// Asks a question in the owner's chat and returns its id and its message's id.
async fn asked(api: &FakeBotApi, hub: &FakeHub) -> (String, i64) {
    let before = api.calls("sendMessage").len();
    let id = hub.ask(CHAT, json!({"command": "touch /tmp/x"})).await;
    let sent = api.wait_calls("sendMessage", before + 1).await;
    let question = &sent[before];
    assert_eq!(
        buttons(question),
        vec![
            ("Approve".to_owned(), format!("v1:a:{id}")),
            ("Reject".to_owned(), format!("v1:r:{id}"))
        ]
    );
    assert_eq!(question.body["parse_mode"], json!("HTML"));
    (id, 101 + before as i64)
}

fn person(user: i64) -> DecidedBy {
    DecidedBy::Person {
        channel: "telegram".into(),
        user: Some(user.to_string()),
        person: None,
    }
}

async fn edit_of(api: &FakeBotApi, message_id: i64) -> Call {
    until("the edit", || {
        api.calls("editMessageText")
            .into_iter()
            .find(|c| c.body["message_id"] == json!(message_id))
    })
    .await
}

#[tokio::test]
async fn an_owner_approves_and_the_message_says_by_whom_with_no_buttons_left() {
    let api = FakeBotApi::start().await;
    let (hub, events) = FakeHub::new();
    let task = start(&api.config(), &hub, hub.store(), events);
    let (id, message_id) = asked(&api, &hub).await;
    api.push_updates(&[press(1, OWNER, OWNER, message_id, &format!("v1:a:{id}"))]);
    let edit = edit_of(&api, message_id).await;
    assert_eq!(hub.state(&id), ApprovalState::Approved);
    assert_eq!(hub.row(&id).decided_by, Some(person(OWNER)));
    assert!(
        text(&edit).contains("<b>✅ Approved by P at "),
        "{}",
        text(&edit)
    );
    assert!(text(&edit).contains("touch /tmp/x"));
    assert_eq!(edit.body["reply_markup"], json!({"inline_keyboard": []}));
    let answered = toasts(&api, 1).await;
    assert!(
        answered[0]
            .as_str()
            .unwrap()
            .starts_with("✅ Approved by P at ")
    );
    // A second press on the decided question learns its final state and changes nothing.
    api.push_updates(&[press(2, OWNER, OWNER, message_id, &format!("v1:r:{id}"))]);
    let answered = toasts(&api, 2).await;
    assert!(
        answered[1]
            .as_str()
            .unwrap()
            .starts_with("✅ Approved by P at ")
    );
    assert_eq!(hub.state(&id), ApprovalState::Approved);
    assert_eq!(
        api.calls("editMessageText").len(),
        1,
        "the message is edited once"
    );
    task.abort();
}

#[tokio::test]
async fn an_owner_rejects() {
    let api = FakeBotApi::start().await;
    let (hub, events) = FakeHub::new();
    let task = start(&api.config(), &hub, hub.store(), events);
    let (id, message_id) = asked(&api, &hub).await;
    api.push_updates(&[press(1, OWNER, OWNER, message_id, &format!("v1:r:{id}"))]);
    let edit = edit_of(&api, message_id).await;
    assert_eq!(hub.state(&id), ApprovalState::Rejected);
    assert!(
        text(&edit).contains("<b>❌ Rejected by P at "),
        "{}",
        text(&edit)
    );
    assert_eq!(edit.body["reply_markup"], json!({"inline_keyboard": []}));
    task.abort();
}

#[tokio::test]
async fn a_strangers_press_is_not_theirs_changes_nothing_and_is_recorded() {
    let api = FakeBotApi::start().await;
    let (hub, events) = FakeHub::new();
    let task = start(&api.config(), &hub, hub.store(), events);
    let (id, message_id) = asked(&api, &hub).await;
    api.push_updates(&[
        // In the owner's chat (a group member, a forged update): not an owner.
        press(1, OWNER, STRANGER, message_id, &format!("v1:a:{id}")),
        // In the stranger's own chat.
        press(2, STRANGER, STRANGER, message_id, &format!("v1:a:{id}")),
    ]);
    assert_eq!(
        toasts(&api, 2).await,
        vec![
            json!("This question is not yours to answer."),
            json!("This question is not yours to answer.")
        ]
    );
    assert_eq!(hub.state(&id), ApprovalState::Pending);
    assert!(hub.answers.lock().unwrap().is_empty());
    assert!(api.calls("editMessageText").is_empty());
    assert_eq!(
        hub.refused.lock().unwrap().clone(),
        vec![
            RefusedPress {
                approval_id: Some(id.clone()),
                user: Some(STRANGER),
                chat: Some(OWNER),
                reason: PressRefusal::NotAnOwner,
                count: None,
            },
            RefusedPress {
                approval_id: Some(id.clone()),
                user: Some(STRANGER),
                chat: Some(STRANGER),
                reason: PressRefusal::NotAnOwner,
                count: None,
            }
        ]
    );
    task.abort();
}

#[tokio::test]
async fn a_press_from_another_chat_or_session_or_with_forged_data_is_refused() {
    let api = FakeBotApi::start().await;
    let (hub, events) = FakeHub::new();
    let mut config = api.config();
    config.owners.push(77);
    config.allowed_chats = Some(vec![OWNER, 77]);
    let task = start(&config, &hub, hub.store(), events);
    let (id, message_id) = asked(&api, &hub).await;
    api.push_updates(&[
        // Another owner, in their own (allowed) chat: the question is not that chat's.
        press(1, 77, 77, message_id, &format!("v1:a:{id}")),
        // An owner in a chat that is not allowed.
        press(2, -1_009, OWNER, message_id, &format!("v1:a:{id}")),
        // A well-formed id no question has.
        press(
            3,
            OWNER,
            OWNER,
            message_id,
            "v1:a:ap_ffffffffffffffffffffffffffffffff",
        ),
        // Not tau's data at all.
        press(4, OWNER, OWNER, message_id, "approve"),
    ]);
    assert_eq!(
        toasts(&api, 4).await,
        vec![
            json!("This question is not yours to answer."),
            json!("This question is not yours to answer."),
            json!("This question no longer exists."),
            json!("This button is not valid."),
        ]
    );
    let reasons: Vec<_> = hub
        .refused
        .lock()
        .unwrap()
        .iter()
        .map(|p| p.reason)
        .collect();
    // The second forged press of the same sender in one window is counted, not
    // recorded on its own (the window's summary says how many).
    assert_eq!(
        reasons,
        vec![
            PressRefusal::OtherConversation,
            PressRefusal::ChatNotAllowed,
            PressRefusal::Forged,
        ]
    );
    assert_eq!(hub.state(&id), ApprovalState::Pending);
    assert!(hub.answers.lock().unwrap().is_empty());
    task.abort();
}

#[tokio::test]
async fn after_new_the_chat_talks_to_a_new_conversation_and_its_open_question_still_counts() {
    let api = FakeBotApi::start().await;
    let (hub, events) = FakeHub::new();
    let task = start(&api.config(), &hub, hub.store(), events);
    let (id, message_id) = asked(&api, &hub).await;
    api.push_updates(&[
        message(1, OWNER, OWNER, "/new"),
        message(2, OWNER, OWNER, "hello again"),
        press(3, OWNER, OWNER, message_id, &format!("v1:a:{id}")),
    ]);
    edit_of(&api, message_id).await;
    assert_eq!(hub.state(&id), ApprovalState::Approved);
    assert_eq!(
        hub.sent.lock().unwrap().clone(),
        vec![("4242.1".to_owned(), "hello again".to_owned())]
    );
    let replies: Vec<String> = api
        .calls("sendMessage")
        .iter()
        .map(|c| text(c).to_owned())
        .collect();
    assert!(
        replies.contains(&"New conversation.".to_owned()),
        "{replies:?}"
    );
    task.abort();
}

#[tokio::test]
async fn a_restart_between_question_and_answer_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let api = FakeBotApi::start().await;
    let (hub, events) = FakeHub::new();
    let task = start(
        &api.config(),
        &hub,
        Store::new(tau_state::StateDb::open(&path).unwrap().telegram_memory()),
        events,
    );
    let (first, first_message) = asked(&api, &hub).await;
    let (second, second_message) = asked(&api, &hub).await;
    task.abort();
    let _ = task.await;
    // While tau is down the second question expires.
    hub.approvals
        .approvals()
        .decide_approval(
            &tau_protocol::ApprovalId::parse(&second).unwrap(),
            ApprovalState::Expired,
            &DecidedBy::Timeout,
            jiff::Timestamp::now(),
        )
        .unwrap();
    let sends = api.calls("sendMessage").len();
    let (hub, events) = hub.restarted();
    let task = start(
        &api.config(),
        &hub,
        Store::new(tau_state::StateDb::open(&path).unwrap().telegram_memory()),
        events,
    );
    // The expired one loses its buttons at once; the open one is not asked again.
    let edit = edit_of(&api, second_message).await;
    assert!(
        text(&edit).contains("⌛ Expired unanswered at "),
        "{}",
        text(&edit)
    );
    assert_eq!(edit.body["reply_markup"], json!({"inline_keyboard": []}));
    api.push_updates(&[press(
        1,
        OWNER,
        OWNER,
        first_message,
        &format!("v1:a:{first}"),
    )]);
    let edit = edit_of(&api, first_message).await;
    assert!(text(&edit).contains("✅ Approved by P"), "{}", text(&edit));
    assert_eq!(hub.state(&first), ApprovalState::Approved);
    assert_eq!(
        api.calls("sendMessage").len(),
        sends,
        "no question was sent again"
    );
    task.abort();
}

#[tokio::test]
async fn a_press_after_the_deadline_is_told_it_expired_and_decides_nothing() {
    let api = FakeBotApi::start().await;
    let (hub, events) = FakeHub::new();
    let task = start(&api.config(), &hub, hub.store(), events);
    let (id, message_id) = asked(&api, &hub).await;
    hub.tamper(&id, "deadline = '1970-01-01T00:00:00Z'");
    api.push_updates(&[press(1, OWNER, OWNER, message_id, &format!("v1:a:{id}"))]);
    assert_eq!(
        toasts(&api, 1).await,
        vec![json!(
            "⌛ Expired unanswered at 1970-01-01 00:00:00 UTC: not run"
        )]
    );
    assert!(hub.answers.lock().unwrap().is_empty());
    // The hub expires it: the message says so and loses its buttons.
    hub.decide(&id, ApprovalState::Expired, &DecidedBy::Timeout)
        .await
        .unwrap();
    let edit = edit_of(&api, message_id).await;
    assert!(
        text(&edit).contains("⌛ Expired unanswered"),
        "{}",
        text(&edit)
    );
    assert_eq!(edit.body["reply_markup"], json!({"inline_keyboard": []}));
    task.abort();
}

#[tokio::test]
async fn show_all_sends_every_argument_whole() {
    let api = FakeBotApi::start().await;
    let (hub, events) = FakeHub::new();
    let task = start(&api.config(), &hub, hub.store(), events);
    let long = format!("echo {}; rm -rf ~/notes", "a".repeat(5000));
    let id = hub.ask(CHAT, json!({"command": long})).await;
    let sent = api.wait_calls("sendMessage", 1).await;
    let labels: Vec<String> = buttons(&sent[0]).into_iter().map(|(l, _)| l).collect();
    assert_eq!(labels, vec!["Approve", "Reject", "Show all"]);
    assert!(
        !text(&sent[0]).contains("rm -rf"),
        "the end is not in the question"
    );
    api.push_updates(&[press(1, OWNER, OWNER, 101, &format!("v1:s:{id}"))]);
    let sent = api.wait_calls("sendMessage", 3).await;
    let all: String = sent[1..].iter().map(text).collect();
    assert!(all.contains("rm -rf ~/notes"), "{all}");
    assert_eq!(hub.state(&id), ApprovalState::Pending);
    task.abort();
}

#[tokio::test]
async fn an_answer_streams_into_one_message_by_edits() {
    let api = FakeBotApi::start().await;
    let (hub, events) = FakeHub::new();
    let mut config = api.config();
    config.edit_interval_ms = 300;
    let task = start(&config, &hub, hub.store(), events);
    for piece in ["The ", "time ", "is ", "<14:03>", "."] {
        hub.emit(CHAT, ChannelEvent::TextDelta { text: piece.into() })
            .await;
    }
    hub.emit(
        CHAT,
        ChannelEvent::TurnEnded {
            stop_reason: tau_protocol::TurnStop::EndTurn,
            usage: tau_protocol::TurnUsage::default(),
        },
    )
    .await;
    let sent = api.wait_calls("sendMessage", 1).await;
    let last = until("the whole answer", || {
        let edits = api.calls("editMessageText");
        let last = edits
            .last()
            .map_or_else(|| text(&sent[0]).to_owned(), |c| text(c).to_owned());
        (last == "The time is &lt;14:03&gt;.").then_some(last)
    })
    .await;
    assert_eq!(last, "The time is &lt;14:03&gt;.");
    assert_eq!(api.calls("sendMessage").len(), 1, "one message, edited");
    assert!(
        api.calls("editMessageText").len() <= 1,
        "edits are throttled"
    );
    task.abort();
}

#[tokio::test]
async fn a_chat_waits_out_a_429_and_sends_once() {
    let api = FakeBotApi::start().await;
    let (hub, events) = FakeHub::new();
    api.push_for(
        "sendMessage",
        429,
        json!({"ok": false, "error_code": 429, "description": "Too Many Requests: retry after 1",
               "parameters": {"retry_after": 1}})
        .to_string(),
    );
    let task = start(&api.config(), &hub, hub.store(), events);
    let id = hub.ask(CHAT, json!({"command": "ls"})).await;
    let sent = api.wait_calls("sendMessage", 2).await;
    assert!(
        sent[1].at - sent[0].at >= std::time::Duration::from_secs(1),
        "the retry came {:?} after the 429",
        sent[1].at - sent[0].at
    );
    assert_eq!(sent[0].body, sent[1].body, "the same question, asked again");
    // The message that went through is the question's: its buttons work.
    api.push_updates(&[press(1, OWNER, OWNER, 101, &format!("v1:a:{id}"))]);
    edit_of(&api, 101).await;
    assert_eq!(api.calls("sendMessage").len(), 2);
    task.abort();
}
