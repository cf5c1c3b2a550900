//! The device tools against a real Mosquitto broker (started per test on a free loopback
//! port) and a small device stand-in that subscribes to its command topic and publishes
//! its new state, retained. Without a broker the tests say so and return, unless
//! `TAU_PEERS_REQUIRED=1` (set by `scripts/test`): then a missing broker fails them.
#![allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tau_agent::{SharedTool, ToolContext, ToolResultStatus};
use tau_core::approval::{ScriptedApprover, TierGate};
use tau_core::{EventBus, ToolCatalog, gated_call};
use tau_devices::{
    DeviceDef, DeviceStore, DeviceTools, Origin, ReadWait, Registry, filters, name_proposals,
    propose,
};
use tau_protocol::{CallStatus, Decision};
use tau_test_support::{DeviceStandIn, Mosquitto, StandInSpec, publish};
use tau_tools::{MqttBroker, MqttConfig};

const HOME: &str = r#"
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

fn registry() -> Registry {
    #[derive(serde::Deserialize)]
    struct File {
        devices: Vec<DeviceDef>,
    }
    let file: File = toml::from_str(HOME).unwrap();
    Registry::new(file.devices.into_iter().map(|d| (d, Origin::Config))).unwrap()
}

fn broker(port: u16) -> MqttBroker {
    let config = MqttConfig {
        port,
        ..MqttConfig::default()
    };
    MqttBroker::from_config(&config, &|_| None).unwrap()
}

fn tools(port: u16, store: Option<Arc<DeviceStore>>) -> Vec<SharedTool> {
    DeviceTools {
        registry: Arc::new(registry()),
        broker: broker(port).companion("-devices"),
        store,
        wait: ReadWait {
            quiet: Duration::from_secs(1),
            limit: Duration::from_secs(20),
        },
    }
    .tools()
}

fn kitchen_light(port: u16) -> DeviceStandIn {
    DeviceStandIn::start(
        port,
        StandInSpec {
            client_id: "kitchen-light".into(),
            command_topic: "home/kitchen/light/set".into(),
            state_topic: "home/kitchen/light/state".into(),
            initial_state: Some("OFF".into()),
            states: Vec::new(),
        },
    )
    .unwrap()
}

async fn run(tools: &[SharedTool], name: &str, input: Value) -> Value {
    let tool = tools.iter().find(|t| t.spec().name == name).unwrap();
    let output = tool
        .run(input, ToolContext::new("t1", name, None))
        .await
        .unwrap();
    assert_eq!(output.status, ToolResultStatus::Success);
    match &output.content[0] {
        tau_agent::ToolResultContent::Json(value) => value.clone(),
        tau_agent::ToolResultContent::Text(text) => Value::String(text.clone()),
    }
}

/// Reads the state until it is `want` (the stand-in answers a command a moment later).
async fn state_becomes(tools: &[SharedTool], want: &str) -> Value {
    for _ in 0..40 {
        let state = run(tools, "device_state", json!({"device": "kitchen-light"})).await;
        if state["state"] == want {
            return state;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the kitchen light never reported {want}");
}

#[tokio::test]
async fn device_set_switches_the_stand_in_and_device_state_reads_its_new_state() {
    let Some(broker) = Mosquitto::start("allow_anonymous true").unwrap() else {
        return;
    };
    let light = kitchen_light(broker.port);
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(DeviceStore::new(
        tau_state::StateDb::open(&dir.path().join("state.db"))
            .unwrap()
            .devices(),
    ));
    let tools = tools(broker.port, Some(Arc::clone(&store)));

    let before = run(&tools, "device_state", json!({"device": "kitchen-light"})).await;
    assert_eq!(
        (&before["state"], &before["means"], &before["retained"]),
        (&json!("OFF"), &json!("off"), &json!(true))
    );

    let sent = run(
        &tools,
        "device_set",
        json!({"device": "kitchen-light", "action": "on"}),
    )
    .await;
    assert_eq!(
        sent,
        json!(
            "switch ON · Kitchen light (kitchen): sent \"ON\" to 'home/kitchen/light/set'; the broker acknowledged it; device_state reads what it reports now"
        )
    );
    assert_eq!(light.wait_for_commands(1, Duration::from_secs(20)), ["ON"]);
    let after = state_becomes(&tools, "ON").await;
    assert_eq!(after["means"], "on");
    assert_eq!(after["age_seconds"], 0);
    assert!(
        after["age"]
            .as_str()
            .unwrap()
            .starts_with("tau read this state for the first time just now"),
        "{after}"
    );
    // Read again: the same state, aged from when tau first read it.
    let again = run(&tools, "device_state", json!({"device": "kitchen-light"})).await;
    assert_eq!(again["seen_since"], after["seen_since"]);
    assert!(
        again["age"]
            .as_str()
            .unwrap()
            .starts_with("tau has read this same state since"),
        "{again}"
    );
}

#[tokio::test]
async fn a_device_without_a_retained_state_says_so() {
    let Some(broker) = Mosquitto::start("allow_anonymous true").unwrap() else {
        return;
    };
    let tools = tools(broker.port, None);
    let state = run(&tools, "device_state", json!({"device": "kitchen-light"})).await;
    assert_eq!(
        state,
        json!({
            "device": "kitchen-light",
            "state": null,
            "note": "nothing is retained on 'home/kitchen/light/state': the device has not reported a state tau can read",
        })
    );
}

#[tokio::test]
async fn calls_the_registry_cannot_send_are_refused_without_a_question_and_send_nothing() {
    let Some(broker) = Mosquitto::start("allow_anonymous true").unwrap() else {
        return;
    };
    let light = kitchen_light(broker.port);
    let mut catalog = ToolCatalog::new();
    catalog.extend(tools(broker.port, None)).unwrap();
    let catalog = Arc::new(catalog);
    let approver = ScriptedApprover::new([Decision::Approved]);
    let gate = TierGate::new(
        Arc::clone(&catalog) as _,
        Arc::new(approver.clone()),
        EventBus::new(),
    );
    for (arguments, reason) in [
        (
            json!({"device": "garage-door", "action": "open"}),
            "there is no device named \"garage-door\"; the devices are: kitchen-light, living-heater",
        ),
        (
            json!({"device": "kitchen-light", "action": "unlock"}),
            "device 'kitchen-light' (light) has no action \"unlock\"; its actions are: on, off",
        ),
        (
            json!({"device": "living-heater", "action": "set", "value": 45}),
            "45 is outside the range of action 'set' on device 'living-heater': a number from 5 to 30 °C in steps of 0.5",
        ),
    ] {
        let outcome = gated_call(
            &gate,
            &catalog,
            "device_set",
            "t1",
            arguments,
            ToolContext::new("t1", "device_set", None),
        )
        .await;
        assert_eq!(outcome.status, CallStatus::Invalid);
        assert_eq!(
            outcome.result.text(),
            tau_core::invalid_call_text("device_set", reason)
        );
    }
    assert_eq!(approver.requests(), vec![]);
    // The light's one command is the approved call below; nothing refused reached it.
    let outcome = gated_call(
        &gate,
        &catalog,
        "device_set",
        "t2",
        json!({"device": "kitchen-light", "action": "off"}),
        ToolContext::new("t2", "device_set", None),
    )
    .await;
    assert_eq!(outcome.status, CallStatus::Success);
    assert_eq!(approver.requests().len(), 1);
    assert_eq!(light.wait_for_commands(1, Duration::from_secs(20)), ["OFF"]);
}

#[tokio::test]
async fn retained_discovery_configs_are_read_as_proposals() {
    let Some(broker) = Mosquitto::start("allow_anonymous true").unwrap() else {
        return;
    };
    let port = broker.port;
    publish(
        port,
        "homeassistant/cover/garage/config",
        r#"{"name":"Garage door","device_class":"garage","command_topic":"home/garage/door/set"}"#,
        true,
    )
    .unwrap();
    publish(
        port,
        "homeassistant/light/node7/porch/config",
        r#"{"name":"Porch light","command_topic":"home/porch/set"}"#,
        true,
    )
    .unwrap();
    publish(port, "homeassistant/light/porch/state", "ON", true).unwrap();
    let [one, two] = filters("homeassistant");
    let messages = broker_read(port, &[&one, &two]).await;
    let mut proposals: Vec<_> = messages
        .iter()
        .map(|m| propose(&m.topic, &String::from_utf8_lossy(&m.payload)))
        .collect();
    name_proposals(&mut proposals, &BTreeSet::new());
    let names: Vec<_> = proposals
        .iter()
        .map(|p| (p.topic.as_str(), p.def.as_ref().unwrap().name.as_str()))
        .collect();
    assert_eq!(
        names,
        [
            ("homeassistant/cover/garage/config", "garage-door"),
            ("homeassistant/light/node7/porch/config", "porch-light"),
        ]
    );
}

async fn broker_read(port: u16, filters: &[&str]) -> Vec<tau_tools::MqttMessage> {
    broker(port)
        .companion("-discover")
        .read(
            filters,
            Duration::from_secs(1),
            Duration::from_secs(20),
            usize::MAX,
        )
        .await
        .unwrap()
}
