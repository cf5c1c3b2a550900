//! The channel against the npm `telegram-test-api` emulator: its millisecond dates, `null`
//! results and presses without a message id, with the hub's side in memory.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod support;

use std::sync::Arc;

use serde_json::json;
use support::{FakeHub, OWNER, STRANGER, TOKEN, until};
use tau_core::Language;
use tau_state::ApprovalState;
use tau_telegram::{PressRefusal, TelegramChannel};
use tau_test_support::telegram::{Emulator, mask_times};

const CHAT: &str = "4242";

/// Runs blocking emulator calls off the runtime's threads that drive the channel.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn owners_approve_and_reject_strangers_change_nothing_on_the_emulator() {
    let Some(emulator) = Emulator::start(TOKEN) else {
        return;
    };
    let emulator = Arc::new(emulator);
    let (hub, events) = FakeHub::new();
    let mut config = tau_telegram::TelegramConfig::for_owners(vec![OWNER]);
    config.api_url = Some(emulator.url.clone());
    config.poll_timeout_seconds = 0;
    config.min_poll_interval_ms = 50;
    config.edit_interval_ms = 20;
    let channel = TelegramChannel::new(
        &config,
        TOKEN,
        Arc::clone(&hub) as Arc<dyn tau_telegram::Hub>,
        hub.store(),
        Language::En,
        jiff::tz::TimeZone::UTC,
    )
    .unwrap();
    let task = tokio::spawn(channel.run(events));
    let e = Arc::clone(&emulator);

    // A stranger writes; then the owner does. Only the owner reaches the hub.
    blocking(move || {
        e.write(STRANGER, STRANGER, "run rm -rf / for me");
        e.write(OWNER, OWNER, "switch the light on");
    })
    .await;
    until("the owner's message", || {
        let sent = hub.sent.lock().unwrap().clone();
        (!sent.is_empty()).then_some(sent)
    })
    .await;
    assert_eq!(
        hub.sent.lock().unwrap().clone(),
        vec![(CHAT.to_owned(), "switch the light on".to_owned())]
    );

    // A question; a stranger presses Approve in the owner's chat: nothing changes.
    let first = hub
        .ask(CHAT, json!({"command": "echo <b>hi</b> & bye"}))
        .await;
    let e = Arc::clone(&emulator);
    let data = format!("v1:a:{first}");
    let question = blocking(move || {
        let question = e.wait("the question", |m| {
            m.iter().find(|m| !m.buttons.is_empty()).cloned()
        });
        e.press(OWNER, STRANGER, &data);
        question
    })
    .await;
    assert_eq!(question.chat, OWNER);
    assert_eq!(
        question.buttons,
        vec![format!("v1:a:{first}"), format!("v1:r:{first}")]
    );
    insta::assert_snapshot!("question", mask_times(&question.text));
    until("the refusal", || {
        let refused = hub.refused.lock().unwrap().clone();
        (!refused.is_empty()).then_some(refused)
    })
    .await;
    assert_eq!(
        hub.refused.lock().unwrap()[0].reason,
        PressRefusal::NotAnOwner
    );
    assert_eq!(hub.state(&first), ApprovalState::Pending);

    // The owner approves: the message says so and has no buttons left.
    let e = Arc::clone(&emulator);
    let data = format!("v1:a:{first}");
    let approved = blocking(move || {
        e.press(OWNER, OWNER, &data);
        e.wait("the approved message", |m| {
            m.iter()
                .find(|m| m.id == question.id && m.buttons.is_empty())
                .cloned()
        })
    })
    .await;
    assert_eq!(hub.state(&first), ApprovalState::Approved);
    insta::assert_snapshot!("approved", mask_times(&approved.text));

    // A second question, rejected.
    let second = hub.ask(CHAT, json!({"command": "shutdown now"})).await;
    let e = Arc::clone(&emulator);
    let data = format!("v1:r:{second}");
    let rejected = blocking(move || {
        let asked = e.wait("the second question", |m| {
            m.iter().find(|m| m.buttons.contains(&data)).cloned()
        });
        e.press(OWNER, OWNER, &data);
        e.wait("the rejected message", |m| {
            m.iter()
                .find(|m| m.id == asked.id && m.buttons.is_empty())
                .cloned()
        })
    })
    .await;
    assert_eq!(hub.state(&second), ApprovalState::Rejected);
    insta::assert_snapshot!("rejected", mask_times(&rejected.text));
    // Nothing was ever sent to the stranger's chat.
    let e = Arc::clone(&emulator);
    assert!(
        blocking(move || e.bot_messages())
            .await
            .iter()
            .all(|m| m.chat == OWNER)
    );
    task.abort();
}

/// Runs this binary's emulator test again in a child process, the emulator nowhere to be
/// found: it skips without `TAU_PEERS_REQUIRED`, and fails with it.
#[test]
fn a_missing_emulator_fails_when_peers_are_required() {
    let run = |required: bool| {
        let mut command = std::process::Command::new(std::env::current_exe().unwrap());
        command
            .args([
                "--exact",
                "owners_approve_and_reject_strangers_change_nothing_on_the_emulator",
                "--test-threads=1",
            ])
            .env("TAU_TEST_NPM_BIN", "/nonexistent/node_modules/.bin")
            .env_remove("TAU_PEERS_REQUIRED");
        if required {
            command.env("TAU_PEERS_REQUIRED", "1");
        }
        command.output().unwrap()
    };
    let skipped = run(false);
    assert!(
        skipped.status.success(),
        "{}",
        String::from_utf8_lossy(&skipped.stderr)
    );
    let failed = run(true);
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&failed.stdout),
        String::from_utf8_lossy(&failed.stderr)
    );
    assert!(
        !failed.status.success(),
        "a missing emulator passed: {said}"
    );
    assert!(
        said.contains("TAU_PEERS_REQUIRED is set, but there is no npm peer telegram-test-api"),
        "{said}"
    );
}
