//! A garage door's question on Telegram, end to end: the real `tau serve`, the npm
//! `telegram-test-api` Bot API emulator, a real Mosquitto broker with a device stand-in.
//! The message has no Approve button, only numbers; the plain Approve (an old or forged
//! button) and a wrong number leave the question open, and only the number the message
//! names opens the garage.

use crate::common;

use std::time::{Duration, Instant};

use common::*;
use serde_json::json;
use tau_test_support::telegram::Emulator;
use tau_test_support::{DeviceStandIn, Mosquitto, StandInSpec};

const TOKEN: &str = "123456:TEST-token_x";
const OWNER: i64 = 4242;

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

fn state_of(tau: &Tau, id: &str) -> String {
    let db = rusqlite::Connection::open(tau.home().join("state.db")).unwrap();
    db.query_row("SELECT state FROM approvals WHERE id = ?1", [id], |row| {
        row.get(0)
    })
    .unwrap()
}

#[test]
fn only_the_number_the_message_names_opens_the_garage() {
    let Some(emulator) = Emulator::start(TOKEN) else {
        return;
    };
    let Some(broker) = Mosquitto::start("allow_anonymous true").unwrap() else {
        return;
    };
    let garage = DeviceStandIn::start(
        broker.port,
        StandInSpec {
            client_id: "garage-door".into(),
            command_topic: "home/garage/door/set".into(),
            state_topic: "home/garage/door/state".into(),
            initial_state: Some("CLOSED".into()),
            states: Vec::new(),
        },
    )
    .unwrap();
    let tau = Tau::new();
    let model = tau.replay(&json!([
        tool_call(
            "t1",
            "device_set",
            &json!({"device": "garage-door", "action": "open"})
        ),
        answer("The garage is open."),
    ]));
    let config = tau.serve_config(&format!(
        "[tools.mqtt]\nport = {}\n\n[[devices]]\nname = \"garage-door\"\nlabel = \"Garage door\"\n\
         room = \"garage\"\nkind = \"garage\"\ncommand_topic = \"home/garage/door/set\"\n\
         actions = {{ open = \"OPEN\", close = \"CLOSE\" }}\n\n\
         [telegram]\nowners = [{OWNER}]\napi_url = \"{}\"\npoll_timeout_seconds = 0\n\
         min_poll_interval_ms = 50\nedit_interval_ms = 50\n",
        broker.port, emulator.url
    ));
    let _serve = tau.serve_env(&model, &config, &[("TAU_TELEGRAM_TOKEN", TOKEN)]);

    emulator.write(OWNER, OWNER, "open the garage");
    let asked = emulator.wait("the garage question", |messages| {
        messages
            .iter()
            .find(|m| m.buttons.iter().any(|b| b.starts_with("v1:c")))
            .cloned()
    });
    assert!(
        asked
            .text
            .contains("<b>OPEN · Garage door (garage) — a lock-class device</b>"),
        "{}",
        asked.text
    );
    assert!(
        !asked.buttons.iter().any(|b| b.starts_with("v1:a:")),
        "no plain Approve: {:?}",
        asked.buttons
    );
    let code = asked
        .text
        .split("press ")
        .nth(1)
        .and_then(|rest| rest.get(..2))
        .unwrap()
        .to_owned();
    let id = asked
        .buttons
        .iter()
        .find_map(|b| b.strip_prefix(&format!("v1:c{code}:")))
        .unwrap()
        .to_owned();
    let wrong = asked
        .buttons
        .iter()
        .find(|b| b.starts_with("v1:c") && !b.starts_with(&format!("v1:c{code}:")))
        .unwrap()
        .clone();

    // The habit (a plain Approve, as an older question had) and a wrong number.
    emulator.press(OWNER, OWNER, &format!("v1:a:{id}"));
    emulator.press(OWNER, OWNER, &wrong);
    // Each press that did not count is in the audit log: the first as an `answer_refused`
    // line of its own, more from the same owner in a short while counted on one line.
    let refused = wait_for("both presses refused", || {
        let refused: Vec<_> = tau
            .audit_events()
            .into_iter()
            .filter(|e| e["type"] == "answer_refused")
            .collect();
        let presses: u64 = refused
            .iter()
            .map(|e| e["count"].as_u64().unwrap_or(1))
            .sum();
        (presses == 2).then_some(refused)
    });
    assert_eq!(
        refused[0],
        json!({"type": "answer_refused", "channel": "telegram", "approval_id": "ap_1",
               "user": OWNER.to_string(), "place": OWNER.to_string(),
               "reason": "a yes without the second step"})
    );
    for line in &refused {
        assert_eq!(line["reason"], json!("a yes without the second step"));
    }
    assert_eq!(state_of(&tau, &id), "pending");
    assert_eq!(garage.commands(), Vec::<String>::new());

    emulator.press(OWNER, OWNER, &format!("v1:c{code}:{id}"));
    assert_eq!(
        garage.wait_for_commands(1, Duration::from_secs(30)),
        ["OPEN"]
    );
    assert_eq!(state_of(&tau, &id), "approved");
    emulator.wait("the answer", |m| {
        m.iter()
            .find(|m| m.text.contains("The garage is open."))
            .cloned()
    });
}

/// Once anyone has a passkey, the garage's yes is TauBar's: the number the message names,
/// pressed on Telegram, approves nothing, is recorded, and the question stays open.
#[test]
fn once_a_passkey_is_enrolled_the_number_on_telegram_opens_nothing() {
    let Some(emulator) = Emulator::start(TOKEN) else {
        return;
    };
    let Some(broker) = Mosquitto::start("allow_anonymous true").unwrap() else {
        return;
    };
    let garage = DeviceStandIn::start(
        broker.port,
        StandInSpec {
            client_id: "garage-door".into(),
            command_topic: "home/garage/door/set".into(),
            state_topic: "home/garage/door/state".into(),
            initial_state: Some("CLOSED".into()),
            states: Vec::new(),
        },
    )
    .unwrap();
    let tau = Tau::new();
    let model = tau.replay(&json!([
        tool_call(
            "t1",
            "device_set",
            &json!({"device": "garage-door", "action": "open"})
        ),
        answer("The garage is open."),
    ]));
    let config = tau.serve_config(&format!(
        "[tools.mqtt]\nport = {}\n\n[[devices]]\nname = \"garage-door\"\nlabel = \"Garage door\"\n\
         room = \"garage\"\nkind = \"garage\"\ncommand_topic = \"home/garage/door/set\"\n\
         actions = {{ open = \"OPEN\", close = \"CLOSE\" }}\n\n\
         [telegram]\nowners = [{OWNER}]\napi_url = \"{}\"\npoll_timeout_seconds = 0\n\
         min_poll_interval_ms = 50\nedit_interval_ms = 50\n",
        broker.port, emulator.url
    ));
    let _serve = tau.serve_env(&model, &config, &[("TAU_TELEGRAM_TOKEN", TOKEN)]);
    // A passkey, kept as TauBar's enrollment keeps one.
    let store = tau_state::StateDb::open(&tau.home().join("state.db"))
        .unwrap()
        .passkeys();
    let secret = tau_web::enroll_secret(&store, tau_web::IMPLICIT_PERSON).unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        .try_into()
        .unwrap();
    let passkey = tau_state::StoredPasskey {
        id: "00ff".into(),
        person: "owner".into(),
        credential: "{}".into(),
        created_at: now,
        last_used_at: None,
    };
    assert!(store.enroll(&secret, &passkey, now).unwrap());

    emulator.write(OWNER, OWNER, "open the garage");
    // The question says where to approve it, and offers Reject alone.
    let asked = emulator.wait("the garage question", |messages| {
        messages
            .iter()
            .find(|m| m.text.contains("takes a passkey"))
            .cloned()
    });
    let link = format!("http://localhost:{}/#session=", _serve.addr.port());
    assert!(
        asked.text.contains(
            "<b>🔐 This takes a passkey: approve it on TauBar. Nothing pressed here approves it.</b>"
        ) && asked.text.contains(&link),
        "{}",
        asked.text
    );
    assert_eq!(asked.buttons.len(), 1, "{:?}", asked.buttons);
    let id = asked.buttons[0].rsplit(':').next().unwrap().to_owned();
    // A number pressed all the same (an old or forged button).
    emulator.press(OWNER, OWNER, &format!("v1:c47:{id}"));
    let refused = wait_for("the press refused", || {
        tau.audit_events()
            .into_iter()
            .find(|e| e["type"] == "answer_refused")
    });
    assert_eq!(
        refused,
        json!({"type": "answer_refused", "channel": "telegram", "approval_id": "ap_1",
               "user": OWNER.to_string(),
               "reason": "a yes where no passkey can be asked"})
    );
    assert_eq!(state_of(&tau, &id), "pending");
    assert_eq!(garage.commands(), Vec::<String>::new());
}
