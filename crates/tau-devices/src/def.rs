//! A device as written (`[[devices]]` in `tau.toml`, `tau devices add`, a pinned discovery
//! proposal) and the checks that make it a [`Device`] tau can act on. Every error names the
//! device and the key.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};

use crate::kind::{ActionName, DeviceKind};

/// The longest device name: what the model names and the person may type to confirm.
pub const MAX_NAME_CHARS: usize = 40;
const MIN_NAME_CHARS: usize = 3;
const MAX_LABEL_CHARS: usize = 60;
const MAX_ROOM_CHARS: usize = 40;
const MAX_UNIT_CHARS: usize = 12;
/// A payload larger than this is no device command.
pub const MAX_PAYLOAD_BYTES: usize = 4096;
/// Where a number goes in a payload template.
pub const VALUE_PLACEHOLDER: &str = "{value}";
/// Words that answer a plain question; a device name must never be one, so typing it is
/// always a deliberate step.
const ANSWER_WORDS: [&str; 4] = ["yes", "evet", "no", "hayir"];

/// `[[devices]]`: one device as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceDef {
    /// What the model names: `kitchen-light`.
    pub name: String,
    /// What the person reads: `Kitchen light`.
    pub label: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub room: Option<String>,
    pub kind: DeviceKind,
    /// Where commands go; every kind but `sensor` needs one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command_topic: Option<String>,
    /// Where the device reports its state (retained), if it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_topic: Option<String>,
    /// Action name -> payload, or a number range for `set`, `brightness`, `position`, `speed`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub actions: BTreeMap<String, ActionDef>,
    /// Whether commands are published retained (default false).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub retain: bool,
    /// Overrides the kind's lock class: `true` asks the second step for a plug that powers
    /// a heater, `false` drops it for a cover that is only a blind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub high_risk: Option<bool>,
    /// The people of `[[people]]` who alone may answer a question to act on it, wherever
    /// it was asked; empty: the conversation's person answers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approvers: Vec<String>,
}

/// What an action sends.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ActionDef {
    /// A fixed payload: `on = "ON"`.
    Payload(String),
    /// A number in a range: `set = { min = 5, max = 30, step = 0.5, unit = "°C" }`.
    Range(RangeDef),
}

/// A number an action takes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RangeDef {
    pub min: f64,
    pub max: f64,
    /// Allowed values are `min + k * step`; none: any number in the range.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
    /// The payload, with `{value}` where the number goes (default: the number alone).
    #[serde(default = "default_template")]
    pub payload: String,
}

fn default_template() -> String {
    VALUE_PLACEHOLDER.to_owned()
}

impl<'de> Deserialize<'de> for ActionDef {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ActionVisitor;
        impl<'de> Visitor<'de> for ActionVisitor {
            type Value = ActionDef;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a payload string or a table with min, max (step, unit, payload)")
            }
            fn visit_str<E: de::Error>(self, text: &str) -> Result<ActionDef, E> {
                Ok(ActionDef::Payload(text.to_owned()))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<ActionDef, A::Error> {
                RangeDef::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(ActionDef::Range)
            }
        }
        deserializer.deserialize_any(ActionVisitor)
    }
}

/// A device definition tau cannot act on; the message names the key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("devices.{device}.{key}: {message}")]
pub struct DeviceError {
    pub device: String,
    pub key: String,
    pub message: String,
}

impl DeviceError {
    pub(crate) fn new(device: &str, key: &str, message: impl Into<String>) -> Self {
        Self {
            device: device.to_owned(),
            key: key.to_owned(),
            message: message.into(),
        }
    }
}

/// A number range, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Range {
    pub min: f64,
    pub max: f64,
    pub step: Option<f64>,
    pub unit: Option<String>,
    pub template: String,
}

/// What one action of a device sends, checked.
#[derive(Debug, Clone, PartialEq)]
pub enum ActionPayload {
    Fixed(String),
    Number(Range),
}

/// A device tau can act on: every key checked against its kind.
#[derive(Debug, Clone, PartialEq)]
pub struct Device {
    pub name: String,
    pub label: String,
    pub room: Option<String>,
    pub kind: DeviceKind,
    pub command_topic: Option<String>,
    pub state_topic: Option<String>,
    pub actions: BTreeMap<ActionName, ActionPayload>,
    pub retain: bool,
    /// Whether its approval may ask for the second step.
    pub lock_class: bool,
    /// The definition it was made from.
    pub def: DeviceDef,
}

/// True when `text` shows exactly as written: one line, nothing the display function
/// would escape or mark.
pub(crate) fn is_plain(text: &str) -> bool {
    !text.is_empty() && text.trim() == text && tau_core::display(text) == text
}

/// A device name: 3 to 40 of `a-z`, `0-9`, `-`, starting with a letter, never a word
/// that answers a question.
pub fn name_problem(name: &str) -> Option<String> {
    let count = name.chars().count();
    if !(MIN_NAME_CHARS..=MAX_NAME_CHARS).contains(&count) {
        return Some(format!(
            "must be {MIN_NAME_CHARS} to {MAX_NAME_CHARS} characters, got {count}"
        ));
    }
    if !name.starts_with(|c: char| c.is_ascii_lowercase())
        || !name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    {
        return Some(format!(
            "must start with a-z and hold only a-z, 0-9 and '-', got {name:?}"
        ));
    }
    if ANSWER_WORDS.contains(&name) {
        return Some(format!(
            "{name:?} answers questions; a device needs a name that typing it is a deliberate step"
        ));
    }
    None
}

fn check_text(device: &str, key: &str, text: &str, max: usize) -> Result<(), DeviceError> {
    if !is_plain(text) || text.chars().count() > max {
        return Err(DeviceError::new(
            device,
            key,
            format!(
                "must be 1 to {max} characters on one line, with nothing tau would have to escape, got {}",
                tau_core::display(&format!("{text:?}"))
            ),
        ));
    }
    Ok(())
}

fn check_topic(device: &str, key: &str, topic: &str) -> Result<(), DeviceError> {
    tau_tools::check_topic(topic).map_err(|error| DeviceError::new(device, key, error.message))?;
    if !is_plain(topic) {
        return Err(DeviceError::new(
            device,
            key,
            "must show as written: no controls, format characters or spaces at either end",
        ));
    }
    Ok(())
}

impl DeviceDef {
    /// Checks every key against the kind; the first problem, naming its key.
    pub fn check(&self) -> Result<Device, DeviceError> {
        let name = &self.name;
        if let Some(problem) = name_problem(name) {
            return Err(DeviceError::new(name, "name", problem));
        }
        check_text(name, "label", &self.label, MAX_LABEL_CHARS)?;
        if let Some(room) = &self.room {
            check_text(name, "room", room, MAX_ROOM_CHARS)?;
        }
        if let Some(topic) = &self.state_topic {
            check_topic(name, "state_topic", topic)?;
        }
        let actions = self.check_actions()?;
        match (&self.command_topic, actions.is_empty()) {
            (Some(topic), false) => check_topic(name, "command_topic", topic)?,
            (None, false) => {
                return Err(DeviceError::new(
                    name,
                    "command_topic",
                    "is required: the topic the device's commands go to",
                ));
            }
            (Some(_), true) => {
                return Err(DeviceError::new(
                    name,
                    "actions",
                    "a device with a command_topic needs at least one action",
                ));
            }
            (None, true) if self.state_topic.is_none() => {
                return Err(DeviceError::new(
                    name,
                    "state_topic",
                    "a device without actions is read from its state_topic, which is missing",
                ));
            }
            (None, true) => {}
        }
        Ok(Device {
            name: name.clone(),
            label: self.label.clone(),
            room: self.room.clone(),
            kind: self.kind,
            command_topic: self.command_topic.clone(),
            state_topic: self.state_topic.clone(),
            actions,
            retain: self.retain,
            lock_class: self.high_risk.unwrap_or(self.kind.lock_class()),
            def: self.clone(),
        })
    }

    fn check_actions(&self) -> Result<BTreeMap<ActionName, ActionPayload>, DeviceError> {
        let name = &self.name;
        let allowed = self.kind.actions();
        let listed = || {
            let names: Vec<_> = allowed.iter().map(|a| a.as_str()).collect();
            if names.is_empty() {
                format!("a {} has no actions", self.kind)
            } else {
                format!("a {} has {}", self.kind, names.join(", "))
            }
        };
        let mut actions = BTreeMap::new();
        for (key, def) in &self.actions {
            let action = ActionName::parse(key)
                .filter(|action| allowed.contains(action))
                .ok_or_else(|| {
                    DeviceError::new(
                        name,
                        "actions",
                        format!(
                            "{:?} is not an action of a {}; {}",
                            key,
                            self.kind,
                            listed()
                        ),
                    )
                })?;
            let at = format!("actions.{action}");
            let payload = match (def, action.takes_value()) {
                (ActionDef::Payload(payload), false) => {
                    check_payload(name, &at, payload)?;
                    ActionPayload::Fixed(payload.clone())
                }
                (ActionDef::Range(range), true) => {
                    ActionPayload::Number(check_range(name, &at, range)?)
                }
                (ActionDef::Payload(_), true) => {
                    return Err(DeviceError::new(
                        name,
                        &at,
                        "takes a number: write { min = ..., max = ... } (step, unit and payload are optional)",
                    ));
                }
                (ActionDef::Range(_), false) => {
                    return Err(DeviceError::new(
                        name,
                        &at,
                        "takes no number: write the payload it sends, e.g. \"ON\"",
                    ));
                }
            };
            actions.insert(action, payload);
        }
        Ok(actions)
    }
}

fn check_payload(device: &str, key: &str, payload: &str) -> Result<(), DeviceError> {
    if payload.len() > MAX_PAYLOAD_BYTES {
        return Err(DeviceError::new(
            device,
            key,
            format!(
                "is {} bytes; a payload is at most {MAX_PAYLOAD_BYTES}",
                payload.len()
            ),
        ));
    }
    Ok(())
}

fn check_range(device: &str, key: &str, range: &RangeDef) -> Result<Range, DeviceError> {
    let RangeDef {
        min,
        max,
        step,
        unit,
        payload,
    } = range;
    if !(min.is_finite() && max.is_finite() && min < max) {
        return Err(DeviceError::new(
            device,
            key,
            format!("min must be below max, got {min} and {max}"),
        ));
    }
    if let Some(step) = step
        && !(step.is_finite() && *step > 0.0 && *step <= max - min)
    {
        return Err(DeviceError::new(
            device,
            &format!("{key}.step"),
            format!("must be above 0 and at most max - min, got {step}"),
        ));
    }
    if let Some(unit) = unit {
        check_text(device, &format!("{key}.unit"), unit, MAX_UNIT_CHARS)?;
    }
    check_payload(device, &format!("{key}.payload"), payload)?;
    if payload.matches(VALUE_PLACEHOLDER).count() != 1 {
        return Err(DeviceError::new(
            device,
            &format!("{key}.payload"),
            format!("must hold {VALUE_PLACEHOLDER} exactly once, where the number goes"),
        ));
    }
    Ok(Range {
        min: *min,
        max: *max,
        step: *step,
        unit: unit.clone(),
        template: payload.clone(),
    })
}

#[cfg(test)]
#[path = "def_tests.rs"]
mod tests;
