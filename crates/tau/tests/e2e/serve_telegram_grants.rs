//! Grants on Telegram, end to end: the real `tau serve` and the npm `telegram-test-api`
//! Bot API emulator. A question in an owner's private chat says what a grant covers and
//! offers "Approve, allow again"; pressed, the call runs and the next identical call runs
//! without a question, recorded as the grant's, made by that Telegram user; `/grants`
//! lists it with a Revoke button, and after the Revoke the same call is asked again;
//! "allow in all my chats" covers the owner's next conversation too. A group chat, where
//! several people write, offers no grant, and the owner's grants do not reach into it.

use crate::common;

use std::time::{Duration, Instant};

use common::*;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tau_test_support::telegram::{BotMessage, Emulator};

const OWNER: i64 = 4242;
const GROUP: i64 = -100_777;
const COMMAND: &str = "echo x >> out.txt";

fn out(tau: &Tau) -> String {
    std::fs::read_to_string(tau.workspace().join("out.txt")).unwrap_or_default()
}

fn wait_for<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(value) = check() {
            return value;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The newest message in `chat` with a button whose data starts with `prefix`.
fn with_button(messages: &[BotMessage], chat: i64, prefix: &str) -> Option<BotMessage> {
    messages
        .iter()
        .rev()
        .find(|m| m.chat == chat && m.buttons.iter().any(|b| b.starts_with(prefix)))
        .cloned()
}

fn id_after(message: &BotMessage, prefix: &str) -> String {
    message
        .buttons
        .iter()
        .find_map(|b| b.strip_prefix(prefix))
        .unwrap()
        .to_owned()
}

fn lines_of(tau: &Tau, kind: &str) -> Vec<Value> {
    tau.audit()
        .into_iter()
        .filter(|l| l["type"] == kind)
        .collect()
}

#[test]
fn allow_again_on_telegram_runs_the_same_call_unasked_until_revoked() {
    let Some(emulator) = Emulator::start(common::serve::TELEGRAM_TOKEN) else {
        return;
    };
    let tau = Tau::new();
    let call = json!({"command": COMMAND});
    let model = tau.replay(&json!([
        tool_call("t1", "run_command", &call),
        answer("first"),
        tool_call("t2", "run_command", &call),
        answer("second"),
        tool_call("t3", "run_command", &call),
        answer("third"),
        tool_call("t4", "run_command", &call),
        answer("fourth"),
    ]));
    let _serve = tau.serve_telegram(
        &model,
        &emulator.url,
        OWNER,
        &format!("allowed_chats = [{OWNER}, {GROUP}]\n"),
    );

    // 1. The question says what a grant covers and offers it.
    emulator.write(OWNER, OWNER, "append x");
    let asked = emulator.wait("the first question", |m| with_button(m, OWNER, "v1:g:"));
    assert!(
        asked.text.contains(
            "↻ Allow again: exactly this call, for 24 h, while the workspace's files stay as \
             they are, in this chat"
        ),
        "{}",
        asked.text
    );
    let id = id_after(&asked, "v1:g:");
    emulator.press(OWNER, OWNER, &format!("v1:g:{id}"));
    emulator.wait("the first answer", |m| {
        m.iter().find(|m| m.text.contains("first")).cloned()
    });
    assert_eq!(out(&tau), "x\n");
    let made = wait_for("the grant", || lines_of(&tau, "grant_created").pop());
    let grant_id = made["id"].as_str().unwrap().to_owned();
    assert_eq!(
        (
            &made["tool"],
            &made["arguments"],
            &made["scope"],
            &made["channel"],
            &made["person"],
            &made["created_by"],
            &made["approval_id"]
        ),
        (
            &json!("run_command"),
            &call,
            &json!("conversation"),
            &json!("telegram"),
            &json!(OWNER.to_string()),
            &json!({"kind": "person", "channel": "telegram", "user": OWNER.to_string()}),
            &json!(id)
        )
    );

    // 2. The same call again: no question, recorded as the grant's.
    let questions_before = emulator
        .bot_messages()
        .iter()
        .filter(|m| m.buttons.iter().any(|b| b.starts_with("v1:a:")))
        .count();
    emulator.write(OWNER, OWNER, "again");
    emulator.wait("the second answer", |m| {
        m.iter().find(|m| m.text.contains("second")).cloned()
    });
    assert_eq!(out(&tau), "x\nx\n");
    let asked_now = emulator
        .bot_messages()
        .iter()
        .filter(|m| m.buttons.iter().any(|b| b.starts_with("v1:a:")))
        .count();
    assert_eq!(asked_now, questions_before, "no second question");
    let second = tau
        .audit()
        .into_iter()
        .find(|l| l["type"] == "tool_call" && l["tool_use_id"] == "t2")
        .unwrap();
    assert_eq!(
        (&second["approval"], &second["decided_by"]),
        (&json!("granted"), &json!({"kind": "grant", "id": grant_id}))
    );

    // 3. /grants lists it with its Revoke; the Revoke ends it.
    emulator.write(OWNER, OWNER, "/grants");
    let list = emulator.wait("the list", |m| with_button(m, OWNER, "v1:v:"));
    assert!(
        list.text.contains("Runs without asking (1):"),
        "{}",
        list.text
    );
    assert!(
        list.text
            .contains(r#"run_command {"command":"echo x &gt;&gt; out.txt"}"#),
        "{}",
        list.text
    );
    assert_eq!(list.buttons, vec![format!("v1:v:{grant_id}")]);
    emulator.press(OWNER, OWNER, &format!("v1:v:{grant_id}"));
    emulator.wait("the revoke", |m| {
        m.iter()
            .find(|m| m.text == "Revoked: run_command is asked again.")
            .cloned()
    });
    let revoked = wait_for("the revoke line", || lines_of(&tau, "grant_revoked").pop());
    assert_eq!(
        (
            &revoked["grant_id"],
            &revoked["revoked_by"],
            &revoked["uses"]
        ),
        (
            &json!(grant_id),
            &json!({"kind": "person", "channel": "telegram", "user": OWNER.to_string()}),
            &json!(1)
        )
    );

    // 4. Asked again. "Allow in all my chats": the call runs, and the same call in the
    // owner's next conversation (after /new) runs without a question.
    emulator.write(OWNER, OWNER, "and again");
    let again = emulator.wait("the third question", |m| {
        with_button(m, OWNER, "v1:w:").filter(|q| q.id != asked.id)
    });
    emulator.press(OWNER, OWNER, &format!("v1:w:{}", id_after(&again, "v1:w:")));
    emulator.wait("the third answer", |m| {
        m.iter().find(|m| m.text.contains("third")).cloned()
    });
    assert_eq!(out(&tau), "x\nx\nx\n");
    let everywhere = wait_for("the second grant", || {
        lines_of(&tau, "grant_created")
            .into_iter()
            .find(|l| l["scope"] == "channel")
    });
    emulator.write(OWNER, OWNER, "/new");
    emulator.wait("the new conversation", |m| {
        m.iter().find(|m| m.text == "New conversation.").cloned()
    });
    // A new conversation's model starts its script again: its first call is the same.
    emulator.write(OWNER, OWNER, "append in the new one");
    let covered = wait_for("the covered call in the new conversation", || {
        tau.audit().into_iter().find(|l| {
            l["type"] == "tool_call"
                && l["decided_by"] == json!({"kind": "grant", "id": everywhere["id"]})
        })
    });
    assert_ne!(covered["session"], made["session"], "another conversation");
    wait_for("the fourth run", || {
        (out(&tau) == "x\nx\nx\nx\n").then_some(())
    });

    // 5. A group chat's question offers no grant, and a forged "allow again" on it is
    // refused: the question stays open.
    emulator.write(GROUP, OWNER, "append in the group");
    let grouped = emulator.wait("the group's question", |m| with_button(m, GROUP, "v1:a:"));
    assert!(
        grouped.buttons.iter().all(|b| !b.starts_with("v1:g:")),
        "{:?}",
        grouped.buttons
    );
    assert!(!grouped.text.contains("allow again"), "{}", grouped.text);
    let group_id = id_after(&grouped, "v1:a:");
    emulator.press(GROUP, OWNER, &format!("v1:g:{group_id}"));
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(lines_of(&tau, "grant_created").len(), 2);
    assert_eq!(out(&tau), "x\nx\nx\nx\n");
    let db = rusqlite::Connection::open(tau.home().join("state.db")).unwrap();
    let state: String = db
        .query_row(
            "SELECT state FROM approvals WHERE id = ?1",
            [&group_id],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(state, "pending");
}
