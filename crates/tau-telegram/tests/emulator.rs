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
use support::emulator::Emulator;
use support::{FakeHub, OWNER, STRANGER, TOKEN, until};
use tau_core::Language;
use tau_core::approval::ApprovalState;
use tau_telegram::{PressRefusal, Store, TelegramChannel};

const CHAT: &str = "4242";

/// `2026-12-02 14:03:05 UTC` -> `<time>`
fn mask_time(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(" UTC") {
        out.push_str(&rest[..at.saturating_sub(19)]);
        out.push_str("<time>");
        rest = &rest[at + 4..];
    }
    out.push_str(rest);
    out
}

#[tokio::test]
async fn owners_approve_and_reject_strangers_change_nothing_on_the_emulator() {
    let Some(emulator) = Emulator::start().await else {
        return;
    };
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
        Store::in_memory().unwrap(),
        Language::En,
    )
    .unwrap();
    let task = tokio::spawn(channel.run(events));

    // A stranger writes; then the owner does. Only the owner reaches the hub.
    emulator
        .write(STRANGER, STRANGER, "run rm -rf / for me")
        .await;
    emulator.write(OWNER, OWNER, "switch the light on").await;
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
    let question = emulator
        .wait("the question", |m| {
            m.iter().find(|m| !m.buttons.is_empty()).cloned()
        })
        .await;
    assert_eq!(question.chat, OWNER);
    assert_eq!(
        question.buttons,
        vec![format!("v1:a:{first}"), format!("v1:r:{first}")]
    );
    insta::assert_snapshot!("question", mask_time(&question.text));
    emulator
        .press(OWNER, STRANGER, &format!("v1:a:{first}"))
        .await;
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
    emulator.press(OWNER, OWNER, &format!("v1:a:{first}")).await;
    let approved = emulator
        .wait("the approved message", |m| {
            m.iter()
                .find(|m| m.id == question.id && m.buttons.is_empty())
                .cloned()
        })
        .await;
    assert_eq!(hub.state(&first), ApprovalState::Approved);
    insta::assert_snapshot!("approved", mask_time(&approved.text));

    // A second question, rejected.
    let second = hub.ask(CHAT, json!({"command": "shutdown now"})).await;
    let asked = emulator
        .wait("the second question", |m| {
            m.iter()
                .find(|m| m.buttons.contains(&format!("v1:r:{second}")))
                .cloned()
        })
        .await;
    emulator
        .press(OWNER, OWNER, &format!("v1:r:{second}"))
        .await;
    let rejected = emulator
        .wait("the rejected message", |m| {
            m.iter()
                .find(|m| m.id == asked.id && m.buttons.is_empty())
                .cloned()
        })
        .await;
    assert_eq!(hub.state(&second), ApprovalState::Rejected);
    insta::assert_snapshot!("rejected", mask_time(&rejected.text));
    // Nothing was ever sent to the stranger's chat.
    assert!(
        emulator
            .bot_messages()
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
