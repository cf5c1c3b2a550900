//! Devices in `state.db`: those added with `tau devices add` or pinned from a discovery
//! proposal, the Home Assistant discovery configs tau has seen (the latest per topic, so a
//! later rename shows as a mismatch), and the last state read from each device (so its age
//! can be told). Its own tables beside the sessions'; this one module opens them, so moving
//! it next to the other tables of `state.db` moves all of it.

use std::path::Path;
use std::sync::{Mutex, MutexGuard, PoisonError};

use jiff::Timestamp;
use rusqlite::{Connection, OptionalExtension, params};

use crate::def::DeviceDef;
use crate::registry::Origin;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS devices (
    name TEXT PRIMARY KEY,
    definition TEXT NOT NULL,
    discovery_topic TEXT,
    added_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS device_discoveries (
    topic TEXT PRIMARY KEY,
    payload TEXT NOT NULL,
    since TEXT NOT NULL,
    seen_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS device_states (
    device TEXT PRIMARY KEY,
    payload BLOB NOT NULL,
    since TEXT NOT NULL,
    checked_at TEXT NOT NULL
);
";

/// The device store could not be read or written.
#[derive(Debug, thiserror::Error)]
#[error("device store: {0}")]
pub struct StoreError(pub String);

impl From<rusqlite::Error> for StoreError {
    fn from(error: rusqlite::Error) -> Self {
        Self(error.to_string())
    }
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

/// The latest discovery config seen at one topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeenConfig {
    pub topic: String,
    /// As published (JSON text). Untrusted.
    pub payload: String,
    /// Since when this exact payload has been seen there.
    pub since: Timestamp,
    pub seen_at: Timestamp,
}

/// The state a device reported, and since when tau has seen it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeenState {
    pub payload: Vec<u8>,
    /// When tau first read this state (it may be older: a retained message carries no time).
    pub since: Timestamp,
    /// False when tau read this same state before.
    pub changed: bool,
}

/// The store. Safe to share between threads; several processes may open one file.
pub struct DeviceStore {
    connection: Mutex<Connection>,
}

fn time(text: &str) -> Timestamp {
    text.parse().unwrap_or(Timestamp::UNIX_EPOCH)
}

impl DeviceStore {
    /// Opens (creating when needed) the tables in the SQLite file at `path`.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        Self::setup(Connection::open(path)?)
    }

    /// A store that lives as long as this value, for tests and one-off runs.
    pub fn in_memory() -> Result<Self, StoreError> {
        Self::setup(Connection::open_in_memory()?)
    }

    fn setup(connection: Connection) -> Result<Self, StoreError> {
        tau_agent::prepare_state_tables(&connection, SCHEMA)?;
        Ok(Self {
            connection: Mutex::new(connection),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Connection> {
        self.connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Every stored device, by name. A row that no longer reads is reported, not hidden.
    pub fn devices(&self) -> Result<Vec<StoredRow>, StoreError> {
        let connection = self.lock();
        let mut statement = connection.prepare(
            "SELECT name, definition, discovery_topic, added_at FROM devices ORDER BY name",
        )?;
        let rows = statement.query_map([], |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, Option<String>>(2)?,
                row.get::<_, String>(3)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (name, definition, discovery_topic, added_at) = row?;
            out.push(
                serde_json::from_str::<DeviceDef>(&definition)
                    .map(|def| StoredDevice {
                        def,
                        origin: match discovery_topic {
                            Some(discovery_topic) => Origin::Pinned { discovery_topic },
                            None => Origin::Added,
                        },
                        added_at: time(&added_at),
                    })
                    .map_err(|error| (name, error.to_string())),
            );
        }
        Ok(out)
    }

    /// Stores a device. False when one of that name is stored already.
    pub fn add(
        &self,
        def: &DeviceDef,
        origin: &Origin,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        let definition =
            serde_json::to_string(def).map_err(|error| StoreError(error.to_string()))?;
        let discovery_topic = match origin {
            Origin::Pinned { discovery_topic } => Some(discovery_topic.as_str()),
            Origin::Added | Origin::Config => None,
        };
        let inserted = self.lock().execute(
            "INSERT OR IGNORE INTO devices (name, definition, discovery_topic, added_at)
             VALUES (?1, ?2, ?3, ?4)",
            params![def.name, definition, discovery_topic, now.to_string()],
        )?;
        Ok(inserted == 1)
    }

    /// Removes a stored device and its last state. False when there was none.
    pub fn remove(&self, name: &str) -> Result<bool, StoreError> {
        let mut connection = self.lock();
        let tx = connection.transaction()?;
        let removed = tx.execute("DELETE FROM devices WHERE name = ?1", params![name])?;
        tx.execute("DELETE FROM device_states WHERE device = ?1", params![name])?;
        tx.commit()?;
        Ok(removed == 1)
    }

    /// Records the discovery config seen at `topic` now. An empty payload (Home Assistant's
    /// way of removing a device) forgets the topic.
    pub fn record_discovery(
        &self,
        topic: &str,
        payload: &str,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let connection = self.lock();
        if payload.is_empty() {
            connection.execute(
                "DELETE FROM device_discoveries WHERE topic = ?1",
                params![topic],
            )?;
            return Ok(());
        }
        connection.execute(
            "INSERT INTO device_discoveries (topic, payload, since, seen_at) VALUES (?1, ?2, ?3, ?3)
             ON CONFLICT(topic) DO UPDATE SET
                 since = CASE WHEN payload = excluded.payload THEN since ELSE excluded.since END,
                 payload = excluded.payload,
                 seen_at = excluded.seen_at",
            params![topic, payload, now.to_string()],
        )?;
        Ok(())
    }

    /// The latest config seen at `topic`.
    pub fn discovery(&self, topic: &str) -> Result<Option<SeenConfig>, StoreError> {
        Ok(self
            .lock()
            .query_row(
                "SELECT topic, payload, since, seen_at FROM device_discoveries WHERE topic = ?1",
                params![topic],
                seen_config,
            )
            .optional()?)
    }

    /// Every config seen, by topic.
    pub fn discoveries(&self) -> Result<Vec<SeenConfig>, StoreError> {
        let connection = self.lock();
        let mut statement = connection.prepare(
            "SELECT topic, payload, since, seen_at FROM device_discoveries ORDER BY topic",
        )?;
        let rows = statement.query_map([], seen_config)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Records the state `device` reports now; says since when tau has seen it.
    pub fn observe_state(
        &self,
        device: &str,
        payload: &[u8],
        now: Timestamp,
    ) -> Result<SeenState, StoreError> {
        let mut connection = self.lock();
        let tx = connection.transaction()?;
        let before: Option<(Vec<u8>, String)> = tx
            .query_row(
                "SELECT payload, since FROM device_states WHERE device = ?1",
                params![device],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .optional()?;
        let (since, changed) = match before {
            Some((old, since)) if old == payload => (time(&since), false),
            Some(_) | None => (now, true),
        };
        tx.execute(
            "INSERT INTO device_states (device, payload, since, checked_at) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT(device) DO UPDATE SET payload = excluded.payload, since = excluded.since,
                 checked_at = excluded.checked_at",
            params![device, payload, since.to_string(), now.to_string()],
        )?;
        tx.commit()?;
        Ok(SeenState {
            payload: payload.to_vec(),
            since,
            changed,
        })
    }
}

fn seen_config(row: &rusqlite::Row<'_>) -> rusqlite::Result<SeenConfig> {
    Ok(SeenConfig {
        topic: row.get(0)?,
        payload: row.get(1)?,
        since: time(&row.get::<_, String>(2)?),
        seen_at: time(&row.get::<_, String>(3)?),
    })
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
        }
    }

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(seconds).unwrap()
    }

    #[test]
    fn devices_are_added_once_read_back_and_removed() {
        let store = DeviceStore::in_memory().unwrap();
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
        let store = DeviceStore::in_memory().unwrap();
        store
            .lock()
            .execute(
                "INSERT INTO devices (name, definition, added_at) VALUES ('x', '{\"name\":1}', 'now')",
                [],
            )
            .unwrap();
        let rows = store.devices().unwrap();
        assert!(
            matches!(&rows[..], [Err((name, _))] if name == "x"),
            "{rows:?}"
        );
    }

    #[test]
    fn a_discovery_config_keeps_since_until_it_changes() {
        let store = DeviceStore::in_memory().unwrap();
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
        let store = DeviceStore::in_memory().unwrap();
        let first = store.observe_state("porch-light", b"ON", at(10)).unwrap();
        assert_eq!((first.since, first.changed), (at(10), true));
        let again = store.observe_state("porch-light", b"ON", at(50)).unwrap();
        assert_eq!((again.since, again.changed), (at(10), false));
        let other = store.observe_state("porch-light", b"OFF", at(60)).unwrap();
        assert_eq!((other.since, other.changed), (at(60), true));
    }
}
