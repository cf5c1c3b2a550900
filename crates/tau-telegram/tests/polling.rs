//! Long polling against a scripted Bot API: the offset, 429, 409, lost connections and
//! updates no one should have sent.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod support;

use std::sync::Arc;
use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::json;
use support::{FakeBotApi, FakeHub, OWNER, STRANGER, TOKEN, message, press, until};
use tau_core::Language;
use tau_telegram::{PollError, Store, TelegramChannel};

fn start(
    api: &FakeBotApi,
    hub: &Arc<FakeHub>,
    store: Store,
    events: tokio::sync::mpsc::Receiver<tau_telegram::HubEvent>,
) -> tokio::task::JoinHandle<PollError> {
    let channel = TelegramChannel::new(
        &api.config(),
        TOKEN,
        hub.clone(),
        store,
        Language::En,
        jiff::tz::TimeZone::UTC,
    )
    .unwrap();
    tokio::spawn(channel.run(events))
}

fn sent(hub: &FakeHub) -> Vec<(String, String)> {
    hub.sent.lock().unwrap().clone()
}

#[tokio::test]
async fn too_many_requests_waits_as_long_as_telegram_asks() {
    let api = FakeBotApi::start().await;
    let (hub, events) = FakeHub::new();
    api.push_raw(
        429,
        json!({"ok": false, "error_code": 429, "description": "Too Many Requests: retry after 1",
               "parameters": {"retry_after": 1}})
        .to_string(),
    );
    api.push_updates(&[message(10, OWNER, OWNER, "hello")]);
    let task = start(&api, &hub, hub.store(), events);
    until("the message", || (!sent(&hub).is_empty()).then_some(())).await;
    let polls = api.calls("getUpdates");
    assert!(
        polls[1].at - polls[0].at >= Duration::from_secs(1),
        "the second poll came {:?} after the 429",
        polls[1].at - polls[0].at
    );
    assert_eq!(sent(&hub), vec![(OWNER.to_string(), "hello".to_owned())]);
    task.abort();
}

#[tokio::test]
async fn another_poller_with_the_same_token_ends_polling_with_one_clear_error() {
    let api = FakeBotApi::start().await;
    let (hub, events) = FakeHub::new();
    api.push_raw(
        409,
        json!({"ok": false, "error_code": 409, "description":
            "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running"})
        .to_string(),
    );
    let error = start(&api, &hub, hub.store(), events).await.unwrap();
    assert!(matches!(error, PollError::Conflict(_)), "{error:?}");
    assert_eq!(
        error.to_string(),
        "another program is reading this bot's updates (409: Conflict: terminated by other getUpdates \
         request; make sure that only one bot instance is running); stop it or remove the bot's webhook, \
         then start tau again"
    );
    assert!(!error.to_string().contains(TOKEN));
    assert_eq!(api.calls("getUpdates").len(), 1);
}

#[tokio::test]
async fn a_refused_token_ends_polling_without_showing_the_token() {
    let api = FakeBotApi::start().await;
    let (hub, events) = FakeHub::new();
    api.push_raw(
        401,
        json!({"ok": false, "error_code": 401, "description": "Unauthorized"}).to_string(),
    );
    let error = start(&api, &hub, hub.store(), events).await.unwrap();
    assert_eq!(
        error.to_string(),
        "Telegram does not accept the bot token (401: Unauthorized)"
    );
}

#[tokio::test]
async fn a_lost_connection_or_a_page_that_is_not_json_is_retried() {
    let api = FakeBotApi::start().await;
    let (hub, events) = FakeHub::new();
    api.push_raw(502, "<html><body>Bad Gateway</body></html>".into());
    api.push_raw(
        200,
        "{\"ok\": true, \"result\": {\"not\": \"a list\"}}".into(),
    );
    api.push_updates(&[message(3, OWNER, OWNER, "still there?")]);
    let task = start(&api, &hub, hub.store(), events);
    until("the message", || (!sent(&hub).is_empty()).then_some(())).await;
    assert_eq!(
        sent(&hub),
        vec![(OWNER.to_string(), "still there?".to_owned())]
    );
    task.abort();
}

#[tokio::test]
async fn odd_updates_are_ignored_one_by_one_and_polling_goes_on() {
    let api = FakeBotApi::start().await;
    let (hub, events) = FakeHub::new();
    api.push_updates(&[
        json!("not an update"),
        json!({}),
        json!({"update_id": "11"}),
        json!({"update_id": 11, "edited_message": {"chat": {"id": OWNER}, "from": {"id": OWNER}, "text": "edited"}}),
        json!({"update_id": 12, "message": {"chat": {"id": "4242"}, "from": {"id": OWNER}, "text": "id as text"}}),
        json!({"update_id": 13, "message": {"chat": {"id": OWNER}, "from": {"id": OWNER}, "text": 5}}),
        json!({"update_id": 14, "message": {"chat": {"id": OWNER}, "text": "no sender"}}),
        json!({"update_id": 15, "callback_query": {"from": {"id": OWNER}, "data": "v1:a:ap_1"}}),
        press(16, OWNER, OWNER, 1, "v1:a:ap_not hex"),
        press(17, OWNER, OWNER, 1, &"x".repeat(5000)),
        message(18, OWNER, OWNER, &"x".repeat(20_000)),
        json!({"update_id": 19, "message": {"chat": {"id": OWNER}, "from": {"id": OWNER}, "photo": []}}),
        message(20, OWNER, OWNER, "hello"),
    ]);
    let task = start(&api, &hub, hub.store(), events);
    until("the message", || (!sent(&hub).is_empty()).then_some(())).await;
    api.push_updates(&[message(21, OWNER, OWNER, "again")]);
    until("the second message", || {
        (sent(&hub).len() == 2).then_some(())
    })
    .await;
    assert_eq!(
        sent(&hub),
        vec![
            (OWNER.to_string(), "hello".to_owned()),
            (OWNER.to_string(), "again".to_owned())
        ]
    );
    // The poll after the last update asks past it; under load it comes a moment after the
    // update was handled.
    let offsets = until("the poll past the last update", || {
        let offsets: Vec<_> = api
            .calls("getUpdates")
            .iter()
            .map(|c| c.body["offset"].clone())
            .collect();
        offsets.contains(&json!(22)).then_some(offsets)
    })
    .await;
    assert_eq!(offsets.first(), Some(&serde_json::Value::Null));
    assert!(offsets.contains(&json!(21)), "{offsets:?}");
    // The two forged presses were told so; nothing was decided.
    let answers = api.wait_calls("answerCallbackQuery", 2).await;
    let texts: Vec<_> = answers.iter().map(|c| c.body["text"].clone()).collect();
    assert_eq!(
        texts,
        vec![
            json!("This button is not valid."),
            json!("This button is not valid.")
        ]
    );
    assert!(hub.answers.lock().unwrap().is_empty());
    // The oversized message was refused with a reply, not passed on.
    let replies = api.wait_calls("sendMessage", 1).await;
    assert_eq!(
        replies[0].body["text"],
        json!("This message is too long for tau; nothing was sent to the model.")
    );
    task.abort();
}

#[tokio::test]
async fn strangers_and_other_chats_never_reach_the_model() {
    let api = FakeBotApi::start().await;
    let (hub, events) = FakeHub::new();
    api.push_updates(&[
        message(1, STRANGER, STRANGER, "hi, I am the owner now"),
        message(2, STRANGER, STRANGER, "/new"),
        message(
            3,
            OWNER,
            STRANGER,
            "an owner's id as the chat, a stranger writing",
        ),
        message(
            4,
            -100_555,
            OWNER,
            "the owner in a group that is not allowed",
        ),
        message(5, -100_555, STRANGER, "a stranger in that group"),
        message(6, OWNER, OWNER, "/start"),
    ]);
    let task = start(&api, &hub, hub.store(), events);
    let greeting = api.wait_calls("sendMessage", 1).await;
    assert_eq!(greeting[0].body["chat_id"], json!(OWNER));
    assert!(
        greeting[0].body["text"]
            .as_str()
            .unwrap()
            .starts_with("Hi, I am tau.")
    );
    assert_eq!(sent(&hub), vec![]);
    // Nothing went to the strangers' chats either.
    assert!(
        api.calls("sendMessage")
            .iter()
            .all(|c| c.body["chat_id"] == json!(OWNER))
    );
    task.abort();
}

#[tokio::test]
async fn the_offset_survives_a_restart_so_nothing_is_handled_twice() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let api = FakeBotApi::start().await;
    let (hub, events) = FakeHub::new();
    api.push_updates(&[
        message(30, OWNER, OWNER, "one"),
        message(31, OWNER, OWNER, "two"),
    ]);
    let task = start(
        &api,
        &hub,
        Store::new(tau_state::StateDb::open(&path).unwrap().telegram_memory()),
        events,
    );
    until("both messages", || (sent(&hub).len() == 2).then_some(())).await;
    task.abort();
    let _ = task.await;
    let before = api.calls("getUpdates").len();
    let (hub, events) = FakeHub::new();
    let task = start(
        &api,
        &hub,
        Store::new(tau_state::StateDb::open(&path).unwrap().telegram_memory()),
        events,
    );
    let polls = api.wait_calls("getUpdates", before + 1).await;
    assert_eq!(polls[before].body["offset"], json!(32));
    task.abort();
    assert!(api.bad_paths().is_empty());
}
