//! `tau devices`: the registry as the person keeps it. `list` and `show` read it, `add` and
//! `remove` change the devices kept in `state.db` (those of `tau.toml` are edited there),
//! `discover` reads Home Assistant's discovery configs from the broker and proposes
//! devices, and only `pin NAME` adds a proposal (`discover.rs`). Every field of every
//! device is shown through the display function, its lookalike words flagged
//! ([`tau_core::Listing`]): discovery is unauthenticated, and a pinned device keeps the
//! words its config had.

mod discover;

use tau_devices::listing;

use std::collections::BTreeMap;
use std::sync::Arc;

use jiff::Timestamp;
use tau_core::display;
use tau_devices::{
    ActionDef, DeviceDef, DeviceKind, DeviceStore, DeviceTools, Origin, RangeDef, ReadWait,
    Registry,
};
use tau_tools::MqttBroker;

pub(crate) use discover::{discover, pin};

use crate::cli::AddDevice;
use crate::context::Context;
use crate::errors::usage;

/// The client id suffixes of tau's other broker clients, beside `mqtt_publish`'s own.
const COMMAND_CLIENT: &str = "-devices";
pub(super) const DISCOVERY_CLIENT: &str = "-discovery";

impl Context {
    /// The devices, discovery configs and states in `state.db`.
    pub(crate) fn device_store(&self) -> anyhow::Result<Arc<DeviceStore>> {
        Ok(Arc::new(DeviceStore::new(self.state()?.devices())))
    }

    pub(super) fn broker(&self) -> anyhow::Result<MqttBroker> {
        MqttBroker::from_config(&self.tools_config()?.mqtt, &*self.env)
            .map_err(|e| usage(e.to_string()))
    }

    /// Every device: those of `tau.toml` (checked when the config was read), then those in
    /// `state.db`. A stored device that no longer fits is left out with a warning.
    pub(crate) fn registry(&self, store: &DeviceStore) -> anyhow::Result<Registry> {
        let mut registry =
            Registry::from_config(&self.loaded.config.devices).map_err(|e| usage(e.to_string()))?;
        for problem in registry.add_stored(store)? {
            crate::output::eprint_line(&format!(
                "tau: warning: a device in state.db is left out: {}",
                display(&problem)
            ));
        }
        Ok(registry)
    }

    /// The device tools over `registry`, and the discovery watch of its pinned devices.
    /// The device tools as the devices are now, read without writing: those of
    /// `tau.toml` and, when `state.db` exists, those kept there (for `tau config check`).
    pub(crate) fn device_tools_read_only(&self) -> anyhow::Result<Vec<tau_agent::SharedTool>> {
        let registry = match self.existing_state()? {
            Some(state) => self.registry(&DeviceStore::new(state.devices()))?,
            None => Registry::from_config(&self.loaded.config.devices)
                .map_err(|e| usage(e.to_string()))?,
        };
        Ok(DeviceTools {
            registry: Arc::new(registry),
            broker: self.broker()?.companion(COMMAND_CLIENT),
            store: None,
            wait: ReadWait::default(),
        }
        .tools())
    }

    pub(crate) fn device_tools(
        &self,
        registry: Arc<Registry>,
        store: Arc<DeviceStore>,
    ) -> anyhow::Result<DeviceTools> {
        Ok(DeviceTools {
            registry,
            broker: self.broker()?.companion(COMMAND_CLIENT),
            store: Some(store),
            wait: ReadWait::default(),
        })
    }

    /// Records what discovery says about pinned devices while this process runs; stops
    /// when the watch is dropped.
    pub(crate) fn watch_discovery(
        &self,
        registry: &Registry,
        store: Arc<DeviceStore>,
    ) -> anyhow::Result<Option<tau_devices::DiscoveryWatch>> {
        if tau_devices::pinned_topics(registry).is_empty() {
            return Ok(None);
        }
        let broker = self.broker()?.companion(DISCOVERY_CLIENT);
        Ok(tau_devices::start_discovery_watch(registry, broker, store))
    }
}

pub(crate) fn list(ctx: &Context) -> anyhow::Result<String> {
    ctx.create_home()?;
    let store = ctx.device_store()?;
    let registry = ctx.registry(&store)?;
    Ok(listing::list_text(&registry, &store)?)
}

pub(crate) fn show(ctx: &Context, name: &str) -> anyhow::Result<String> {
    ctx.create_home()?;
    let store = ctx.device_store()?;
    let registry = ctx.registry(&store)?;
    let registered = registry.named(name).map_err(usage)?;
    Ok(listing::show_text(registered, &store)?)
}

/// `--action on=ON` and the like: `KEY=VALUE`.
fn pairs(key: &str, items: &[String]) -> anyhow::Result<BTreeMap<String, String>> {
    items
        .iter()
        .map(|item| {
            item.split_once('=')
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .ok_or_else(|| usage(format!("--{key} {item:?}: write NAME=VALUE")))
        })
        .collect()
}

fn number(text: &str, what: &str) -> anyhow::Result<f64> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|n| n.is_finite())
        .ok_or_else(|| usage(format!("--range: {what} {text:?} is not a number")))
}

fn added_def(add: &AddDevice) -> anyhow::Result<DeviceDef> {
    let kind = DeviceKind::parse(&add.kind).ok_or_else(|| {
        let kinds: Vec<_> = DeviceKind::ALL.iter().map(|k| k.as_str()).collect();
        usage(format!(
            "--kind {:?}: the kinds are {}",
            add.kind,
            kinds.join(", ")
        ))
    })?;
    let mut actions: BTreeMap<String, ActionDef> = pairs("action", &add.action)?
        .into_iter()
        .map(|(k, v)| (k, ActionDef::Payload(v)))
        .collect();
    let units = pairs("unit", &add.unit)?;
    let templates = pairs("payload-template", &add.payload_template)?;
    for (action, range) in pairs("range", &add.range)? {
        let parts: Vec<&str> = range.split(':').collect();
        let (min, max, step) = match parts.as_slice() {
            [min, max] => (number(min, "min")?, number(max, "max")?, None),
            [min, max, step] => (
                number(min, "min")?,
                number(max, "max")?,
                Some(number(step, "step")?),
            ),
            _ => {
                return Err(usage(format!(
                    "--range {action}={range:?}: write NAME=MIN:MAX or NAME=MIN:MAX:STEP"
                )));
            }
        };
        actions.insert(
            action.clone(),
            ActionDef::Range(RangeDef {
                min,
                max,
                step,
                unit: units.get(&action).cloned(),
                payload: templates
                    .get(&action)
                    .cloned()
                    .unwrap_or_else(|| "{value}".to_owned()),
            }),
        );
    }
    Ok(DeviceDef {
        name: add.name.clone(),
        label: add.label.clone(),
        room: add.room.clone(),
        kind,
        command_topic: add.command_topic.clone(),
        state_topic: add.state_topic.clone(),
        actions,
        retain: add.retain,
        high_risk: add.high_risk,
        approvers: Vec::new(),
    })
}

pub(crate) fn add(ctx: &Context, add: &AddDevice) -> anyhow::Result<String> {
    ctx.create_home()?;
    let def = added_def(add)?;
    let store = ctx.device_store()?;
    let mut registry = ctx.registry(&store)?;
    registry
        .add(&def, Origin::Added)
        .map_err(|e| usage(e.to_string()))?;
    if !store.add(&def, &Origin::Added, Timestamp::now())? {
        return Err(usage(format!(
            "a device named '{}' is already stored",
            def.name
        )));
    }
    let registered = registry.named(&def.name).map_err(usage)?;
    Ok(listing::added_text(registered))
}

pub(crate) fn remove(ctx: &Context, name: &str) -> anyhow::Result<String> {
    ctx.create_home()?;
    if ctx.loaded.config.devices.iter().any(|d| d.name == name) {
        return Err(usage(format!(
            "'{name}' is in tau.toml; remove its [[devices]] entry there"
        )));
    }
    if ctx.device_store()?.remove(name)? {
        Ok(format!("removed {name}\n"))
    } else {
        Err(usage(format!(
            "there is no stored device named '{name}' (see `tau devices list`)"
        )))
    }
}
