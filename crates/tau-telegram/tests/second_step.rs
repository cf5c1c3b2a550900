//! A lock-class device's question on Telegram: no Approve button, the number to press
//! among others; the plain Approve (an old or forged button) and a wrong number change
//! nothing and leave the question open; only its number approves it.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod support;

use pretty_assertions::assert_eq;
use serde_json::json;
use support::{Call, FakeBotApi, FakeHub, OWNER, TOKEN, press, until};
use tau_core::Language;
use tau_state::ApprovalState;
use tau_telegram::TelegramChannel;

const CHAT: &str = "4242";

fn buttons(call: &Call) -> Vec<(String, String)> {
    call.body["reply_markup"]["inline_keyboard"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|row| row.as_array().cloned().unwrap())
        .map(|b| {
            (
                b["text"].as_str().unwrap().to_owned(),
                b["callback_data"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[tokio::test]
async fn only_the_number_shown_approves_a_lock_class_device() {
    let api = FakeBotApi::start().await;
    let (hub, events) = FakeHub::new();
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
    let garage = tau_devices::example::questions("telegram", "47")
        .unwrap()
        .remove(2);
    let id = hub
        .ask_about(
            CHAT,
            &garage.tool,
            &garage.effect,
            garage.arguments,
            garage.card,
        )
        .await;
    let sent = api.wait_calls("sendMessage", 1).await;
    let question = &sent[0];
    let text = question.body["text"].as_str().unwrap();
    assert!(
        text.contains("<b>OPEN · Garage door (garage) — a lock-class device</b>"),
        "{text}"
    );
    assert!(
        text.contains("🔐 Second step: to approve, press 47 below."),
        "{text}"
    );
    let shown = buttons(question);
    // No Approve: the number among three others, in order, then Reject.
    assert_eq!(
        shown,
        vec![
            ("10".to_owned(), format!("v1:c10:{id}")),
            ("28".to_owned(), format!("v1:c28:{id}")),
            ("47".to_owned(), format!("v1:c47:{id}")),
            ("76".to_owned(), format!("v1:c76:{id}")),
            ("Reject".to_owned(), format!("v1:r:{id}")),
        ]
    );
    let decoy = "28";

    // The plain Approve of a question without the step, pressed anyway, and a wrong number.
    let message_id = 101;
    api.push_updates(&[
        press(1, OWNER, OWNER, message_id, &format!("v1:a:{id}")),
        press(2, OWNER, OWNER, message_id, &format!("v1:c{decoy}:{id}")),
    ]);
    let answered = api.wait_calls("answerCallbackQuery", 2).await;
    for call in &answered {
        assert_eq!(
            call.body["text"],
            json!("Not approved: press the number the question shows. It stays open.")
        );
    }
    assert_eq!(hub.state(&id), ApprovalState::Pending);
    assert!(
        api.calls("editMessageText").is_empty(),
        "the question stays as it was"
    );

    api.push_updates(&[press(3, OWNER, OWNER, message_id, &format!("v1:c47:{id}"))]);
    until("the approval", || {
        (hub.state(&id) == ApprovalState::Approved).then_some(())
    })
    .await;
    let edit = until("the edit", || {
        api.calls("editMessageText").into_iter().next()
    })
    .await;
    assert!(
        edit.body["text"]
            .as_str()
            .unwrap()
            .contains("<b>✅ Approved by P at "),
    );
    task.abort();
}
