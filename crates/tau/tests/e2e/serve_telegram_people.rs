//! A household on Telegram through the real `tau serve` and the npm `telegram-test-api`
//! Bot API emulator: a person's `telegram` id owns the bot, what they write in their
//! private chat is their conversation, and another person's press on its question is
//! refused, recorded with their name, and decides nothing.

use crate::common;

use common::serve::TELEGRAM_TOKEN;
use common::*;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tau_test_support::telegram::Emulator;

const ANA: i64 = 111;
const BOB: i64 = 222;

fn wait_for<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        if let Some(value) = check() {
            return value;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn a_private_chat_is_its_persons_and_another_persons_press_is_refused() {
    let Some(emulator) = Emulator::start(TELEGRAM_TOKEN) else {
        return;
    };
    let tau = Tau::new();
    let model = tau.make_proof();
    // Bob owns the bot through [[people]] alone.
    let people = format!(
        "\n[[people]]\nname = \"ana\"\ntelegram = {ANA}\n\n[[people]]\nname = \"bob\"\ntelegram = {BOB}\n"
    );
    let _serve = tau.serve_telegram(&model, &emulator.url, ANA, &people);
    emulator.write(BOB, BOB, "make the proof");
    let id = emulator.wait("a question with buttons", |messages| {
        messages.iter().find_map(|m| {
            let id = m.buttons.iter().find_map(|b| b.strip_prefix("v1:a:"))?;
            Some(id.to_owned())
        })
    });
    emulator.press(BOB, ANA, &format!("v1:a:{id}"));
    let refused: Value = wait_for("Ana's press refused in the audit log", || {
        tau.audit()
            .into_iter()
            .find(|line| line["type"] == "answer_refused")
    });
    assert_eq!(
        (
            refused["approval_id"].clone(),
            refused["person"].clone(),
            refused["reason"].clone()
        ),
        (
            json!(id),
            json!("ana"),
            json!("not yours: the conversation is bob's")
        )
    );
    assert_eq!(tau.proof(), None);
    emulator.press(BOB, BOB, &format!("v1:a:{id}"));
    wait_for("the proof", || tau.proof());
    let decided: Vec<Value> = tau
        .audit()
        .into_iter()
        .filter(|line| line["type"] == "approval" && line["approval_id"] == id)
        .map(|line| line["decided_by"].clone())
        .collect();
    assert_eq!(
        decided,
        vec![
            json!({"kind": "person", "channel": "telegram", "user": BOB.to_string(), "person": "bob"})
        ]
    );
}

#[test]
fn a_routine_asks_on_telegram_in_its_owners_chat_and_only_they_answer() {
    let Some(emulator) = Emulator::start(TELEGRAM_TOKEN) else {
        return;
    };
    let tau = Tau::new();
    // Made before people were named, then given to Bob (and edited, so it is asked).
    tau.routine_edited_behind_its_approval("telegram");
    let db = rusqlite::Connection::open(tau.home().join("state.db")).unwrap();
    let given = db
        .execute(
            "UPDATE routines SET definition = replace(definition, '\"ask\":\"telegram\"', '\"ask\":\"telegram\",\"owner\":\"bob\"')",
            [],
        )
        .unwrap();
    assert_eq!(given, 1);
    let people = format!(
        "\n[[people]]\nname = \"ana\"\ntelegram = {ANA}\n\n[[people]]\nname = \"bob\"\ntelegram = {BOB}\n"
    );
    let model = tau.replay(&json!([answer("unused")]));
    let _serve = tau.serve_telegram(&model, &emulator.url, ANA, &people);
    let (chat, id) = emulator.wait("the routine's question", |messages| {
        messages.iter().find_map(|m| {
            let id = m.buttons.iter().find_map(|b| b.strip_prefix("v1:a:"))?;
            Some((m.chat, id.to_owned()))
        })
    });
    assert_eq!(
        chat, BOB,
        "asked in its owner's chat, not the first owner's"
    );
    emulator.press(BOB, ANA, &format!("v1:a:{id}"));
    let refused: Value = wait_for("Ana's press refused in the audit log", || {
        tau.audit()
            .into_iter()
            .find(|line| line["type"] == "answer_refused")
    });
    assert_eq!(
        (refused["person"].clone(), refused["reason"].clone()),
        (json!("ana"), json!("not yours: the conversation is bob's"))
    );
    emulator.press(BOB, BOB, &format!("v1:a:{id}"));
    let out = wait_for("tick.txt", || {
        std::fs::read_to_string(tau.workspace().join("tick.txt"))
            .ok()
            .filter(|text| text.ends_with('\n'))
    });
    assert!(out.starts_with("tock\n"), "{out}");
    let decided = wait_for("Bob's yes in the audit log", || {
        tau.audit()
            .into_iter()
            .find(|line| line["type"] == "approval" && line["approval_id"] == id)
    });
    assert_eq!(
        decided["decided_by"],
        json!({"kind": "person", "channel": "telegram", "user": BOB.to_string(), "person": "bob"})
    );
}

/// A question follows its person, not the channel: asked in Bob's Telegram chat, it is
/// pushed to the devices Bob turned Push on for on TauBar (with his own token), and not
/// to Ana's.
#[test]
fn a_question_asked_on_telegram_is_pushed_to_its_persons_devices() {
    let Some(emulator) = Emulator::start(TELEGRAM_TOKEN) else {
        return;
    };
    let Some(service) = tau_test_support::PushService::start() else {
        return;
    };
    let tau = Tau::new();
    let people = format!(
        "\n[[people]]\nname = \"ana\"\ntelegram = {ANA}\n\n[[people]]\nname = \"bob\"\ntelegram = {BOB}\n"
    );
    let serve = tau.serve_telegram(&tau.make_proof(), &emulator.url, ANA, &people);
    let key = serve.get("/api/push/key").json()["public_key"]
        .as_str()
        .unwrap()
        .to_owned();
    let config = tau.dir.path().join("tau.toml");
    let device_of = |name: &str| {
        let args = [
            "--config",
            config.to_str().unwrap(),
            "people",
            "token",
            name,
        ];
        let run = tau.run(&args, "");
        assert_eq!(run.code, 0, "{}", run.stderr);
        let person = common::serve::Api {
            addr: serve.addr,
            token: run.stdout.trim().to_owned(),
        };
        let device = service.subscribe(&key);
        let kept = person.post("/api/push/subscriptions", &device.subscription.to_string());
        assert_eq!(kept.status, 204, "{kept:?}");
        device
    };
    let (anas, bobs) = (device_of("ana"), device_of("bob"));

    emulator.write(BOB, BOB, "make the proof");
    let id = emulator.wait("a question with buttons", |messages| {
        messages.iter().find_map(|m| {
            let id = m.buttons.iter().find_map(|b| b.strip_prefix("v1:a:"))?;
            Some(id.to_owned())
        })
    });
    let pushed = wait_for("Bob's push", || {
        Some(service.received(&bobs)).filter(|p| !p.is_empty())
    });
    assert_eq!(
        pushed,
        [json!({"type": "waiting", "url": format!("/#q={id}")}).to_string()]
    );
    emulator.press(BOB, BOB, &format!("v1:a:{id}"));
    wait_for("the proof", || tau.proof());
    assert_eq!(service.received(&anas), Vec::<String>::new());
    assert_eq!(service.received(&bobs).len(), 1, "pushed once");
}
