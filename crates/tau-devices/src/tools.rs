//! The device tools: `device_state {device}` (tier 0) reads the state a device last
//! reported, with its age; `device_set {device, action, value?, reason?}` (tier 2) sends
//! one of its registered actions. Both resolve the call against the registry before anyone
//! is asked (`check_input`), and again when they run.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use jiff::Timestamp;
use serde_json::{Value, json};
use tau_agent::{Tool, ToolContext, ToolError, ToolOutput, ToolSpec};
use tau_core::TauToolSpec;
use tau_protocol::Tier;
use tau_tools::MqttBroker;

use crate::card::headline;
use crate::def::ActionPayload;
use crate::kind::ActionName;
use crate::registry::{MAX_REASON_CHARS, Registered, Registry, range_text};
use crate::store::DeviceStore;

/// The effect line `device_set` is registered with: tau's words, whatever the call.
pub const DEVICE_SET_EFFECT: &str =
    "sends a command to a device in tau's registry — this acts on the real device the card names";

/// Connecting, publishing and the broker's acknowledgement together.
const SET_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a read waits for one more message, and in all.
#[derive(Debug, Clone, Copy)]
pub struct ReadWait {
    pub quiet: Duration,
    pub limit: Duration,
}

impl Default for ReadWait {
    fn default() -> Self {
        Self {
            quiet: Duration::from_secs(1),
            limit: Duration::from_secs(10),
        }
    }
}

/// What the device tools share.
#[derive(Clone)]
pub struct DeviceTools {
    pub registry: Arc<Registry>,
    /// Where commands go; a client id of its own beside `mqtt_publish`'s.
    pub broker: MqttBroker,
    /// Where states are aged; none: every state is new.
    pub store: Option<Arc<DeviceStore>>,
    pub wait: ReadWait,
}

impl DeviceTools {
    /// `device_state` and `device_set`, or nothing when no device is registered.
    pub fn tools(&self) -> Vec<tau_agent::SharedTool> {
        if self.registry.is_empty() {
            return Vec::new();
        }
        vec![
            Arc::new(DeviceState::new(self.clone())),
            Arc::new(DeviceSet::new(self.clone())),
        ]
    }
}

/// One line per device, for the descriptions the model reads.
fn catalogue(registry: &Registry, with_actions: bool) -> String {
    registry
        .devices()
        .map(|Registered { device, .. }| {
            let room = device
                .room
                .as_ref()
                .map(|room| format!(", {room}"))
                .unwrap_or_default();
            let actions: Vec<String> = device
                .actions
                .iter()
                .map(|(action, payload)| match payload {
                    ActionPayload::Fixed(_) => action.to_string(),
                    ActionPayload::Number(range) => format!("{action} ({})", range_text(range)),
                })
                .collect();
            if with_actions {
                format!(
                    "- {} ({}, {}{room}): {}",
                    device.name,
                    device.label,
                    device.kind,
                    if actions.is_empty() {
                        "no actions".to_owned()
                    } else {
                        actions.join(", ")
                    }
                )
            } else {
                format!(
                    "- {} ({}, {}{room})",
                    device.name, device.label, device.kind
                )
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

pub(crate) struct DeviceSet {
    spec: ToolSpec,
    shared: DeviceTools,
}

impl DeviceSet {
    fn new(shared: DeviceTools) -> Self {
        let registry = &shared.registry;
        let mut actions: Vec<&str> = registry
            .devices()
            .flat_map(|r| r.device.actions.keys().map(|a| a.as_str()))
            .collect();
        actions.sort_unstable();
        actions.dedup();
        let spec = TauToolSpec::new(
            "device_set",
            format!(
                "Tells one registered device to do one of its actions; the person approves each call. \
                 Give `value` only for an action that takes a number. The devices:\n{}",
                catalogue(registry, true)
            ),
            Tier::Physical,
            DEVICE_SET_EFFECT,
        )
        .provenance(tau_core::provenance::ProvenanceRule::TRUSTED_EGRESS)
        .input_schema(json!({
            "type": "object",
            "properties": {
                "device": {"type": "string", "enum": registry.names(), "description": "The device's name."},
                "action": {"type": "string", "enum": actions, "description": "One of the device's actions."},
                "value": {"type": "number", "description": "The number, for set, brightness, position or speed."},
                "reason": {"type": "string", "maxLength": MAX_REASON_CHARS, "description": "Why, in a few words; the person sees it quoted."},
            },
            "required": ["device", "action"],
            "additionalProperties": false,
        }))
        .build();
        Self { spec, shared }
    }
}

#[async_trait]
impl Tool for DeviceSet {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn check_input(&self, input: &Value) -> Result<(), ToolError> {
        self.shared
            .registry
            .resolve(input)
            .map(|_| ())
            .map_err(ToolError::new)
    }

    async fn run(&self, input: Value, _context: ToolContext) -> Result<ToolOutput, ToolError> {
        let command = self
            .shared
            .registry
            .resolve(&input)
            .map_err(ToolError::new)?;
        let device = command.device();
        self.shared
            .broker
            .publish(
                command.topic,
                command.payload.clone().into_bytes(),
                device.retain,
                SET_TIMEOUT,
            )
            .await?;
        let state = device
            .state_topic
            .as_ref()
            .map(|_| "; device_state reads what it reports now")
            .unwrap_or_default();
        Ok(ToolOutput::text(format!(
            "{}: sent {:?} to '{}'; the broker acknowledged it{state}",
            headline(&command),
            command.payload,
            command.topic,
        )))
    }
}

pub(crate) struct DeviceState {
    spec: ToolSpec,
    shared: DeviceTools,
}

impl DeviceState {
    fn new(shared: DeviceTools) -> Self {
        let names: Vec<&str> = shared
            .registry
            .devices()
            .filter(|r| r.device.state_topic.is_some())
            .map(|r| r.device.name.as_str())
            .collect();
        let spec = TauToolSpec::new(
            "device_state",
            format!(
                "Reads the state a registered device last reported (retained on its state topic), with how long tau has seen it. \
                 The devices that report a state:\n{}",
                catalogue(&shared.registry, false)
            ),
            Tier::Read,
            "reads the state a device in tau's registry last reported",
        )
        .input_schema(json!({
            "type": "object",
            "properties": {
                "device": {"type": "string", "enum": names, "description": "The device's name."},
            },
            "required": ["device"],
            "additionalProperties": false,
        }))
        .build();
        Self { spec, shared }
    }

    fn device<'a>(&'a self, input: &Value) -> Result<(&'a Registered, &'a str), ToolError> {
        let object = input.as_object();
        if let Some(key) = object.and_then(|o| o.keys().find(|k| k.as_str() != "device")) {
            return Err(ToolError::new(format!(
                "unknown argument {key:?}; device_state takes device"
            )));
        }
        let name = object
            .and_then(|o| o.get("device"))
            .and_then(Value::as_str)
            .ok_or_else(|| {
                ToolError::new("'device' is missing: the name of a registered device")
            })?;
        let registered = self.shared.registry.named(name).map_err(ToolError::new)?;
        let topic = registered.device.state_topic.as_deref().ok_or_else(|| {
            ToolError::new(format!(
                "device '{}' reports no state: it has no state_topic",
                registered.device.name
            ))
        })?;
        Ok((registered, topic))
    }
}

#[async_trait]
impl Tool for DeviceState {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn check_input(&self, input: &Value) -> Result<(), ToolError> {
        self.device(input).map(|_| ())
    }

    async fn run(&self, input: Value, _context: ToolContext) -> Result<ToolOutput, ToolError> {
        let (registered, topic) = self.device(&input)?;
        let device = &registered.device;
        let wait = self.shared.wait;
        let reader = self.shared.broker.companion("-state");
        // The retained state comes first, right after the subscription is confirmed.
        let messages = reader.read(&[topic], wait.quiet, wait.limit, 1).await?;
        let Some(last) = messages.iter().rev().find(|m| m.topic == topic) else {
            return Ok(ToolOutput::json(json!({
                "device": device.name,
                "state": null,
                "note": format!("nothing is retained on '{topic}': the device has not reported a state tau can read"),
            })));
        };
        let now = Timestamp::now();
        let seen = match &self.shared.store {
            Some(store) => store
                .observe_state(&device.name, &last.payload, now)
                .map_err(|error| ToolError::new(error.to_string()))?,
            None => tau_state::SeenState {
                payload: last.payload.clone(),
                since: now,
                changed: true,
            },
        };
        let state = String::from_utf8_lossy(&last.payload).into_owned();
        let meaning = device
            .actions
            .iter()
            .find_map(|(action, payload)| match payload {
                ActionPayload::Fixed(fixed) if fixed == state.trim() => Some(*action),
                ActionPayload::Fixed(_) | ActionPayload::Number(_) => None,
            });
        let age = now.duration_since(seen.since).as_secs().max(0);
        let age_text = if seen.changed {
            "tau read this state for the first time just now; a retained state carries no time, so the device may have reported it earlier".to_owned()
        } else {
            format!(
                "tau has read this same state since {} ({} ago)",
                seen.since.strftime("%Y-%m-%d %H:%M:%S UTC"),
                span(age)
            )
        };
        Ok(ToolOutput::json(json!({
            "device": device.name,
            "label": device.label,
            "room": device.room,
            "kind": device.kind.as_str(),
            "state": state,
            "means": meaning.map(ActionName::as_str),
            "retained": last.retained,
            "seen_since": seen.since.to_string(),
            "age_seconds": age,
            "age": age_text,
        })))
    }
}

/// `12 s`, `4 min`, `2 h 3 min`, `3 d 4 h`.
pub(crate) fn span(seconds: i64) -> String {
    match seconds {
        ..60 => format!("{seconds} s"),
        60..3_600 => format!("{} min", seconds / 60),
        3_600..86_400 => format!("{} h {} min", seconds / 3_600, seconds % 3_600 / 60),
        _ => format!("{} d {} h", seconds / 86_400, seconds % 86_400 / 3_600),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn ages_read_like_a_person_says_them() {
        assert_eq!(
            [0, 59, 60, 3_599, 3_600, 7_380, 86_400, 100_000].map(span),
            [
                "0 s",
                "59 s",
                "1 min",
                "59 min",
                "1 h 0 min",
                "2 h 3 min",
                "1 d 0 h",
                "1 d 3 h"
            ]
        );
    }
}
