//! Home Assistant MQTT discovery: a config published at
//! `homeassistant/<component>/[<node_id>/]<object_id>/config` read as a device proposal.
//! Discovery is unauthenticated — anyone who can publish to the broker can publish a config
//! — so a proposal is only a suggestion: the person pins it (`tau devices pin NAME`), and a
//! pinned device never changes when its config does; the difference is shown as a warning.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use crate::def::{ActionDef, DeviceDef, MAX_NAME_CHARS, RangeDef, VALUE_PLACEHOLDER, name_problem};
use crate::kind::DeviceKind;
use tau_state::SeenConfig;

/// The topics `tau devices discover` subscribes to under a discovery prefix.
pub fn filters(prefix: &str) -> [String; 2] {
    [
        format!("{prefix}/+/+/config"),
        format!("{prefix}/+/+/+/config"),
    ]
}

/// The long names of the abbreviations tau reads.
const ABBREVIATIONS: [(&str, &str); 16] = [
    ("uniq_id", "unique_id"),
    ("obj_id", "object_id"),
    ("cmd_t", "command_topic"),
    ("stat_t", "state_topic"),
    ("pl_on", "payload_on"),
    ("pl_off", "payload_off"),
    ("pl_lock", "payload_lock"),
    ("pl_unlk", "payload_unlock"),
    ("pl_open", "payload_open"),
    ("pl_cls", "payload_close"),
    ("pl_stop", "payload_stop"),
    ("dev_cla", "device_class"),
    ("temp_cmd_t", "temperature_command_topic"),
    ("temp_unit", "temperature_unit"),
    ("dev", "device"),
    ("sa", "suggested_area"),
];

/// A discovery config as a device, before it has a name of its own.
#[derive(Debug, Clone, PartialEq)]
pub struct Proposal {
    /// The topic the config was published at.
    pub topic: String,
    /// The device it describes (named by [`name_proposals`]), or why tau cannot use it.
    pub def: Result<DeviceDef, String>,
}

fn long_keys(object: &Map<String, Value>) -> Map<String, Value> {
    object
        .iter()
        .map(|(key, value)| {
            let long = ABBREVIATIONS
                .iter()
                .find(|(short, _)| short == key)
                .map_or(key.as_str(), |(_, long)| long);
            let value = match value {
                Value::Object(inner) => Value::Object(long_keys(inner)),
                other => other.clone(),
            };
            (long.to_owned(), value)
        })
        .collect()
}

/// The component of a discovery topic: `cover` in `homeassistant/cover/garage/config`.
fn component(topic: &str) -> Option<&str> {
    let parts: Vec<&str> = topic.split('/').collect();
    match parts.as_slice() {
        [_, component, _, "config"] | [_, component, _, _, "config"] => Some(component),
        _ => None,
    }
}

/// Reads one config; the device is named `unnamed` until [`name_proposals`] names it.
pub fn propose(topic: &str, payload: &str) -> Proposal {
    Proposal {
        topic: topic.to_owned(),
        def: read_config(topic, payload),
    }
}

fn read_config(topic: &str, payload: &str) -> Result<DeviceDef, String> {
    let component = component(topic).ok_or("not a discovery config topic")?;
    let Ok(Value::Object(raw)) = serde_json::from_str::<Value>(payload) else {
        return Err("the config is not a JSON object".into());
    };
    let config = long_keys(&raw);
    let base = config.get("~").and_then(Value::as_str).unwrap_or("");
    let text = |key: &str| config.get(key).and_then(Value::as_str).map(str::to_owned);
    let topic_of = |key: &str| {
        text(key).map(|t| {
            if let Some(rest) = t.strip_prefix('~') {
                format!("{base}{rest}")
            } else if let Some(rest) = t.strip_suffix('~') {
                format!("{rest}{base}")
            } else {
                t
            }
        })
    };
    let payload = |key: &str, default: &str| match config.get(key) {
        Some(Value::String(p)) => Some(p.clone()),
        Some(Value::Null) => None,
        Some(other) => Some(other.to_string()),
        None => Some(default.to_owned()),
    };
    let device = config.get("device").and_then(Value::as_object);
    let label = text("name")
        .or_else(|| {
            device
                .and_then(|d| d.get("name"))
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .ok_or("the config has no name")?;
    let room = device
        .and_then(|d| d.get("suggested_area"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let mut actions = BTreeMap::new();
    let mut add = |name: &str, value: Option<String>| {
        if let Some(value) = value {
            actions.insert(name.to_owned(), ActionDef::Payload(value));
        }
    };
    let json_light = text("schema").as_deref() == Some("json");
    let (kind, command_topic) = match component {
        "light" | "switch" | "fan" => {
            if json_light {
                add("on", Some("{\"state\":\"ON\"}".into()));
                add("off", Some("{\"state\":\"OFF\"}".into()));
            } else {
                add("on", payload("payload_on", "ON"));
                add("off", payload("payload_off", "OFF"));
            }
            let kind = match component {
                "light" => DeviceKind::Light,
                "fan" => DeviceKind::Fan,
                _ => DeviceKind::Switch,
            };
            (kind, topic_of("command_topic"))
        }
        "lock" => {
            add("lock", payload("payload_lock", "LOCK"));
            add("unlock", payload("payload_unlock", "UNLOCK"));
            if config.contains_key("payload_open") {
                add("open", payload("payload_open", "OPEN"));
            }
            (DeviceKind::Lock, topic_of("command_topic"))
        }
        "cover" => {
            add("open", payload("payload_open", "OPEN"));
            add("close", payload("payload_close", "CLOSE"));
            add("stop", payload("payload_stop", "STOP"));
            let class = text("device_class");
            let kind = if matches!(class.as_deref(), Some("garage" | "gate")) {
                DeviceKind::Garage
            } else {
                DeviceKind::Cover
            };
            (kind, topic_of("command_topic"))
        }
        "valve" => {
            add("open", payload("payload_open", "OPEN"));
            add("close", payload("payload_close", "CLOSE"));
            (DeviceKind::Valve, topic_of("command_topic"))
        }
        "climate" | "water_heater" => {
            let number = |key: &str, default: f64| {
                config.get(key).and_then(Value::as_f64).unwrap_or(default)
            };
            let unit = match text("temperature_unit").as_deref() {
                Some("F") => "°F",
                _ => "°C",
            };
            actions.insert(
                "set".to_owned(),
                ActionDef::Range(RangeDef {
                    min: number("min_temp", 7.0),
                    max: number("max_temp", 35.0),
                    step: Some(number("temp_step", 0.5)),
                    unit: Some(unit.to_owned()),
                    payload: VALUE_PLACEHOLDER.to_owned(),
                }),
            );
            let kind = if component == "water_heater" {
                DeviceKind::Heater
            } else {
                DeviceKind::Climate
            };
            (kind, topic_of("temperature_command_topic"))
        }
        "sensor" | "binary_sensor" => (DeviceKind::Sensor, None),
        other => {
            return Err(format!(
                "tau has no device kind for a Home Assistant '{}'",
                other.chars().take(40).collect::<String>()
            ));
        }
    };
    if kind != DeviceKind::Sensor && command_topic.is_none() {
        return Err("the config names no command topic".into());
    }
    Ok(DeviceDef {
        name: "unnamed".to_owned(),
        label,
        room,
        kind,
        command_topic,
        state_topic: topic_of("state_topic"),
        actions,
        retain: false,
        high_risk: None,
        approvers: Vec::new(),
    })
}

/// A device name from a label: `Garage door` -> `garage-door`.
fn slug(label: &str) -> String {
    let mut name = String::new();
    for c in label.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            name.push(c);
        } else if !name.ends_with('-') && !name.is_empty() {
            name.push('-');
        }
    }
    let mut name: String = name
        .trim_end_matches('-')
        .chars()
        .take(MAX_NAME_CHARS - 3)
        .collect();
    name = name.trim_end_matches('-').to_owned();
    if name_problem(&name).is_some() {
        name = format!("device-{name}").trim_end_matches('-').to_owned();
    }
    name
}

/// Names every proposal that reads: its label as a slug, made unique against `taken` (the
/// registered names) and the proposals before it, in topic order.
pub fn name_proposals(proposals: &mut [Proposal], taken: &BTreeSet<String>) {
    proposals.sort_by(|a, b| a.topic.cmp(&b.topic));
    let mut used = taken.clone();
    for proposal in proposals.iter_mut() {
        if let Ok(def) = &mut proposal.def {
            let base = slug(&def.label);
            let mut name = base.clone();
            let mut n = 2;
            while used.contains(&name) {
                name = format!("{base}-{n}");
                n += 1;
            }
            used.insert(name.clone());
            def.name = name;
        }
    }
}

/// How the latest config at a pinned device's discovery topic differs from what the person
/// pinned, one line per key. Values from the config are quoted: they are untrusted.
pub fn mismatch(pinned: &DeviceDef, latest: Option<&SeenConfig>) -> Vec<String> {
    let Some(latest) = latest else {
        return vec!["its discovery config was removed from the broker".to_owned()];
    };
    let def = match propose(&latest.topic, &latest.payload).def {
        Ok(def) => def,
        Err(problem) => return vec![format!("its discovery config no longer reads: {problem}")],
    };
    let mut lines = Vec::new();
    let mut differ = |key: &str, now: String, kept: String| {
        if now != kept {
            lines.push(format!("{key} {now} (pinned: {kept})"));
        }
    };
    let quote =
        |text: Option<&String>| text.map_or_else(|| "none".to_owned(), |t| format!("{t:?}"));
    differ("name", quote(Some(&def.label)), quote(Some(&pinned.label)));
    differ(
        "room",
        quote(def.room.as_ref()),
        quote(pinned.room.as_ref()),
    );
    differ("kind", def.kind.to_string(), pinned.kind.to_string());
    differ(
        "command topic",
        quote(def.command_topic.as_ref()),
        quote(pinned.command_topic.as_ref()),
    );
    differ(
        "state topic",
        quote(def.state_topic.as_ref()),
        quote(pinned.state_topic.as_ref()),
    );
    if def.actions != pinned.actions {
        lines.push("its actions or payloads differ".to_owned());
    }
    lines
}

#[cfg(test)]
#[path = "discovery_tests.rs"]
mod tests;
