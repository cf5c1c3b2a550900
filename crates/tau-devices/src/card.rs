//! What tau writes on the approval card of a device call, from its own registry: the
//! headline (`switch ON · Kitchen light (kitchen)`), the topic and payload as details, a
//! warning when the call went around the registry or discovery now disagrees with what the
//! person pinned, and the model's own words only under "the model says". Nothing here
//! copies the model's text into the headline: a call that does not resolve against the
//! registry gets no device headline at all.

use std::sync::Arc;

use serde_json::Value;
use tau_protocol::{CallCard, CardNote, ConfirmStep};

use crate::discovery::mismatch;
use crate::kind::ActionName;
use crate::registry::{Command, Origin, Registered, Registry, number};
use crate::store::DeviceStore;

/// The label of the note that quotes the model.
pub const MODEL_SAYS: &str = "the model says";
/// Added to the headline of a lock-class device.
pub const LOCK_CLASS_SUFFIX: &str = " — a lock-class device";

/// `Kitchen light (kitchen)`, and the lock-class suffix when it applies.
fn device_words(registered: &Registered) -> String {
    let device = &registered.device;
    let room = device
        .room
        .as_ref()
        .map(|room| format!(" ({room})"))
        .unwrap_or_default();
    let class = if device.lock_class {
        LOCK_CLASS_SUFFIX
    } else {
        ""
    };
    format!("{}{room}{class}", device.label)
}

/// `switch ON`, `OPEN`, `set 22.5 °C`, `set brightness to 80 %`.
fn action_words(action: ActionName, value: Option<f64>, unit: Option<&str>) -> String {
    let Some(value) = value else {
        return action.verb().to_owned();
    };
    let unit = unit.map(|unit| format!(" {unit}")).unwrap_or_default();
    match action {
        ActionName::Set => format!("set {}{unit}", number(value)),
        other => format!("set {other} to {}{unit}", number(value)),
    }
}

/// The headline of a resolved `device_set` call.
pub fn headline(command: &Command<'_>) -> String {
    let unit = command.range().and_then(|range| range.unit.as_deref());
    format!(
        "{} · {}",
        action_words(command.action, command.value, unit),
        device_words(command.registered)
    )
}

/// A payload as a note: short ones in the row, long or multi-line ones folded.
fn payload_note(payload: &str) -> CardNote {
    if payload.contains('\n') || payload.chars().count() > 80 {
        CardNote::info("payload", format!("{} bytes", payload.len())).with_detail(payload)
    } else {
        CardNote::info("payload", payload)
    }
}

fn device_note(registered: &Registered) -> CardNote {
    let device = &registered.device;
    CardNote::info(
        "device",
        format!(
            "{} ({}), {}",
            device.name,
            device.kind,
            registered.origin.describe()
        ),
    )
}

/// The warning of a pinned device whose discovery config changed since it was pinned.
fn discovery_note(registered: &Registered, store: Option<&DeviceStore>) -> Option<CardNote> {
    let Origin::Pinned { discovery_topic } = &registered.origin else {
        return None;
    };
    let store = store?;
    let lines = match store.discovery(discovery_topic) {
        Ok(latest) => mismatch(&registered.device.def, latest.as_ref()),
        Err(error) => vec![format!(
            "tau could not read what discovery says now ({error})"
        )],
    };
    if lines.is_empty() {
        return None;
    }
    Some(
        CardNote::warning(
            "discovery",
            "Home Assistant discovery now describes this device differently; tau keeps what you pinned",
        )
        .with_detail(lines.join("\n")),
    )
}

/// The card of a `device_set` call, or `None` when it does not resolve (it is refused
/// before anyone is asked, so no card is shown).
pub fn device_set_card(
    registry: &Registry,
    store: Option<&DeviceStore>,
    confirm_high_risk: bool,
    arguments: &Value,
) -> Option<CallCard> {
    let command = registry.resolve(arguments).ok()?;
    let registered = command.registered;
    let mut notes = vec![
        device_note(registered),
        CardNote::info("topic", command.topic),
        payload_note(&command.payload),
    ];
    notes.extend(discovery_note(registered, store));
    if let Some(reason) = &command.reason {
        notes.push(CardNote::info(MODEL_SAYS, format!("{reason:?}")));
    }
    Some(CallCard {
        headline: Some(headline(&command)),
        notes,
        confirm: confirm_for(registered, confirm_high_risk),
        shown_files: Vec::new(),
        provenance: Default::default(),
    })
}

/// The second step of a lock-class device, when `[approval] confirm_high_risk` is on: its
/// name; the gate draws the number.
fn confirm_for(registered: &Registered, confirm_high_risk: bool) -> Option<ConfirmStep> {
    (confirm_high_risk && registered.device.lock_class)
        .then(|| ConfirmStep::word(registered.device.name.clone()))
}

/// The card of an `mqtt_publish` call to a registered device's command topic: the device
/// and, when the payload is one of its actions, the action; a warning that it went around
/// the registry. `None` for any other topic.
pub fn mqtt_publish_card(
    registry: &Registry,
    store: Option<&DeviceStore>,
    confirm_high_risk: bool,
    arguments: &Value,
) -> Option<CallCard> {
    let topic = arguments.get("topic")?.as_str()?;
    let registered = registry.by_command_topic(topic)?;
    let payload = arguments.get("payload").and_then(Value::as_str);
    let action = payload.and_then(|payload| registry.action_for_payload(registered, payload));
    let headline = match action {
        Some((action, value)) => {
            let unit = registered
                .device
                .actions
                .get(&action)
                .and_then(|p| match p {
                    crate::def::ActionPayload::Number(range) => range.unit.as_deref(),
                    crate::def::ActionPayload::Fixed(_) => None,
                });
            format!(
                "{} · {}",
                action_words(action, value, unit),
                device_words(registered)
            )
        }
        None => format!("an unlisted payload · {}", device_words(registered)),
    };
    let mut notes = vec![
        CardNote::warning(
            "around the registry",
            format!(
                "this raw mqtt_publish goes to the command topic of {}; device_set would check its actions and ranges",
                registered.device.name
            ),
        ),
        device_note(registered),
        CardNote::info("topic", topic),
    ];
    match (action, payload) {
        (Some(_), Some(payload)) => notes.push(payload_note(payload)),
        _ => notes.push(CardNote::warning(
            "payload",
            "not one of this device's actions; the arguments show what the model wrote",
        )),
    }
    notes.extend(discovery_note(registered, store));
    Some(CallCard {
        headline: Some(headline),
        notes,
        confirm: confirm_for(registered, confirm_high_risk),
        shown_files: Vec::new(),
        provenance: Default::default(),
    })
}

/// Writes the card of every call that names a registered device: `device_set`, and a raw
/// `mqtt_publish` to a device's command topic. Registered on the tool catalog, so every
/// gate (a conversation's, a routine's, the MCP server's) shows the same card.
pub struct DeviceCards {
    pub registry: Arc<Registry>,
    /// Where discovery configs are recorded, for the mismatch warning of pinned devices.
    pub store: Option<Arc<DeviceStore>>,
    /// `[approval] confirm_high_risk`.
    pub confirm_high_risk: bool,
}

impl tau_core::CardWriter for DeviceCards {
    fn write(&self, tool: &str, arguments: &Value, card: &mut CallCard) {
        let store = self.store.as_deref();
        let written = match tool {
            "device_set" => {
                device_set_card(&self.registry, store, self.confirm_high_risk, arguments)
            }
            "mqtt_publish" => {
                mqtt_publish_card(&self.registry, store, self.confirm_high_risk, arguments)
            }
            _ => None,
        };
        let Some(written) = written else {
            return;
        };
        // The registry speaks for its own devices: its headline comes first, and a writer
        // before it keeps what it said as a note.
        if let Some(earlier) = card.headline.replace(written.headline.unwrap_or_default()) {
            card.notes.push(CardNote::info("also", earlier));
        }
        card.notes.extend(written.notes);
        if written.confirm.is_some() {
            card.confirm = written.confirm;
        }
    }
}

#[cfg(test)]
#[path = "card_tests.rs"]
mod tests;
