//! The registry: every device tau knows, by name and by command topic, and the one reading
//! of a `device_set` call. A call is resolved against the registry before anyone is asked:
//! an unknown device, an action its kind lacks, a value outside its range is refused with a
//! text the model can act on, and nothing is sent.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::def::{ActionPayload, Device, DeviceDef, DeviceError, Range, VALUE_PLACEHOLDER};
use crate::kind::ActionName;

/// The longest `reason` a model may give; it is shown under "the model says".
pub const MAX_REASON_CHARS: usize = 500;
/// How much of a name the model made up a refusal quotes back.
const QUOTED_CHARS: usize = 64;

/// Where a registered device came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// `[[devices]]` in `tau.toml`.
    Config,
    /// `tau devices add`.
    Added,
    /// `tau devices pin`: a Home Assistant discovery proposal the person accepted, from the
    /// config published at `discovery_topic`.
    Pinned { discovery_topic: String },
}

impl Origin {
    pub fn describe(&self) -> String {
        match self {
            Self::Config => "from the config".to_owned(),
            Self::Added => "added with tau devices add".to_owned(),
            Self::Pinned { discovery_topic } => {
                format!("pinned from Home Assistant discovery at {discovery_topic}")
            }
        }
    }
}

/// A device and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Registered {
    pub device: Device,
    pub origin: Origin,
}

/// A registry that cannot be built: two devices share a name or a command topic.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    #[error(transparent)]
    Device(#[from] DeviceError),
    #[error("devices.{name}: a device named '{name}' is already registered ({first})")]
    DuplicateName { name: String, first: String },
    #[error(
        "devices.{name}.command_topic: '{topic}' is already the command topic of '{other}'; one topic, one device"
    )]
    DuplicateTopic {
        name: String,
        topic: String,
        other: String,
    },
}

/// Every device tau knows.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Registry {
    devices: BTreeMap<String, Registered>,
}

/// A `device_set` call resolved against the registry: exactly what will be sent.
#[derive(Debug, Clone, PartialEq)]
pub struct Command<'a> {
    pub registered: &'a Registered,
    pub action: ActionName,
    /// The number, for an action that takes one.
    pub value: Option<f64>,
    pub topic: &'a str,
    pub payload: String,
    /// The model's own words about the call, if it gave any. Untrusted.
    pub reason: Option<String>,
}

impl Command<'_> {
    pub fn device(&self) -> &Device {
        &self.registered.device
    }

    /// The range of the action, for one that takes a number.
    pub fn range(&self) -> Option<&Range> {
        match self.device().actions.get(&self.action) {
            Some(ActionPayload::Number(range)) => Some(range),
            Some(ActionPayload::Fixed(_)) | None => None,
        }
    }
}

impl Registry {
    /// The devices of `tau.toml` alone; a mistake names its key.
    pub fn from_config(devices: &[DeviceDef]) -> Result<Self, RegistryError> {
        Self::new(devices.iter().cloned().map(|d| (d, Origin::Config)))
    }

    /// Checks every definition and that names and command topics are unique.
    pub fn new(
        devices: impl IntoIterator<Item = (DeviceDef, Origin)>,
    ) -> Result<Self, RegistryError> {
        let mut registry = Self::default();
        for (def, origin) in devices {
            registry.add(&def, origin)?;
        }
        Ok(registry)
    }

    /// Adds one device, checked; nothing changes when it is refused.
    pub fn add(&mut self, def: &DeviceDef, origin: Origin) -> Result<(), RegistryError> {
        let device = def.check()?;
        if let Some(first) = self.devices.get(&device.name) {
            return Err(RegistryError::DuplicateName {
                name: device.name,
                first: first.origin.describe(),
            });
        }
        if let Some(topic) = &device.command_topic
            && let Some(other) = self.by_command_topic(topic)
        {
            return Err(RegistryError::DuplicateTopic {
                name: device.name.clone(),
                topic: topic.clone(),
                other: other.device.name.clone(),
            });
        }
        self.devices
            .insert(device.name.clone(), Registered { device, origin });
        Ok(())
    }

    pub fn is_empty(&self) -> bool {
        self.devices.is_empty()
    }

    pub fn len(&self) -> usize {
        self.devices.len()
    }

    pub fn get(&self, name: &str) -> Option<&Registered> {
        self.devices.get(name)
    }

    /// Devices in name order.
    pub fn devices(&self) -> impl Iterator<Item = &Registered> {
        self.devices.values()
    }

    /// Names in order, for schemas and refusals.
    pub fn names(&self) -> Vec<&str> {
        self.devices.keys().map(String::as_str).collect()
    }

    /// The device whose commands go to `topic`.
    pub fn by_command_topic(&self, topic: &str) -> Option<&Registered> {
        self.devices
            .values()
            .find(|r| r.device.command_topic.as_deref() == Some(topic))
    }

    /// The action of `registered` whose payload is exactly `payload` (with its number, for
    /// a range), if there is one: what a raw publish to its command topic would do.
    pub fn action_for_payload(
        &self,
        registered: &Registered,
        payload: &str,
    ) -> Option<(ActionName, Option<f64>)> {
        registered
            .device
            .actions
            .iter()
            .find_map(|(action, sent)| match sent {
                ActionPayload::Fixed(fixed) => (fixed == payload).then_some((*action, None)),
                ActionPayload::Number(range) => {
                    let (before, after) = range.template.split_once(VALUE_PLACEHOLDER)?;
                    let text = payload.strip_prefix(before)?.strip_suffix(after)?;
                    let value: f64 = text.parse().ok().filter(|v: &f64| v.is_finite())?;
                    (number(value) == text && check_value(range, value).is_ok())
                        .then_some((*action, Some(value)))
                }
            })
    }

    /// The registered device a `device_state` or `device_set` call names.
    pub fn named(&self, name: &str) -> Result<&Registered, String> {
        self.devices.get(name).ok_or_else(|| {
            let names = self.names();
            if names.is_empty() {
                format!(
                    "there is no device named {}; no devices are registered",
                    quoted(name)
                )
            } else {
                format!(
                    "there is no device named {}; the devices are: {}",
                    quoted(name),
                    names.join(", ")
                )
            }
        })
    }

    /// Reads a `device_set` call: `{device, action, value?, reason?}`. Anything the
    /// registry cannot send exactly is refused with a text the model reads.
    pub fn resolve(&self, arguments: &Value) -> Result<Command<'_>, String> {
        let call = SetCall::parse(arguments)?;
        let registered = self.named(&call.device)?;
        let device = &registered.device;
        let kind = device.kind;
        let (Some(topic), false) = (device.command_topic.as_deref(), device.actions.is_empty())
        else {
            return Err(format!(
                "device '{}' ({kind}) takes no commands; read it with device_state",
                device.name
            ));
        };
        let actions = || {
            device
                .actions
                .keys()
                .map(|a| a.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let Some((action, payload)) = ActionName::parse(&call.action)
            .and_then(|action| device.actions.get(&action).map(|p| (action, p)))
        else {
            return Err(format!(
                "device '{}' ({kind}) has no action {}; its actions are: {}",
                device.name,
                quoted(&call.action),
                actions()
            ));
        };
        let (value, payload) = match (payload, call.value) {
            (ActionPayload::Fixed(payload), None) => (None, payload.clone()),
            (ActionPayload::Fixed(_), Some(_)) => {
                return Err(format!(
                    "action '{action}' of device '{}' takes no value",
                    device.name
                ));
            }
            (ActionPayload::Number(range), None) => {
                return Err(format!(
                    "action '{action}' of device '{}' needs a value: {}",
                    device.name,
                    range_text(range)
                ));
            }
            (ActionPayload::Number(range), Some(value)) => {
                check_value(range, value).map_err(|why| {
                    format!(
                        "{} is {why} of action '{action}' on device '{}': {}",
                        number(value),
                        device.name,
                        range_text(range)
                    )
                })?;
                (
                    Some(value),
                    range.template.replace(VALUE_PLACEHOLDER, &number(value)),
                )
            }
        };
        Ok(Command {
            registered,
            action,
            value,
            topic,
            payload,
            reason: call.reason,
        })
    }
}

/// The arguments of a `device_set` call, read strictly.
struct SetCall {
    device: String,
    action: String,
    value: Option<f64>,
    reason: Option<String>,
}

impl SetCall {
    fn parse(arguments: &Value) -> Result<Self, String> {
        let empty = Map::new();
        let object = match arguments {
            Value::Object(object) => object,
            Value::Null => &empty,
            _ => {
                return Err(
                    "the arguments must be an object {device, action, value?, reason?}".into(),
                );
            }
        };
        if let Some(key) = object
            .keys()
            .find(|key| !["device", "action", "value", "reason"].contains(&key.as_str()))
        {
            return Err(format!(
                "unknown argument {}; device_set takes device, action, value and reason",
                quoted(key)
            ));
        }
        let text = |key: &str| match object.get(key) {
            Some(Value::String(text)) => Ok(Some(text.clone())),
            None | Some(Value::Null) => Ok(None),
            Some(_) => Err(format!("'{key}' must be a string")),
        };
        let device =
            text("device")?.ok_or("'device' is missing: the name of a registered device")?;
        let action = text("action")?.ok_or("'action' is missing: what the device should do")?;
        let value = match object.get("value") {
            None | Some(Value::Null) => None,
            Some(Value::Number(number)) => number.as_f64(),
            Some(_) => return Err("'value' must be a number".into()),
        };
        let reason = text("reason")?;
        if let Some(reason) = &reason
            && reason.chars().count() > MAX_REASON_CHARS
        {
            return Err(format!(
                "'reason' is {} characters; at most {MAX_REASON_CHARS}",
                reason.chars().count()
            ));
        }
        Ok(Self {
            device,
            action,
            value,
            reason,
        })
    }
}

/// Why `value` is not allowed: outside the range, or between steps.
fn check_value(range: &Range, value: f64) -> Result<(), &'static str> {
    if !(range.min..=range.max).contains(&value) {
        return Err("outside the range");
    }
    if let Some(step) = range.step {
        let steps = (value - range.min) / step;
        if (steps - steps.round()).abs() > 1e-9 * steps.abs().max(1.0) {
            return Err("not a step");
        }
    }
    Ok(())
}

/// `a number from 5 to 30 °C in steps of 0.5`
pub(crate) fn range_text(range: &Range) -> String {
    let unit = range
        .unit
        .as_ref()
        .map(|unit| format!(" {unit}"))
        .unwrap_or_default();
    let step = range
        .step
        .map(|step| format!(" in steps of {}", number(step)))
        .unwrap_or_default();
    format!(
        "a number from {} to {}{unit}{step}",
        number(range.min),
        number(range.max)
    )
}

/// A number as a person writes it: `22.5`, `22`, never `22.0`; `1e300` for one that is
/// far out of any range.
pub fn number(value: f64) -> String {
    if value != 0.0 && !(1e-6..1e15).contains(&value.abs()) {
        format!("{value:e}")
    } else if value.fract() == 0.0 {
        // Exact: an integral f64 below 1e15 fits an i64.
        #[allow(clippy::cast_possible_truncation)]
        let whole = value as i64;
        whole.to_string()
    } else {
        value.to_string()
    }
}

/// A string the model wrote, quoted and cut short, for a refusal it reads.
fn quoted(text: &str) -> String {
    match text.char_indices().nth(QUOTED_CHARS) {
        Some((cut, _)) => format!("{:?}…", &text[..cut]),
        None => format!("{text:?}"),
    }
}

#[cfg(test)]
#[path = "registry_tests.rs"]
pub(crate) mod tests;
