//! `tau devices discover` and `tau devices pin`: Home Assistant's discovery configs read
//! from the broker, proposed as devices, and pinned only by name. Anyone who can publish
//! on the broker writes these configs, so every field of a proposal (name, label, room,
//! actions, topics, the reason one cannot be used) is shown through the display function
//! and its lookalike words are flagged below it.

use std::time::Duration;

use jiff::Timestamp;
use tau_core::display;
use tau_devices::Origin;

use super::{DISCOVERY_CLIENT, listing};
use crate::cli::PinDevice;
use crate::context::Context;
use crate::errors::usage;

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
    Ok(listing::discovery_text(
        &broker.address(),
        &filters,
        messages.len(),
        &registry,
        &store,
    )?)
}

pub(crate) fn pin(ctx: &Context, pin: &PinDevice) -> anyhow::Result<String> {
    ctx.create_home()?;
    let store = ctx.device_store()?;
    let mut registry = ctx.registry(&store)?;
    let proposals = listing::proposals(&registry, &store)?;
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
    Ok(listing::pinned_text(registered))
}
