//! `tau devices discover` and `tau devices pin`: Home Assistant's discovery configs read
//! from the broker, proposed as devices, and pinned only by name. Anyone who can publish
//! on the broker writes these configs, so every field of a proposal (name, label, room,
//! actions, topics, the reason one cannot be used) is shown through the display function
//! and its lookalike words are flagged below it.

use std::collections::BTreeSet;
use std::fmt::Write;
use std::time::Duration;

use jiff::Timestamp;
use tau_core::{Listing, display};
use tau_devices::{DeviceStore, Origin, Proposal, Registry, name_proposals, propose};

use super::{DISCOVERY_CLIENT, actions, drift, place, registered_place};
use crate::cli::PinDevice;
use crate::context::Context;
use crate::errors::usage;

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
    ctx.create_home()?;
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
        display(&broker.address()),
        display(&filters.join(", ")),
        messages.len(),
        if messages.len() == 1 { "" } else { "s" }
    );
    let (usable, unusable): (Vec<_>, Vec<_>) = proposals.iter().partition(|p| p.def.is_ok());
    if !usable.is_empty() {
        out.push_str("\nproposed (nothing is added until you run `tau devices pin NAME`):\n");
    }
    for proposal in usable {
        let Ok(def) = &proposal.def else { continue };
        let mut entry = Listing::new();
        let (names, problem): (Vec<String>, String) = match def.check() {
            Ok(device) => (
                device.actions.keys().map(ToString::to_string).collect(),
                String::new(),
            ),
            Err(error) => (
                def.actions.keys().cloned().collect(),
                format!(
                    "  ✗ cannot be pinned as is: {}",
                    display(&error.to_string())
                ),
            ),
        };
        let _ = writeln!(
            out,
            "  {}  {}, a {}: {}  commands to {}  from {}{problem}",
            entry.field("name", &def.name),
            place(&mut entry, &def.label, def.room.as_deref()),
            def.kind,
            entry.field("actions", &names.join(", ")),
            entry.field("command topic", def.command_topic.as_deref().unwrap_or("-")),
            entry.field("config topic", &proposal.topic),
        );
        out.push_str(&entry.flags("    "));
    }
    if !unusable.is_empty() {
        out.push_str("\nnot usable:\n");
    }
    for proposal in unusable {
        if let Err(problem) = &proposal.def {
            let mut entry = Listing::new();
            let _ = writeln!(
                out,
                "  {}: {}",
                entry.field("config topic", &proposal.topic),
                // It quotes the config's words at most, which are flagged where they stand.
                display(problem)
            );
            out.push_str(&entry.flags("    "));
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
        let mut entry = Listing::new();
        let name = entry.field("name", &registered.device.name);
        let lines = drift(registered, &store)?;
        if lines.is_empty() {
            let _ = writeln!(out, "  {name}: as pinned");
        } else {
            let _ = writeln!(
                out,
                "  {name}: ⚠ discovery now differs; tau keeps what you pinned: {}",
                entry.field("discovery now", &lines.join("; "))
            );
        }
        out.push_str(&entry.flags("    "));
    }
    Ok(out)
}

pub(crate) fn pin(ctx: &Context, pin: &PinDevice) -> anyhow::Result<String> {
    ctx.create_home()?;
    let store = ctx.device_store()?;
    let mut registry = ctx.registry(&store)?;
    let proposals = proposals(&registry, &store)?;
    let proposal = proposals
        .iter()
        .find(|p| p.def.as_ref().is_ok_and(|d| d.name == pin.name))
        .ok_or_else(|| {
            usage(format!(
                "no discovery proposal is named '{}' (run `tau devices discover` to see them)",
                display(&pin.name)
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
    let mut entry = Listing::new();
    Ok(format!(
        "pinned {}: {}, a {}{} ({}); its name and room stay as pinned whatever discovery says later\n{}",
        entry.field("name", &def.name),
        registered_place(&mut entry, registered),
        def.kind,
        if registered.device.lock_class {
            ", lock-class"
        } else {
            ""
        },
        actions(registered),
        entry.flags("  ")
    ))
}
