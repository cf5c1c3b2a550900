//! Routines on several hubs sharing one PostgreSQL store, driven through the real binary:
//! a routine asking on Telegram runs where the bot is polled, and an MQTT message fires a
//! routine once however many hubs receive it. Each test starts a throwaway PostgreSQL
//! (`tau_test_support::Postgres`) and its other peers; a missing one fails the test.

use crate::common;

use std::time::Duration;

use common::Tau;
use pretty_assertions::assert_eq;
use serde_json::json;
use tau_test_support::{Mosquitto, Postgres};

#[test]
fn an_mqtt_message_fires_a_routine_once_however_many_hubs_receive_it() {
    let broker = Mosquitto::start("allow_anonymous true").unwrap().unwrap();
    let server = Postgres::start().unwrap();
    let url = server.fresh_database().unwrap();
    let database = url.rsplit('/').next().unwrap().to_owned();
    let (one, two) = (Tau::new(), Tau::new());
    let env = [("TAU_STATE_URL", url.as_str())];
    let config = |tau: &Tau| {
        tau.serve_config(&format!(
            "[tools.mqtt]\nhost = \"127.0.0.1\"\nport = {}\n\n\
             [[routines]]\nname = \"doorbell\"\nmqtt = \"home/doorbell\"\npayload = \"ring\"\n\
             tool = \"append_note\"\narguments = {{ text = \"ding\" }}\n",
            broker.port
        ))
    };
    let model = |tau: &Tau| tau.replay(&json!([common::answer("unused")]));
    let first = one.serve_env(&model(&one), &config(&one), &env);
    let second = two.serve_env(&model(&two), &config(&two), &env);
    // Both hubs are subscribed before the bell rings: each receives every message.
    for tau in [&one, &two] {
        first.until(|_| tau.log().contains("MQTT triggers connected").then_some(()));
    }
    std::thread::sleep(Duration::from_millis(500));

    let runs = || {
        server
            .sql_on(
                &database,
                "SELECT count(*) FROM routine_runs WHERE routine = 'doorbell'",
            )
            .unwrap()
            .trim()
            .parse::<usize>()
            .unwrap()
    };
    let notes = |tau: &Tau| {
        std::fs::read_to_string(tau.workspace().join("notes.md"))
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains("ding"))
            .count()
    };
    // Three rings, further apart than a hub keeps a routine's messages: each is run
    // once, by whichever hub took it first; received twice, it would be run twice.
    for ring in 1..=3 {
        tau_test_support::publish(broker.port, "home/doorbell", "ring", false).unwrap();
        first.until(|_| (runs() >= ring).then_some(()));
        std::thread::sleep(Duration::from_millis(2500));
        assert_eq!(runs(), ring, "ring {ring} ran on both hubs");
    }
    assert_eq!(notes(&one) + notes(&two), 3);
    drop((first, second));
}

#[test]
fn a_routine_asking_on_telegram_runs_on_the_hub_that_polls_the_bot() {
    let Some(emulator) = tau_test_support::telegram::Emulator::start(common::serve::TELEGRAM_TOKEN)
    else {
        return;
    };
    let server = Postgres::start().unwrap();
    let url = server.fresh_database().unwrap();
    let database = url.rsplit('/').next().unwrap().to_owned();
    let (one, two) = (Tau::new(), Tau::new());
    let env = [
        ("TAU_STATE_URL", url.as_str()),
        ("TAU_TELEGRAM_TOKEN", common::serve::TELEGRAM_TOKEN),
    ];
    // Four routines, each asking the owner on Telegram at its first second.
    let routines: String = (1..=4)
        .map(|n| {
            format!(
                "[[routines]]\nname = \"tick-{n}\"\nevery = \"1s\"\nprompt = \"tick\"\nask = \"telegram\"\n"
            )
        })
        .collect();
    let config = |tau: &Tau| {
        tau.serve_config(&format!(
            "[telegram]\nowners = [4242]\napi_url = \"{}\"\npoll_timeout_seconds = 0\n\n{routines}",
            emulator.url
        ))
    };
    // Whichever routine's turn it is, the model asks to run a command: a question.
    let model = |tau: &Tau| {
        let call = common::tool_call("t1", "run_command", &json!({"command": "echo tick"}));
        tau.replay(&json!(vec![call; 40]))
    };
    let first = one.serve_env(&model(&one), &config(&one), &env);
    let second = two.serve_env(&model(&two), &config(&two), &env);
    let first_hub = std::fs::read_to_string(one.home().join("hub-id")).unwrap();

    // Both hubs keep the routines, and each second goes to whichever hub claims it first;
    // but only the hub that polls the bot can put a question in front of the owner, so
    // every run that asks is that hub's. A run the other hub took would ask where nobody
    // reads it: its card would never come.
    emulator.wait("a question of each routine", |messages| {
        let cards = messages
            .iter()
            .filter(|m| m.buttons.iter().any(|b| b.starts_with("v1:a:")))
            .count();
        (cards >= 4).then_some(())
    });
    let asked_by = server
        .sql_on(&database, "SELECT DISTINCT asked_by FROM approvals")
        .unwrap();
    assert_eq!(asked_by.trim(), first_hub.trim());
    let pending = server
        .sql_on(
            &database,
            "SELECT count(*) FROM approvals WHERE state = 'pending'",
        )
        .unwrap();
    assert!(pending.trim().parse::<u32>().unwrap() >= 4, "{pending}");
    drop((first, second));
}
