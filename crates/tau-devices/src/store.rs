//! Devices in `state.db`, as the registry reads them: those added with `tau devices add`
//! or pinned from a discovery proposal, the Home Assistant discovery configs tau has seen
//! (the latest per topic, so a later rename shows as a mismatch), and the last state read
//! from each device (so its age can be told). `tau-state` keeps the rows; this is where a
//! stored definition becomes a device.

use jiff::Timestamp;
use tau_state::{DeviceRow, Devices, SeenConfig, SeenState, StateError};

use crate::def::DeviceDef;
use crate::registry::Origin;

/// The device store could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("device store: {0}")]
    State(#[from] StateError),
    #[error("device store: a device's definition does not encode: {0}")]
    Encode(#[from] serde_json::Error),
}

/// A device as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredDevice {
    pub def: DeviceDef,
    /// `Added` or `Pinned`.
    pub origin: Origin,
    pub added_at: Timestamp,
}

/// A stored device, or the name of one that no longer reads and why.
pub type StoredRow = Result<StoredDevice, (String, String)>;

/// The devices' tables of one `state.db`. Safe to share between threads; several
/// processes may have the same file open.
pub struct DeviceStore {
    db: Devices,
}

impl DeviceStore {
    pub fn new(db: Devices) -> Self {
        Self { db }
    }

    /// Every stored device, by name. A row that no longer reads is reported, not hidden.
    pub fn devices(&self) -> Result<Vec<StoredRow>, StoreError> {
        Ok(self
            .db
            .devices()?
            .into_iter()
            .map(|row| {
                serde_json::from_str::<DeviceDef>(&row.definition)
                    .map(|def| StoredDevice {
                        def,
                        origin: match row.discovery_topic {
                            Some(discovery_topic) => Origin::Pinned { discovery_topic },
                            None => Origin::Added,
                        },
                        added_at: row.added_at,
                    })
                    .map_err(|error| (row.name, error.to_string()))
            })
            .collect())
    }

    /// Stores a device. False when one of that name is stored already.
    pub fn add(
        &self,
        def: &DeviceDef,
        origin: &Origin,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        let definition = serde_json::to_string(def)?;
        let discovery_topic = match origin {
            Origin::Pinned { discovery_topic } => Some(discovery_topic.clone()),
            Origin::Added | Origin::Config => None,
        };
        Ok(self.db.add_device(&DeviceRow {
            name: def.name.clone(),
            definition,
            discovery_topic,
            added_at: now,
        })?)
    }

    /// Removes a stored device and its last state. False when there was none.
    pub fn remove(&self, name: &str) -> Result<bool, StoreError> {
        Ok(self.db.remove_device(name)?)
    }

    /// Records the discovery config seen at `topic` now. An empty payload (Home Assistant's
    /// way of removing a device) forgets the topic.
    pub fn record_discovery(
        &self,
        topic: &str,
        payload: &str,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        Ok(self.db.record_discovery(topic, payload, now)?)
    }

    /// The latest config seen at `topic`.
    pub fn discovery(&self, topic: &str) -> Result<Option<SeenConfig>, StoreError> {
        Ok(self.db.discovery(topic)?)
    }

    /// Every config seen, by topic.
    pub fn discoveries(&self) -> Result<Vec<SeenConfig>, StoreError> {
        Ok(self.db.discoveries()?)
    }

    /// Records the state `device` reports now; says since when tau has seen it.
    pub fn observe_state(
        &self,
        device: &str,
        payload: &[u8],
        now: Timestamp,
    ) -> Result<SeenState, StoreError> {
        Ok(self.db.observe_device_state(device, payload, now)?)
    }
}

impl crate::Registry {
    /// Adds every device `store` keeps after those already here (`tau.toml`'s). A stored
    /// device that no longer fits is left out; the returned lines say which and why.
    pub fn add_stored(&mut self, store: &DeviceStore) -> Result<Vec<String>, StoreError> {
        let mut left_out = Vec::new();
        for row in store.devices()? {
            let added = match row {
                Ok(stored) => self
                    .add(&stored.def, stored.origin)
                    .map_err(|e| e.to_string()),
                Err((name, problem)) => Err(format!("devices.{name}: cannot be read: {problem}")),
            };
            if let Err(problem) = added {
                left_out.push(problem);
            }
        }
        Ok(left_out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kind::DeviceKind;
    use pretty_assertions::assert_eq;

    fn def(name: &str) -> DeviceDef {
        DeviceDef {
            name: name.into(),
            label: "Porch light".into(),
            room: Some("porch".into()),
            kind: DeviceKind::Light,
            command_topic: Some("home/porch/set".into()),
            state_topic: None,
            actions: [("on".to_owned(), crate::def::ActionDef::Payload("ON".into()))].into(),
            retain: false,
            high_risk: None,
            approvers: Vec::new(),
        }
    }

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(seconds).unwrap()
    }

    fn store(dir: &tempfile::TempDir) -> DeviceStore {
        DeviceStore::new(
            tau_state::StateDb::open(&dir.path().join("state.db"))
                .unwrap()
                .devices(),
        )
    }

    #[test]
    fn devices_are_added_once_read_back_and_removed() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(&dir);
        assert!(
            store
                .add(&def("porch-light"), &Origin::Added, at(10))
                .unwrap()
        );
        assert!(
            !store
                .add(&def("porch-light"), &Origin::Added, at(20))
                .unwrap()
        );
        let pinned = Origin::Pinned {
            discovery_topic: "homeassistant/cover/garage/config".into(),
        };
        assert!(store.add(&def("garage-door"), &pinned, at(30)).unwrap());
        let rows = store.devices().unwrap();
        assert_eq!(
            rows,
            vec![
                Ok(StoredDevice {
                    def: def("garage-door"),
                    origin: pinned,
                    added_at: at(30)
                }),
                Ok(StoredDevice {
                    def: def("porch-light"),
                    origin: Origin::Added,
                    added_at: at(10)
                }),
            ]
        );
        assert!(store.remove("porch-light").unwrap());
        assert!(!store.remove("porch-light").unwrap());
        assert_eq!(store.devices().unwrap().len(), 1);
    }

    #[test]
    fn a_row_that_no_longer_reads_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(&dir);
        store
            .db
            .add_device(&DeviceRow {
                name: "x".into(),
                definition: "{\"name\":1}".into(),
                discovery_topic: None,
                added_at: at(1),
            })
            .unwrap();
        let rows = store.devices().unwrap();
        assert!(
            matches!(&rows[..], [Err((name, _))] if name == "x"),
            "{rows:?}"
        );
    }

    #[test]
    fn a_discovery_config_keeps_since_until_it_changes() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(&dir);
        let topic = "homeassistant/cover/garage/config";
        store
            .record_discovery(topic, "{\"name\":\"Garage\"}", at(10))
            .unwrap();
        store
            .record_discovery(topic, "{\"name\":\"Garage\"}", at(20))
            .unwrap();
        let seen = store.discovery(topic).unwrap().unwrap();
        assert_eq!((seen.since, seen.seen_at), (at(10), at(20)));
        store
            .record_discovery(topic, "{\"name\":\"kitchen light\"}", at(30))
            .unwrap();
        let seen = store.discovery(topic).unwrap().unwrap();
        assert_eq!(
            (seen.payload.as_str(), seen.since, seen.seen_at),
            ("{\"name\":\"kitchen light\"}", at(30), at(30))
        );
        store.record_discovery(topic, "", at(40)).unwrap();
        assert_eq!(store.discovery(topic).unwrap(), None);
        assert_eq!(store.discoveries().unwrap(), vec![]);
    }

    #[test]
    fn a_state_is_aged_from_when_tau_first_saw_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(&dir);
        let first = store.observe_state("porch-light", b"ON", at(10)).unwrap();
        assert_eq!((first.since, first.changed), (at(10), true));
        let again = store.observe_state("porch-light", b"ON", at(50)).unwrap();
        assert_eq!((again.since, again.changed), (at(10), false));
        let other = store.observe_state("porch-light", b"OFF", at(60)).unwrap();
        assert_eq!((other.since, other.changed), (at(60), true));
    }
}
