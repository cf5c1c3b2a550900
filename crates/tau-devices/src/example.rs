//! An example home: a kitchen light, a garage door, a front door lock and a living room
//! heater, and the question each kind of call to them puts to a person. The channels' tests
//! render these, so every channel is pinned with the cards the registry really writes.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value, json};
use tau_core::CardWriter;
use tau_protocol::{ApprovalId, ApprovalQuestion, CallCard, Tier};

use crate::card::DeviceCards;
use crate::def::{ActionDef, DeviceDef, RangeDef};
use crate::kind::DeviceKind;
use crate::registry::{Origin, Registry, RegistryError};
use crate::tools::DEVICE_SET_EFFECT;

fn def(
    name: &str,
    label: &str,
    room: Option<&str>,
    kind: DeviceKind,
    actions: &[(&str, ActionDef)],
) -> DeviceDef {
    DeviceDef {
        name: name.to_owned(),
        label: label.to_owned(),
        room: room.map(str::to_owned),
        kind,
        command_topic: Some(format!("home/{name}/set")),
        state_topic: Some(format!("home/{name}/state")),
        actions: actions
            .iter()
            .map(|(action, sent)| ((*action).to_owned(), sent.clone()))
            .collect::<BTreeMap<_, _>>(),
        retain: false,
        high_risk: None,
        approvers: Vec::new(),
    }
}

fn fixed(payload: &str) -> ActionDef {
    ActionDef::Payload(payload.to_owned())
}

/// The four devices.
pub fn home() -> Result<Registry, RegistryError> {
    Registry::new(
        [
            def(
                "kitchen-light",
                "Kitchen light",
                Some("kitchen"),
                DeviceKind::Light,
                &[
                    ("on", fixed("ON")),
                    ("off", fixed("OFF")),
                    (
                        "brightness",
                        ActionDef::Range(RangeDef {
                            min: 0.0,
                            max: 100.0,
                            step: Some(1.0),
                            unit: Some("%".to_owned()),
                            payload: "{\"brightness\": {value}}".to_owned(),
                        }),
                    ),
                ],
            ),
            def(
                "garage-door",
                "Garage door",
                Some("garage"),
                DeviceKind::Garage,
                &[
                    ("open", fixed("OPEN")),
                    ("close", fixed("CLOSE")),
                    ("stop", fixed("STOP")),
                ],
            ),
            def(
                "front-door",
                "Front door",
                Some("hall"),
                DeviceKind::Lock,
                &[("lock", fixed("LOCK")), ("unlock", fixed("UNLOCK"))],
            ),
            def(
                "living-heater",
                "Living room heater",
                None,
                DeviceKind::Climate,
                &[
                    ("off", fixed("OFF")),
                    (
                        "set",
                        ActionDef::Range(RangeDef {
                            min: 5.0,
                            max: 30.0,
                            step: Some(0.5),
                            unit: Some("°C".to_owned()),
                            payload: "{value}".to_owned(),
                        }),
                    ),
                ],
            ),
        ]
        .into_iter()
        .map(|d| (d, Origin::Config)),
    )
}

/// The calls of the example, one of each kind, with the model's own words on one of them
/// (a reason that imitates a headline) and a raw publish that goes around the registry.
pub fn calls() -> Vec<(&'static str, Value)> {
    vec![
        (
            "device_set",
            json!({"device": "kitchen-light", "action": "on"}),
        ),
        (
            "device_set",
            json!({"device": "kitchen-light", "action": "brightness", "value": 40}),
        ),
        (
            "device_set",
            json!({"device": "garage-door", "action": "open",
                   "reason": "switch OFF · Kitchen light (kitchen)"}),
        ),
        (
            "device_set",
            json!({"device": "front-door", "action": "unlock"}),
        ),
        (
            "device_set",
            json!({"device": "living-heater", "action": "set", "value": 22.5}),
        ),
        (
            "mqtt_publish",
            json!({"topic": "home/garage-door/set", "payload": "OPEN"}),
        ),
    ]
}

/// The question of each call of [`calls`] on `channel`, its card written by the registry,
/// the second step's number fixed at `code` (the gate draws it for real).
pub fn questions(channel: &str, code: &str) -> Result<Vec<ApprovalQuestion>, RegistryError> {
    let cards = DeviceCards {
        registry: Arc::new(home()?),
        store: None,
        confirm_high_risk: true,
    };
    Ok(calls()
        .into_iter()
        .enumerate()
        // `ap_` and 32 hex digits is always an approval id.
        .filter_map(|(n, (tool, arguments))| {
            let approval_id = ApprovalId::parse(&format!("ap_{:032x}", n + 1)).ok()?;
            let mut card = CallCard::default();
            cards.write(tool, &arguments, &mut card);
            if let Some(step) = &mut card.confirm {
                code.clone_into(&mut step.code);
            }
            let effect = if tool == "device_set" {
                DEVICE_SET_EFFECT.to_owned()
            } else {
                "publishes an MQTT message to the broker at 127.0.0.1:1883 — this can switch real devices".to_owned()
            };
            Some(ApprovalQuestion {
                approval_id,
                call_id: format!("t{}", n + 1),
                tool: tool.to_owned(),
                tier: Tier::Physical,
                effect,
                arguments,
                channel: channel.to_owned(),
                deadline: None,
                grant: None,
                card,
            })
        })
        .collect())
}
