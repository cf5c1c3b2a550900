//! `tau devices` end to end: devices in `tau.toml` and added by hand, Home Assistant
//! discovery against a real Mosquitto broker (a proposal is added only by `pin`, and a
//! later rename never changes a pinned device), and routines that call `device_set`
//! against a device stand-in on the broker.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::Tau;
use pretty_assertions::assert_eq;
use tau_test_support::{DeviceStandIn, Mosquitto, StandInSpec, publish};

const KITCHEN: &str = r#"
[[devices]]
name = "kitchen-light"
label = "Kitchen light"
room = "kitchen"
kind = "light"
command_topic = "home/kitchen/light/set"
state_topic = "home/kitchen/light/state"
actions = { on = "ON", off = "OFF" }
"#;

const GARAGE_TOPIC: &str = "homeassistant/cover/garage/config";
const GARAGE: &str = r#"{"name":"Garage door","device_class":"garage","command_topic":"home/garage/door/set","state_topic":"home/garage/door/state","device":{"name":"Opener","suggested_area":"garage"}}"#;

fn config(tau: &Tau, port: u16, extra: &str) -> PathBuf {
    tau.config(&format!("[tools.mqtt]\nport = {port}\n{KITCHEN}{extra}"))
}

fn ok(tau: &Tau, config: &Path, args: &[&str]) -> String {
    let mut all = vec!["--config", config.to_str().unwrap()];
    all.extend_from_slice(args);
    let run = tau.run(&all, "");
    assert_eq!(run.code, 0, "tau {args:?}: {}", run.stderr);
    run.stdout
}

fn fails(tau: &Tau, config: &Path, args: &[&str]) -> (i32, String) {
    let mut all = vec!["--config", config.to_str().unwrap()];
    all.extend_from_slice(args);
    let run = tau.run(&all, "");
    (run.code, run.stderr)
}

#[test]
fn devices_are_added_listed_shown_and_removed() {
    let tau = Tau::new();
    let config = config(&tau, 1883, "");
    let added = ok(
        &tau,
        &config,
        &[
            "devices",
            "add",
            "living-heater",
            "--label",
            "Living room heater",
            "--kind",
            "climate",
            "--command-topic",
            "home/living/heater/set",
            "--range",
            "set=5:30:0.5",
            "--unit",
            "set=°C",
            "--action",
            "off=OFF",
        ],
    );
    assert_eq!(
        added,
        "added living-heater: Living room heater, a climate (off, set)\n"
    );
    ok(
        &tau,
        &config,
        &[
            "devices",
            "add",
            "front-door",
            "--label",
            "Front door",
            "--room",
            "hall",
            "--kind",
            "lock",
            "--command-topic",
            "home/hall/door/set",
            "--action",
            "lock=LOCK",
            "--action",
            "unlock=UNLOCK",
        ],
    );
    let listed = ok(&tau, &config, &["devices", "list"]);
    let shown = ok(&tau, &config, &["devices", "show", "front-door"]);
    insta::assert_snapshot!(format!("{listed}\n{shown}"));
    // The model sees them too.
    let tools = ok(&tau, &config, &["tools"]);
    assert!(
        tools.contains("device_set         2  sends a command"),
        "{tools}"
    );

    assert_eq!(
        fails(&tau, &config, &["devices", "remove", "kitchen-light"]),
        (
            2,
            "tau: 'kitchen-light' is in tau.toml; remove its [[devices]] entry there\n".into()
        )
    );
    assert_eq!(
        ok(&tau, &config, &["devices", "remove", "front-door"]),
        "removed front-door\n"
    );
    assert!(!ok(&tau, &config, &["devices", "list"]).contains("front-door"));
    for (args, expected) in [
        (
            vec![
                "devices",
                "add",
                "yes",
                "--label",
                "Y",
                "--kind",
                "switch",
                "--command-topic",
                "a",
                "--action",
                "on=1",
            ],
            "tau: devices.yes.name: \"yes\" answers questions; a device needs a name that typing it is a deliberate step\n",
        ),
        (
            vec![
                "devices",
                "add",
                "kitchen-light",
                "--label",
                "Again",
                "--kind",
                "switch",
                "--command-topic",
                "b",
                "--action",
                "on=1",
            ],
            "tau: devices.kitchen-light: a device named 'kitchen-light' is already registered (from the config)\n",
        ),
        (
            vec![
                "devices",
                "add",
                "twin",
                "--label",
                "Twin",
                "--kind",
                "light",
                "--command-topic",
                "home/kitchen/light/set",
                "--action",
                "on=1",
            ],
            "tau: devices.twin.command_topic: 'home/kitchen/light/set' is already the command topic of 'kitchen-light'; one topic, one device\n",
        ),
        (
            vec![
                "devices", "add", "toaster", "--label", "T", "--kind", "toaster",
            ],
            "tau: --kind \"toaster\": the kinds are light, switch, plug, fan, lock, cover, garage, valve, climate, heater, sensor\n",
        ),
        (
            vec!["devices", "show", "oven"],
            "tau: there is no device named \"oven\"; the devices are: kitchen-light, living-heater\n",
        ),
    ] {
        assert_eq!(
            fails(&tau, &config, &args),
            (2, expected.to_owned()),
            "{args:?}"
        );
    }
}

#[test]
fn a_device_mistake_in_tau_toml_names_its_key() {
    let tau = Tau::new();
    let cases = [
        (
            "[devices]\nconfirm_high_risk = false\n".to_owned(),
            "devices: write each device as a [[devices]] table; the second step for lock-class devices is [approval] confirm_high_risk",
        ),
        (
            KITCHEN.replace("kind = \"light\"", "kind = \"garage\""),
            "devices.kitchen-light.actions: \"off\" is not an action of a garage; a garage has open, close, stop",
        ),
        (
            format!(
                "{KITCHEN}{}",
                KITCHEN.replace("kitchen-light", "other-light")
            ),
            "devices.other-light.command_topic: 'home/kitchen/light/set' is already the command topic of 'kitchen-light'; one topic, one device",
        ),
        (
            KITCHEN.replace("room = \"kitchen\"", "room = \"kitchen\\u202e\""),
            "devices.kitchen-light.room: must be 1 to 40 characters on one line, with nothing tau would have to escape, got \"kitchen\\u{202e}\"",
        ),
    ];
    for (text, expected) in cases {
        let path = tau.config(&text);
        let run = tau.run(&["--config", path.to_str().unwrap(), "config", "check"], "");
        assert_eq!(
            (run.code, run.stderr),
            (2, format!("tau: {}: {expected}\n", path.display())),
            "{text}"
        );
    }
}

fn broker() -> Option<Mosquitto> {
    Mosquitto::start("allow_anonymous true").unwrap()
}

#[test]
fn discovery_proposes_only_pin_adds_and_a_later_rename_changes_nothing_pinned() {
    let Some(broker) = broker() else { return };
    let port = broker.port;
    publish(port, GARAGE_TOPIC, GARAGE, true).unwrap();
    publish(
        port,
        "homeassistant/camera/door/config",
        r#"{"name":"Door cam\u202e"}"#,
        true,
    )
    .unwrap();
    let tau = Tau::new();
    let config = config(&tau, port, "");
    let found = ok(&tau, &config, &["devices", "discover", "--wait", "1"]);
    insta::assert_snapshot!("discovered", found.replace(&port.to_string(), "PORT"));
    // Proposed is not added.
    assert!(!ok(&tau, &config, &["devices", "list"]).contains("garage"));
    let pinned = ok(&tau, &config, &["devices", "pin", "garage-door"]);
    assert_eq!(
        pinned,
        "pinned garage-door: Garage door (garage), a garage, lock-class (open, close, stop); its name and room stay as pinned whatever discovery says later\n"
    );

    // Anyone on the broker may publish a new config: the garage now claims to be the
    // kitchen light, in the kitchen.
    let renamed = GARAGE.replace("Garage door", "kitchen light").replace(
        "\"suggested_area\":\"garage\"",
        "\"suggested_area\":\"kitchen\"",
    );
    publish(port, GARAGE_TOPIC, &renamed, true).unwrap();
    let again = ok(&tau, &config, &["devices", "discover", "--wait", "1"]);
    assert!(
        again.contains("garage-door: ⚠ discovery now differs; tau keeps what you pinned: name \"kitchen light\" (pinned: \"Garage door\"); room \"kitchen\" (pinned: \"garage\")"),
        "{again}"
    );
    let listed = ok(&tau, &config, &["devices", "list"]);
    insta::assert_snapshot!("listed_after_the_rename", listed);
    let shown = ok(&tau, &config, &["devices", "show", "garage-door"]);
    insta::assert_snapshot!("shown_after_the_rename", shown);
    // Pinning it again, or pinning the renamed config, is not possible: the topic is pinned.
    assert_eq!(
        fails(&tau, &config, &["devices", "pin", "kitchen-light-2"]).0,
        2
    );
}

#[test]
fn a_discovery_label_tau_would_have_to_escape_is_pinned_only_with_words_of_your_own() {
    let Some(broker) = broker() else { return };
    let port = broker.port;
    publish(
        port,
        "homeassistant/switch/pump/config",
        r#"{"name":"Pump\u202e","command_topic":"home/pump/set"}"#,
        true,
    )
    .unwrap();
    let tau = Tau::new();
    let config = config(&tau, port, "");
    let found = ok(&tau, &config, &["devices", "discover", "--wait", "1"]);
    assert!(found.contains("  pump  Pump\\u{202e}, a switch"), "{found}");
    let (code, stderr) = fails(&tau, &config, &["devices", "pin", "pump"]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("devices.pump.label: must be 1 to 60 characters"),
        "{stderr}"
    );
    assert!(
        stderr.ends_with("pin it with --label, --room or --as to give it words of your own\n"),
        "{stderr}"
    );
    let pinned = ok(
        &tau,
        &config,
        &[
            "devices",
            "pin",
            "pump",
            "--label",
            "Garden pump",
            "--room",
            "garden",
        ],
    );
    assert!(
        pinned.starts_with("pinned pump: Garden pump (garden), a switch"),
        "{pinned}"
    );
}

#[test]
fn a_routine_switches_a_device_through_device_set_without_asking() {
    let Some(broker) = broker() else { return };
    let port = broker.port;
    let porch = DeviceStandIn::start(
        port,
        StandInSpec {
            client_id: "porch-light".into(),
            command_topic: "home/porch/light/set".into(),
            state_topic: "home/porch/light/state".into(),
            initial_state: Some("OFF".into()),
            states: Vec::new(),
        },
    )
    .unwrap();
    let tau = Tau::new();
    let config = config(
        &tau,
        port,
        r#"
[[devices]]
name = "porch-light"
label = "Porch light"
room = "porch"
kind = "light"
command_topic = "home/porch/light/set"
state_topic = "home/porch/light/state"
actions = { on = "ON", off = "OFF" }

[[routines]]
name = "porch"
cron = "0 19 * * *"
tool = "device_set"
arguments = { device = "porch-light", action = "on" }
"#,
    );
    let run = ok(&tau, &config, &["routines", "run", "porch"]);
    assert!(run.contains("routine porch: success"), "{run}");
    assert_eq!(porch.wait_for_commands(1, Duration::from_secs(20)), ["ON"]);
    let calls: Vec<_> = tau
        .audit_events()
        .into_iter()
        .filter(|e| e["type"] == "tool_call")
        .map(|e| {
            (
                e["tool"].clone(),
                e["approval"].clone(),
                e["decided_by"].clone(),
            )
        })
        .collect();
    assert_eq!(
        calls,
        vec![(
            "device_set".into(),
            "exempt".into(),
            serde_json::json!({"kind": "exemption", "name": "routine:porch"})
        )]
    );

    // A routine naming a device the registry does not have is a config error.
    let bad = tau.config(&format!(
        "{KITCHEN}\n[[routines]]\nname = \"oven\"\ncron = \"0 19 * * *\"\ntool = \"device_set\"\narguments = {{ device = \"oven\", action = \"on\" }}\n"
    ));
    let (code, stderr) = fails(&tau, &bad, &["routines", "list"]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("routines.oven.arguments.device"),
        "{stderr}"
    );
}
