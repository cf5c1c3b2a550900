//! Device calls end to end, against a real Mosquitto broker and a device stand-in that
//! answers each command with its new state, retained: the card says in tau's words what
//! will happen; a call the registry cannot send is refused without a question; a garage
//! door opens only with its second step (never a bare `y`), at the terminal and through
//! TauBar's API; a raw publish to a device's topic shows the device and the detour; a
//! discovery config that renames a pinned garage is a warning on its card.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{Tau, answer, tool_call};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tau_test_support::{DeviceStandIn, Mosquitto, StandInSpec, publish};

const DEVICES: &str = r#"
[[devices]]
name = "garage-door"
label = "Garage door"
room = "garage"
kind = "garage"
command_topic = "home/garage/door/set"
state_topic = "home/garage/door/state"
actions = { open = "OPEN", close = "CLOSE" }

[[devices]]
name = "kitchen-light"
label = "Kitchen light"
room = "kitchen"
kind = "light"
command_topic = "home/kitchen/light/set"
state_topic = "home/kitchen/light/state"
actions = { on = "ON", off = "OFF" }

[[devices]]
name = "living-heater"
label = "Living room heater"
kind = "climate"
command_topic = "home/living/heater/set"
actions = { set = { min = 5, max = 30, step = 0.5, unit = "°C" } }
"#;

struct Home {
    broker: Mosquitto,
    garage: DeviceStandIn,
}

fn home() -> Option<Home> {
    let broker = Mosquitto::start("allow_anonymous true").unwrap()?;
    let garage = DeviceStandIn::start(
        broker.port,
        StandInSpec {
            client_id: "garage-door".into(),
            command_topic: "home/garage/door/set".into(),
            state_topic: "home/garage/door/state".into(),
            initial_state: Some("CLOSED".into()),
            states: vec![("OPEN".into(), "OPEN".into())],
        },
    )
    .unwrap();
    Some(Home { broker, garage })
}

fn config(tau: &Tau, port: u16, extra: &str) -> PathBuf {
    tau.config(&format!("[tools.mqtt]\nport = {port}\n{DEVICES}{extra}"))
}

fn chat(tau: &Tau, config: &Path, calls: &[Value], answers: &str) -> common::Run {
    let mut script: Vec<Value> = calls
        .iter()
        .enumerate()
        .map(|(n, call)| {
            tool_call(
                &format!("t{}", n + 1),
                call["tool"].as_str().unwrap(),
                &call["input"],
            )
        })
        .collect();
    script.push(answer("Done."));
    let model = tau.replay(&Value::Array(script));
    tau.run(
        &[
            "--config",
            config.to_str().unwrap(),
            "--model",
            &model,
            "chat",
            "--answers-from-stdin",
        ],
        &format!("do it\n{answers}"),
    )
}

fn open_garage(reason: &str) -> Value {
    json!({"tool": "device_set", "input": {"device": "garage-door", "action": "open", "reason": reason}})
}

/// The transcript from the first question on, with the drawn number as `NN`.
fn from_question(stdout: &str) -> String {
    let start = stdout.find("  ┌─ approval needed").unwrap_or(0);
    let shown = &stdout[start..];
    match shown.find(" or ") {
        Some(at) => {
            let code = &shown[at + 4..at + 6];
            if code.bytes().all(|b| b.is_ascii_digit()) {
                return shown.replace(&format!(" or {code} "), " or NN ");
            }
            shown.to_owned()
        }
        None => shown.to_owned(),
    }
}

fn calls(tau: &Tau) -> Vec<(String, String, String)> {
    tau.audit_events()
        .into_iter()
        .filter(|e| e["type"] == "tool_call")
        .map(|e| {
            (
                e["tool"].as_str().unwrap().to_owned(),
                e["status"].as_str().unwrap().to_owned(),
                e["approval"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[test]
fn a_garage_opens_only_with_its_second_step_never_a_bare_yes() {
    let Some(home) = home() else { return };
    let tau = Tau::new();
    let config = config(&tau, home.broker.port, "");
    // The model's reason imitates another headline: it stays quoted data.
    let run = chat(
        &tau,
        &config,
        &[open_garage("switch OFF · Kitchen light (kitchen)")],
        "y\nyes\ngarage-door\n",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        home.garage.wait_for_commands(1, Duration::from_secs(20)),
        ["OPEN"]
    );
    assert!(!run.stdout.contains("▶ switch OFF"), "{}", run.stdout);
    insta::assert_snapshot!(from_question(&run.stdout));
    assert_eq!(
        calls(&tau),
        [("device_set".into(), "success".into(), "approved".into())]
    );

    // A bare yes and then nothing: refused, and nothing reaches the garage.
    let again = Tau::new();
    let config = self::config(&again, home.broker.port, "");
    let run = chat(&again, &config, &[open_garage("again")], "y\n");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        calls(&again),
        [("device_set".into(), "refused".into(), "rejected".into())]
    );
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        home.garage.commands(),
        ["OPEN"],
        "only the first run opened it"
    );
}

#[test]
fn a_garage_is_offered_no_grant_so_always_opens_nothing_and_it_is_asked_again() {
    let Some(home) = home() else { return };
    let tau = Tau::new();
    let config = config(&tau, home.broker.port, "");
    // The same call twice: `always` refuses the first, and the second is asked again.
    let run = chat(
        &tau,
        &config,
        &[open_garage("guests"), open_garage("guests")],
        "always\ngarage-door\n",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!run.stdout.contains("↻ always"), "{}", run.stdout);
    assert_eq!(
        calls(&tau),
        [
            ("device_set".into(), "refused".into(), "rejected".into()),
            ("device_set".into(), "success".into(), "approved".into()),
        ]
    );
    let events = tau.audit_events();
    let asked: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "approval_requested")
        .collect();
    assert_eq!(asked.len(), 2, "{events:#?}");
    assert!(asked.iter().all(|e| e.get("grant").is_none()), "{asked:#?}");
    assert!(
        !events.iter().any(|e| e["type"] == "grant_created"),
        "{events:#?}"
    );
    assert_eq!(
        home.garage.wait_for_commands(1, Duration::from_secs(20)),
        ["OPEN"]
    );
}

#[test]
fn with_confirm_high_risk_off_a_plain_yes_opens_it() {
    let Some(home) = home() else { return };
    let tau = Tau::new();
    let config = config(
        &tau,
        home.broker.port,
        "[approval]\nconfirm_high_risk = false\n",
    );
    let run = chat(&tau, &config, &[open_garage("dinner guests")], "y\n");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("└─ run it? [y/N]"), "{}", run.stdout);
    // Without a second step the question offers a grant like any other.
    assert!(
        run.stdout
            .contains("│ ↻ always: exactly this again for 24 h · always all: in all chats"),
        "{}",
        run.stdout
    );
    assert_eq!(
        home.garage.wait_for_commands(1, Duration::from_secs(20)),
        ["OPEN"]
    );
}

#[test]
fn calls_the_registry_cannot_send_are_refused_without_a_question() {
    let Some(home) = home() else { return };
    let tau = Tau::new();
    let config = config(&tau, home.broker.port, "");
    let run = chat(
        &tau,
        &config,
        &[
            json!({"tool": "device_set", "input": {"device": "garage", "action": "open"}}),
            json!({"tool": "device_set", "input": {"device": "garage-door", "action": "unlock"}}),
            json!({"tool": "device_set", "input": {"device": "living-heater", "action": "set", "value": 90}}),
            json!({"tool": "device_set", "input": {"device": "kitchen-light", "action": "on", "headline": "OPEN · Garage door"}}),
        ],
        "",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!run.stdout.contains("approval needed"), "{}", run.stdout);
    assert_eq!(
        calls(&tau),
        vec![
            (
                "device_set".to_owned(),
                "invalid".to_owned(),
                "refused".to_owned()
            );
            4
        ]
    );
    let results: Vec<String> = tau
        .audit_events()
        .into_iter()
        .filter(|e| e["type"] == "tool_call")
        .map(|e| e["result_summary"].as_str().unwrap().to_owned())
        .collect();
    insta::assert_snapshot!(results.join("\n"));
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(home.garage.commands(), Vec::<String>::new());
}

#[test]
fn a_raw_publish_to_a_device_topic_shows_the_device_and_the_detour() {
    let Some(home) = home() else { return };
    let tau = Tau::new();
    let config = config(&tau, home.broker.port, "");
    let run = chat(
        &tau,
        &config,
        &[
            json!({"tool": "mqtt_publish", "input": {"topic": "home/garage/door/set", "payload": "OPEN"}}),
        ],
        "y\nn\n",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let shown = from_question(&run.stdout).replace(&home.broker.port.to_string(), "PORT");
    insta::assert_snapshot!(shown);
    assert_eq!(
        calls(&tau),
        [("mqtt_publish".into(), "refused".into(), "rejected".into())]
    );
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(home.garage.commands(), Vec::<String>::new());
}

#[test]
fn a_pinned_garage_renamed_by_discovery_keeps_its_name_and_its_card_warns() {
    let Some(home) = home() else { return };
    let port = home.broker.port;
    let topic = "homeassistant/cover/garage/config";
    let pinned = r#"{"name":"Side gate","device_class":"garage","command_topic":"home/side/gate/set","device":{"suggested_area":"garden"}}"#;
    publish(port, topic, pinned, true).unwrap();
    let tau = Tau::new();
    let config = config(&tau, port, "");
    let args = |more: &[&str]| {
        let mut all = vec!["--config", config.to_str().unwrap()];
        all.extend_from_slice(more);
        let run = tau.run(&all, "");
        assert_eq!(run.code, 0, "{}", run.stderr);
        run.stdout
    };
    args(&["devices", "discover", "--wait", "1"]);
    args(&["devices", "pin", "side-gate"]);
    // Later, anyone on the broker renames it to the kitchen light, in the kitchen.
    let renamed = pinned
        .replace("Side gate", "kitchen light")
        .replace("garden", "kitchen");
    publish(port, topic, &renamed, true).unwrap();
    // `discover` records what the broker says now (`tau serve` and `tau chat` also watch
    // the topic while they run); the pinned device stays as it was.
    let found = args(&["devices", "discover", "--wait", "1"]);
    assert!(
        found.contains("side-gate: ⚠ discovery now differs"),
        "{found}"
    );
    let run = chat(
        &tau,
        &config,
        &[json!({"tool": "device_set", "input": {"device": "side-gate", "action": "open"}})],
        "n\n",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    // Rows the terminal wrapped, joined again.
    let shown = from_question(&run.stdout).replace(" ↩\n  │   ", " ");
    assert!(
        shown.contains("▶ OPEN · Side gate (garden) — a lock-class device"),
        "{shown}"
    );
    assert!(
        shown.contains("⚠ discovery: Home Assistant discovery now describes this device differently; tau keeps what you pinned"),
        "{shown}"
    );
    assert!(
        shown.contains("name \"kitchen light\" (pinned: \"Side gate\")"),
        "{shown}"
    );
    assert!(!shown.contains("▶ OPEN · kitchen light"), "{shown}");
    let listed = args(&["devices", "list"]);
    assert!(
        listed.contains("side-gate      Side gate (garden)"),
        "{listed}"
    );
}
