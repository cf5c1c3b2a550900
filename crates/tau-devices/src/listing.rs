//! The registry as a person reads it (`tau devices list`, `show`, `discover`, and what
//! `add` and `pin` say). Every field of every device and proposal is shown through the
//! display function, its lookalike words flagged ([`tau_core::Listing`]): discovery is
//! unauthenticated, and a pinned device keeps the words its config had.

use std::collections::BTreeSet;
use std::fmt::Write;

use tau_core::{Listing, display};

use crate::def::ActionDef;
use crate::discovery::{Proposal, mismatch, name_proposals, propose};
use crate::registry::{Origin, Registered, Registry, number};
use crate::store::{DeviceStore, StoreError};
use crate::watch::pinned_topics;

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

/// `Label (room)`, each escaped, their lookalike words kept in `entry`.
fn place(entry: &mut Listing, label: &str, room: Option<&str>) -> String {
    let label = entry.field("label", label);
    match room {
        Some(room) => format!("{label} ({})", entry.field("room", room)),
        None => label,
    }
}

fn registered_place(entry: &mut Listing, registered: &Registered) -> String {
    let device = &registered.device;
    place(entry, &device.label, device.room.as_deref())
}

/// The mismatch lines of a pinned device, or none.
fn drift(registered: &Registered, store: &DeviceStore) -> Result<Vec<String>, StoreError> {
    let Origin::Pinned { discovery_topic } = &registered.origin else {
        return Ok(Vec::new());
    };
    Ok(mismatch(
        &registered.device.def,
        store.discovery(discovery_topic)?.as_ref(),
    ))
}

/// One device of `tau devices list`: its columns, escaped, and its flag lines.
struct ListRow {
    name: String,
    place: String,
    rest: String,
    flags: String,
}

/// `tau devices list`: one line a device, its words flagged below it.
pub fn list_text(registry: &Registry, store: &DeviceStore) -> Result<String, StoreError> {
    if registry.is_empty() {
        return Ok("no devices yet: add [[devices]] to tau.toml, `tau devices add`, or `tau devices discover` and `tau devices pin NAME`\n".to_owned());
    }
    let mut rows = Vec::new();
    for registered in registry.devices() {
        let device = &registered.device;
        let mut entry = Listing::new();
        let class = if device.lock_class {
            ", lock-class"
        } else {
            ""
        };
        let warning = if drift(registered, store)?.is_empty() {
            ""
        } else {
            "  ⚠ discovery now differs (tau devices show)"
        };
        let name = entry.field("name", &device.name);
        let place = registered_place(&mut entry, registered);
        let rest = format!(
            "{}{class}: {}  [{}]{warning}",
            device.kind,
            entry.field("actions", &actions(registered)),
            entry.field("from", &registered.origin.describe()),
        );
        rows.push(ListRow {
            name,
            place,
            rest,
            flags: entry.flags("  "),
        });
    }
    let width = rows.iter().map(|r| r.name.chars().count()).max();
    let place_width = rows.iter().map(|r| r.place.chars().count()).max();
    let (width, place_width) = (width.unwrap_or(0), place_width.unwrap_or(0));
    let mut out = String::new();
    for row in rows {
        let _ = writeln!(
            out,
            "{:<width$}  {:<place_width$}  {}",
            row.name, row.place, row.rest
        );
        out.push_str(&row.flags);
    }
    Ok(out)
}

/// `tau devices show NAME`: one device whole, and what discovery says now of a pinned one.
pub fn show_text(registered: &Registered, store: &DeviceStore) -> Result<String, StoreError> {
    let device = &registered.device;
    let mut entry = Listing::new();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}  {}",
        entry.field("name", &device.name),
        registered_place(&mut entry, registered)
    );
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
    let _ = writeln!(
        out,
        "from           {}",
        entry.field("from", &registered.origin.describe())
    );
    if let Some(topic) = &device.command_topic {
        let _ = writeln!(
            out,
            "command topic  {}{}",
            entry.field("command topic", topic),
            if device.retain { " (retained)" } else { "" }
        );
    }
    if let Some(topic) = &device.state_topic {
        let _ = writeln!(out, "state topic    {}", entry.field("state topic", topic));
    }
    for (action, payload) in &device.def.actions {
        let label = format!("actions.{action}");
        let sent = match payload {
            ActionDef::Payload(payload) => entry.field(&label, &format!("{payload:?}")),
            ActionDef::Range(range) => entry.field(
                &label,
                &format!(
                    "{} to {}{}{}, sent as {:?}",
                    number(range.min),
                    number(range.max),
                    range
                        .unit
                        .as_ref()
                        .map(|u| format!(" {u}"))
                        .unwrap_or_default(),
                    range
                        .step
                        .map(|s| format!(" in steps of {}", number(s)))
                        .unwrap_or_default(),
                    range.payload
                ),
            ),
        };
        let _ = writeln!(out, "action {:<8}{sent}", display(action));
    }
    let lines = drift(registered, store)?;
    if !lines.is_empty() {
        let _ = writeln!(
            out,
            "⚠ Home Assistant discovery now describes it differently; tau keeps what you pinned:"
        );
        for line in lines {
            let _ = writeln!(out, "  {}", entry.field("discovery now", &line));
        }
    }
    out.push_str(&entry.flags(""));
    Ok(out)
}

/// The proposals of every config recorded, named against the registry, and the topics of
/// the devices already pinned.
pub fn proposals(registry: &Registry, store: &DeviceStore) -> Result<Vec<Proposal>, StoreError> {
    let pinned: BTreeSet<String> = pinned_topics(registry).into_iter().collect();
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

/// What `tau devices discover` says: the configs read at `address` (`filters`), the
/// proposals they make against `registry`, those not usable, and the pinned devices with
/// what discovery says of them now.
pub fn discovery_text(
    address: &str,
    filters: &[String],
    configs: usize,
    registry: &Registry,
    store: &DeviceStore,
) -> Result<String, StoreError> {
    let proposals = proposals(registry, store)?;
    let mut out = format!(
        "Home Assistant discovery at {} ({}): {} config{}\n",
        display(address),
        display(&filters.join(", ")),
        configs,
        if configs == 1 { "" } else { "s" }
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
        let lines = drift(registered, store)?;
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

/// What `tau devices add` says of the device it added.
pub fn added_text(registered: &Registered) -> String {
    let def = &registered.device.def;
    let mut entry = Listing::new();
    format!(
        "added {}: {}, a {} ({})\n{}",
        entry.field("name", &def.name),
        registered_place(&mut entry, registered),
        def.kind,
        actions(registered),
        entry.flags("  ")
    )
}

/// What `tau devices pin` says of the device it pinned.
pub fn pinned_text(registered: &Registered) -> String {
    let def = &registered.device.def;
    let mut entry = Listing::new();
    format!(
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
    )
}
