//! A chat's conversations on Telegram, end to end (the real `tau serve`, the npm
//! `telegram-test-api` Bot API emulator): `/sessions` lists them by title with the open one
//! marked, `/rename` names the open one, `/search` finds them by their words, `/delete`
//! deletes the open one (never while its question waits); what a model or a person wrote
//! in a title is shown escaped.

use crate::common;

use common::*;
use serde_json::json;
use tau_test_support::telegram::Emulator;

const OWNER: i64 = 4242;

#[test]
fn sessions_are_listed_by_title_renamed_and_found_from_the_chat() {
    let Some(emulator) = Emulator::start(common::serve::TELEGRAM_TOKEN) else {
        return;
    };
    let tau = Tau::new();
    let model = tau.replay(&json!([answer("Done.")]));
    let _serve = tau.serve_telegram(&model, &emulator.url, OWNER, "");
    let said = |text: &str| {
        let text = text.to_owned();
        emulator.wait(&text.clone(), move |m| {
            m.iter().find(|m| m.text.contains(&text)).cloned()
        })
    };

    emulator.write(OWNER, OWNER, "water the plants at 7");
    said("Done.");
    emulator.write(OWNER, OWNER, "/new");
    said("New conversation.");
    emulator.write(OWNER, OWNER, "dim the <b>kitchen</b> lights \u{202e}");
    emulator.wait("the second answer", |m| {
        (m.iter().filter(|m| m.text.contains("Done.")).count() == 2).then_some(())
    });

    emulator.write(OWNER, OWNER, "/sessions");
    let listed = said("Conversations in this chat (2)");
    assert!(
        listed
            .text
            .contains("▶ dim the &lt;b&gt;kitchen&lt;/b&gt; lights \\u{202e} · 2 messages"),
        "{}",
        listed.text
    );
    assert!(
        listed.text.contains("• water the plants at 7 · 2 messages"),
        "{}",
        listed.text
    );

    emulator.write(OWNER, OWNER, "/rename Kitchen evening");
    said("This conversation is now called: Kitchen evening");
    emulator.write(OWNER, OWNER, "/search PLANTS");
    let found = said("Conversations in this chat (1)");
    assert!(
        found.text.contains("• water the plants at 7"),
        "{}",
        found.text
    );
    emulator.write(OWNER, OWNER, "/search nothing of the kind");
    said("No conversation of this chat holds that.");
    emulator.write(OWNER, OWNER, "/search");
    said("/search and some words finds");
    emulator.write(OWNER, OWNER, "/sessions");
    emulator.wait("the renamed list", |m| {
        m.iter()
            .find(|m| m.text.contains("▶ Kitchen evening · 2 messages"))
            .cloned()
    });
    // tau sessions sees the same title.
    let list = tau.run(&["sessions", "list"], "");
    assert!(list.stdout.contains("Kitchen evening"), "{}", list.stdout);
}

#[test]
fn the_open_conversation_is_deleted_from_the_chat_and_never_while_its_question_waits() {
    let Some(emulator) = Emulator::start(common::serve::TELEGRAM_TOKEN) else {
        return;
    };
    let tau = Tau::new();
    let model = tau.replay(&json!([
        answer("Noted."),
        tool_call("c1", "run_command", &json!({"command": "echo hi"})),
        answer("Ran it."),
    ]));
    let _serve = tau.serve_telegram(&model, &emulator.url, OWNER, "");
    let said = |text: &str| {
        let text = text.to_owned();
        emulator.wait(&text.clone(), move |m| {
            m.iter().find(|m| m.text.contains(&text)).cloned()
        })
    };
    let count = |text: &'static str, n: usize| {
        emulator.wait(text, move |m| {
            (m.iter().filter(|m| m.text.contains(text)).count() == n).then_some(())
        });
    };

    emulator.write(OWNER, OWNER, "/delete");
    said("Nothing is written in this conversation yet");
    emulator.write(OWNER, OWNER, "remember the milk");
    said("Noted.");
    let sessions = tau.run(&["sessions", "list"], "");
    assert!(
        sessions.stdout.contains("remember the milk"),
        "{}",
        sessions.stdout
    );

    // A question waits: the conversation is in use and stays, the question answerable.
    emulator.write(OWNER, OWNER, "say hi");
    let id = emulator.wait("the question", |m| {
        m.iter()
            .find_map(|m| m.buttons.iter().find_map(|b| b.strip_prefix("v1:a:")))
            .map(str::to_owned)
    });
    emulator.write(OWNER, OWNER, "/delete");
    said("tau could not take this message:");
    let sessions = tau.run(&["sessions", "list"], "");
    assert!(
        sessions.stdout.contains("remember the milk"),
        "{}",
        sessions.stdout
    );
    emulator.press(OWNER, OWNER, &format!("v1:a:{id}"));
    said("Ran it.");

    emulator.write(OWNER, OWNER, "/delete");
    said("This conversation is deleted with everything in it");
    let sessions = tau.run(&["sessions", "list", "--all"], "");
    assert!(
        !sessions.stdout.contains("remember the milk"),
        "{}",
        sessions.stdout
    );
    emulator.write(OWNER, OWNER, "/sessions");
    said("No conversation in this chat yet.");
    emulator.write(OWNER, OWNER, "/delete");
    count("Nothing is written in this conversation yet", 2);
}
