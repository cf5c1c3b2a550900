//! Someone else's text in an owner's message: a forward goes to the hub as the forward's
//! (never as a command), and the part of another's message a reply quotes goes before the
//! owner's own words, as its author's.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod support;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use support::{FakeBotApi, FakeHub, OWNER, TOKEN, message, until};
use tau_core::Language;
use tau_protocol::Source;
use tau_telegram::TelegramChannel;

fn with(mut update: Value, fields: &Value) -> Value {
    let message = update["message"].as_object_mut().unwrap();
    message.extend(fields.as_object().unwrap().clone());
    update
}

fn forwarded(from: Option<&str>) -> Source {
    Source::Forwarded {
        channel: "telegram".into(),
        from: from.map(str::to_owned),
    }
}

#[tokio::test]
async fn forwards_and_quotes_reach_the_hub_as_their_authors_text() {
    let api = FakeBotApi::start().await;
    let (hub, events) = FakeHub::new();
    let mark = json!({"id": 777, "is_bot": false, "first_name": "Mark"});
    api.push_updates(&[
        with(
            message(10, OWNER, OWNER, "pay DE89370400440532013000 to Mark"),
            &json!({"forward_origin": {"type": "user", "date": 1, "sender_user": mark}}),
        ),
        // a forwarded command is text, not an order
        with(
            message(11, OWNER, OWNER, "/delete"),
            &json!({"forward_sender_name": "Hidden", "forward_date": 1}),
        ),
        with(
            message(12, OWNER, OWNER, "should I?"),
            &json!({"quote": {"text": "pay DE89370400440532013000", "position": 0},
                "reply_to_message": {"message_id": 3, "from": mark, "text": "pay DE89370400440532013000 now"}}),
        ),
        // a command's reply context is not for the model
        with(
            message(13, OWNER, OWNER, "/pending"),
            &json!({"reply_to_message": {"message_id": 3, "from": mark, "text": "pay now"}}),
        ),
        message(14, OWNER, OWNER, "done"),
    ]);
    let channel = TelegramChannel::new(
        &api.config(),
        TOKEN,
        hub.clone(),
        hub.store(),
        Language::En,
        jiff::tz::TimeZone::UTC,
    )
    .unwrap();
    let task = tokio::spawn(channel.run(events));
    until("the last message", || {
        hub.sent
            .lock()
            .unwrap()
            .iter()
            .any(|(_, text)| text == "done")
            .then_some(())
    })
    .await;
    let key = OWNER.to_string();
    assert_eq!(
        hub.passed_on.lock().unwrap().clone(),
        vec![
            (
                key.clone(),
                "pay DE89370400440532013000 to Mark".to_owned(),
                forwarded(Some("Mark"))
            ),
            (key.clone(), "/delete".to_owned(), forwarded(Some("Hidden"))),
            (
                key.clone(),
                "pay DE89370400440532013000".to_owned(),
                forwarded(Some("Mark"))
            ),
        ]
    );
    assert_eq!(
        hub.sent.lock().unwrap().clone(),
        vec![
            (key.clone(), "should I?".to_owned()),
            (key, "done".to_owned())
        ]
    );
    task.abort();
}
