//! `tau devices`: the registry as the person keeps it. `list` and `show` read it, `add` and
//! `remove` change the devices kept in `state.db` (those of `tau.toml` are edited there),
//! `discover` reads Home Assistant's discovery configs from the broker and proposes
//! devices, and only `pin NAME` adds a proposal. Everything read from the broker is shown
//! through the display function: discovery is unauthenticated.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use tau_core::display;
use tau_devices::{
    ActionDef, DeviceDef, DeviceKind, DeviceStore, DeviceTools, Origin, Proposal, RangeDef,
    ReadWait, Registered, Registry, mismatch, name_proposals, propose,
};
use tau_tools::MqttBroker;

use crate::cli::{AddDevice, PinDevice};
use crate::context::Context;
use crate::errors::usage;

/// The client id suffixes of tau's other broker clients, beside `mqtt_publish`'s own.
const COMMAND_CLIENT: &str = "-devices";
const DISCOVERY_CLIENT: &str = "-discovery";

impl Context {
    /// The devices, discovery configs and states in `state.db`.
    pub(crate) fn device_store(&self) -> anyhow::Result<Arc<DeviceStore>> {
        Ok(Arc::new(DeviceStore::new(self.state()?)))
    }

    fn broker(&self) -> anyhow::Result<MqttBroker> {
        MqttBroker::from_config(&self.loaded.config.tools.mqtt, &*self.env)
            .map_err(|e| usage(e.to_string()))
    }

    /// Every device: those of `tau.toml` (checked when the config was read), then those in
    /// `state.db`. A stored device that no longer fits is left out with a warning.
    pub(crate) fn registry(&self, store: &DeviceStore) -> anyhow::Result<Registry> {
        let mut registry = config_registry(&self.loaded.config.devices)?;
        for row in store.devices()? {
            let added = match row {
                Ok(stored) => registry
                    .add(&stored.def, stored.origin)
                    .map_err(|e| e.to_string()),
                Err((name, problem)) => Err(format!("devices.{name}: cannot be read: {problem}")),
            };
            if let Err(problem) = added {
                eprintln!(
                    "tau: warning: a device in state.db is left out: {}",
                    display(&problem)
                );
            }
        }
        Ok(registry)
    }

    /// The device tools over `registry`, and the discovery watch of its pinned devices.
    /// The device tools as the devices are now, read without writing: those of
    /// `tau.toml` and, when `state.db` exists, those kept there (for `tau config check`).
    pub(crate) fn device_tools_read_only(&self) -> anyhow::Result<Vec<tau_agent::SharedTool>> {
        let registry = match self.existing_state()? {
            Some(state) => self.registry(&DeviceStore::new(state))?,
            None => config_registry(&self.loaded.config.devices)?,
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
    /// when the guard is dropped.
    pub(crate) fn watch_discovery(
        &self,
        registry: &Registry,
        store: Arc<DeviceStore>,
    ) -> anyhow::Result<Option<WatchGuard>> {
        let topics = tau_devices::pinned_topics(registry);
        if topics.is_empty() {
            return Ok(None);
        }
        let broker = self.broker()?.companion(DISCOVERY_CLIENT);
        let stop = tokio_util::sync::CancellationToken::new();
        let stopped = stop.clone();
        tokio::spawn(async move {
            tau_devices::watch_discovery(broker, topics, store, stopped.cancelled_owned()).await;
        });
        Ok(Some(WatchGuard(stop)))
    }
}

/// Stops the discovery watch when dropped.
pub(crate) struct WatchGuard(tokio_util::sync::CancellationToken);

impl Drop for WatchGuard {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

/// The devices of `tau.toml` alone; a mistake names its key.
pub(crate) fn config_registry(devices: &[DeviceDef]) -> anyhow::Result<Registry> {
    Registry::new(devices.iter().cloned().map(|d| (d, Origin::Config)))
        .map_err(|e| usage(e.to_string()))
}

fn actions(registered: &Registered) -> String {
    let names: Vec<_> = registered
        .device
        .actions
        .keys()
        .map(|a| a.as_str())
        .collect();
    if names.is_empty() {
        "read only".to_owned()
    } else {
        names.join(", ")
    }
}

fn place(registered: &Registered) -> String {
    let device = &registered.device;
    match &device.room {
        Some(room) => format!("{} ({room})", device.label),
        None => device.label.clone(),
    }
}

/// The mismatch lines of a pinned device, or none.
fn drift(registered: &Registered, store: &DeviceStore) -> anyhow::Result<Vec<String>> {
    let Origin::Pinned { discovery_topic } = &registered.origin else {
        return Ok(Vec::new());
    };
    Ok(mismatch(
        &registered.device.def,
        store.discovery(discovery_topic)?.as_ref(),
    ))
}

pub(crate) fn list(ctx: &Context) -> anyhow::Result<String> {
    ctx.home.create()?;
    let store = ctx.device_store()?;
    let registry = ctx.registry(&store)?;
    if registry.is_empty() {
        return Ok("no devices yet: add [[devices]] to tau.toml, `tau devices add`, or `tau devices discover` and `tau devices pin NAME`\n".to_owned());
    }
    let width = registry.names().iter().map(|n| n.len()).max().unwrap_or(0);
    let place_width = registry
        .devices()
        .map(|r| place(r).chars().count())
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    for registered in registry.devices() {
        let device = &registered.device;
        let class = if device.lock_class {
            ", lock-class"
        } else {
            ""
        };
        let warning = if drift(registered, &store)?.is_empty() {
            ""
        } else {
            "  ⚠ discovery now differs (tau devices show)"
        };
        let _ = writeln!(
            out,
            "{:<width$}  {:<place_width$}  {}{class}: {}  [{}]{warning}",
            device.name,
            place(registered),
            device.kind,
            actions(registered),
            registered.origin.describe(),
        );
    }
    Ok(out)
}

pub(crate) fn show(ctx: &Context, name: &str) -> anyhow::Result<String> {
    ctx.home.create()?;
    let store = ctx.device_store()?;
    let registry = ctx.registry(&store)?;
    let registered = registry.named(name).map_err(usage)?;
    let device = &registered.device;
    let mut out = String::new();
    let _ = writeln!(out, "{}  {}", device.name, place(registered));
    let _ = writeln!(
        out,
        "kind           {}{}",
        device.kind,
        if device.lock_class {
            " (lock-class: approving it takes a second step when [approval] confirm_high_risk is on)"
        } else {
            ""
        }
    );
    let _ = writeln!(out, "from           {}", registered.origin.describe());
    if let Some(topic) = &device.command_topic {
        let _ = writeln!(
            out,
            "command topic  {topic}{}",
            if device.retain { " (retained)" } else { "" }
        );
    }
    if let Some(topic) = &device.state_topic {
        let _ = writeln!(out, "state topic    {topic}");
    }
    for (action, payload) in &device.def.actions {
        let sent = match payload {
            ActionDef::Payload(payload) => format!("{payload:?}"),
            ActionDef::Range(range) => format!(
                "{} to {}{}{}, sent as {:?}",
                tau_devices::number(range.min),
                tau_devices::number(range.max),
                range
                    .unit
                    .as_ref()
                    .map(|u| format!(" {u}"))
                    .unwrap_or_default(),
                range
                    .step
                    .map(|s| format!(" in steps of {}", tau_devices::number(s)))
                    .unwrap_or_default(),
                range.payload
            ),
        };
        let _ = writeln!(out, "action {action:<8}{sent}");
    }
    let lines = drift(registered, &store)?;
    if !lines.is_empty() {
        let _ = writeln!(
            out,
            "⚠ Home Assistant discovery now describes it differently; tau keeps what you pinned:"
        );
        for line in lines {
            let _ = writeln!(out, "  {}", display(&line));
        }
    }
    Ok(out)
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
    })
}

pub(crate) fn add(ctx: &Context, add: &AddDevice) -> anyhow::Result<String> {
    ctx.home.create()?;
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
    Ok(format!(
        "added {}: {}, a {} ({})\n",
        def.name,
        place(registered),
        def.kind,
        actions(registered)
    ))
}

pub(crate) fn remove(ctx: &Context, name: &str) -> anyhow::Result<String> {
    ctx.home.create()?;
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

/// The proposals of every config recorded, named against the registry, and the topics of
/// the devices already pinned.
fn proposals(registry: &Registry, store: &DeviceStore) -> anyhow::Result<Vec<Proposal>> {
    let pinned: BTreeSet<String> = tau_devices::pinned_topics(registry).into_iter().collect();
    let mut proposals: Vec<Proposal> = store
        .discoveries()?
        .into_iter()
        .filter(|seen| !pinned.contains(&seen.topic))
        .map(|seen| propose(&seen.topic, &seen.payload))
        .collect();
    let taken: BTreeSet<String> = registry.names().into_iter().map(str::to_owned).collect();
    name_proposals(&mut proposals, &taken);
    Ok(proposals)
}

pub(crate) async fn discover(ctx: &Context, prefix: &str, seconds: f64) -> anyhow::Result<String> {
    ctx.home.create()?;
    let quiet = Duration::try_from_secs_f64(seconds)
        .ok()
        .filter(|d| !d.is_zero() && *d <= Duration::from_secs(60))
        .ok_or_else(|| usage("--wait: a number of seconds above 0 and at most 60"))?;
    if prefix.is_empty() || prefix.contains(['+', '#']) || prefix.ends_with('/') {
        return Err(usage(
            "--prefix: one topic level such as homeassistant, no wildcards",
        ));
    }
    let store = ctx.device_store()?;
    let broker = ctx.broker()?;
    let filters = tau_devices::filters(prefix);
    let filter_refs: Vec<&str> = filters.iter().map(String::as_str).collect();
    let messages = broker
        .companion(DISCOVERY_CLIENT)
        .read(
            &filter_refs,
            quiet,
            quiet + Duration::from_secs(30),
            usize::MAX,
        )
        .await?;
    let now = Timestamp::now();
    for message in &messages {
        store.record_discovery(
            &message.topic,
            &String::from_utf8_lossy(&message.payload),
            now,
        )?;
    }
    let registry = ctx.registry(&store)?;
    let proposals = proposals(&registry, &store)?;
    let mut out = format!(
        "Home Assistant discovery at {} ({}): {} config{}\n",
        broker.address(),
        filters.join(", "),
        messages.len(),
        if messages.len() == 1 { "" } else { "s" }
    );
    let (usable, unusable): (Vec<_>, Vec<_>) = proposals.iter().partition(|p| p.def.is_ok());
    if !usable.is_empty() {
        out.push_str("\nproposed (nothing is added until you run `tau devices pin NAME`):\n");
    }
    for proposal in usable {
        let Ok(def) = &proposal.def else { continue };
        let room = def
            .room
            .as_ref()
            .map(|r| format!(" ({r})"))
            .unwrap_or_default();
        let (names, problem): (Vec<String>, String) = match def.check() {
            Ok(device) => (
                device.actions.keys().map(ToString::to_string).collect(),
                String::new(),
            ),
            Err(error) => (
                def.actions.keys().cloned().collect(),
                format!("  ✗ cannot be pinned as is: {error}"),
            ),
        };
        let _ = writeln!(
            out,
            "  {}  {}{room}, a {}: {}  commands to {}  from {}{problem}",
            display(&def.name),
            display(&def.label),
            def.kind,
            display(&names.join(", ")),
            display(def.command_topic.as_deref().unwrap_or("-")),
            display(&proposal.topic),
        );
    }
    if !unusable.is_empty() {
        out.push_str("\nnot usable:\n");
    }
    for proposal in unusable {
        if let Err(problem) = &proposal.def {
            let _ = writeln!(out, "  {}: {}", display(&proposal.topic), display(problem));
        }
    }
    let mut pinned_header = false;
    for registered in registry.devices() {
        let Origin::Pinned { .. } = &registered.origin else {
            continue;
        };
        if !pinned_header {
            out.push_str("\npinned:\n");
            pinned_header = true;
        }
        let lines = drift(registered, &store)?;
        if lines.is_empty() {
            let _ = writeln!(out, "  {}: as pinned", registered.device.name);
        } else {
            let _ = writeln!(
                out,
                "  {}: ⚠ discovery now differs; tau keeps what you pinned: {}",
                registered.device.name,
                display(&lines.join("; "))
            );
        }
    }
    Ok(out)
}

pub(crate) fn pin(ctx: &Context, pin: &PinDevice) -> anyhow::Result<String> {
    ctx.home.create()?;
    let store = ctx.device_store()?;
    let mut registry = ctx.registry(&store)?;
    let proposals = proposals(&registry, &store)?;
    let proposal = proposals
        .iter()
        .find(|p| p.def.as_ref().is_ok_and(|d| d.name == pin.name))
        .ok_or_else(|| {
            usage(format!(
                "no discovery proposal is named '{}' (run `tau devices discover` to see them)",
                pin.name
            ))
        })?;
    let Ok(proposed) = &proposal.def else {
        return Err(usage("that proposal cannot be used"));
    };
    let mut def = proposed.clone();
    if let Some(name) = &pin.as_name {
        def.name = name.clone();
    }
    if let Some(label) = &pin.label {
        def.label = label.clone();
    }
    if let Some(room) = &pin.room {
        def.room = Some(room.clone());
    }
    let origin = Origin::Pinned {
        discovery_topic: proposal.topic.clone(),
    };
    registry.add(&def, origin.clone()).map_err(|e| {
        usage(format!(
            "{}; pin it with --label, --room or --as to give it words of your own",
            display(&e.to_string())
        ))
    })?;
    if !store.add(&def, &origin, Timestamp::now())? {
        return Err(usage(format!(
            "a device named '{}' is already stored",
            def.name
        )));
    }
    let registered = registry.named(&def.name).map_err(usage)?;
    Ok(format!(
        "pinned {}: {}, a {}{} ({}); its name and room stay as pinned whatever discovery says later\n",
        def.name,
        place(registered),
        def.kind,
        if registered.device.lock_class {
            ", lock-class"
        } else {
            ""
        },
        actions(registered)
    ))
}
