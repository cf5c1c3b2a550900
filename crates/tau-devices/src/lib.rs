//! tau-devices: the devices tau knows, by name.
//!
//! Owns the device registry (`[[devices]]` in `tau.toml`, devices added with `tau devices
//! add` or pinned from Home Assistant discovery), the kinds of devices with their actions,
//! payloads, ranges and units, the device tools (`device_state`, `device_set`), the words
//! tau writes on the approval card of a device call, and its tables in `state.db`. A
//! device call is resolved against the registry before anyone is asked, so the card says
//! what will happen in tau's words ("switch ON · Kitchen light (kitchen)"), never the
//! model's. Knows nothing of channels or of how a question is asked; MQTT is reached
//! through tau-tools' broker.
//!
//! Layout
//! - `kind.rs`: [`DeviceKind`], [`ActionName`], which kinds are lock-class
//! - `def.rs`: [`DeviceDef`] as written and its checks into a [`Device`]
//! - `registry.rs`: [`Registry`], resolving a `device_set` call into a [`Command`]
//! - `card.rs`: headlines and notes for `device_set` and raw `mqtt_publish` calls
//! - `tools.rs`: `device_state`, `device_set`
//! - `discovery.rs`: Home Assistant discovery configs as proposals, and how a pinned
//!   device differs from what discovery says now
//! - `store.rs`: the tables in `state.db` (stored devices, seen discovery configs, states)
//! - `watch.rs`: records the discovery configs of pinned devices while tau runs
//! - `listing.rs`: the registry as `tau devices` shows it, every field escaped and flagged
//! - `example.rs`: an example home and its questions, which every channel's tests render
//! - `demo_lamp.rs`: `tau demo`'s lamp, a tiny MQTT endpoint that is broker and lamp

mod card;
mod def;
pub mod demo_lamp;
mod discovery;
pub mod example;
mod kind;
pub mod listing;
mod registry;
mod store;
mod tools;
mod watch;

pub use card::{
    DeviceCards, LOCK_CLASS_SUFFIX, MODEL_SAYS, device_set_card, headline, mqtt_publish_card,
};
pub use def::{
    ActionDef, ActionPayload, Device, DeviceDef, DeviceError, MAX_NAME_CHARS, Range, RangeDef,
    name_problem,
};
pub use discovery::{Proposal, filters, mismatch, name_proposals, propose};
pub use kind::{ActionName, DeviceKind};
pub use registry::{Command, Origin, Registered, Registry, RegistryError, number};
pub use store::{DeviceStore, StoreError, StoredDevice, StoredRow};
pub use tools::{DEVICE_SET_EFFECT, DeviceTools, ReadWait};
pub use watch::{DiscoveryWatch, pinned_topics, start_discovery_watch, watch_discovery};
