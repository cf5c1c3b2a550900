//! Devices: those added with `tau devices add` or pinned from a discovery proposal (their
//! definition as JSON), the Home Assistant discovery configs tau has seen (the latest per
//! topic, so a later rename shows as a mismatch), and the last state read from each device
//! (so its age can be told). What a definition means is `tau-devices`'s; this module
//! keeps the text.

use jiff::Timestamp;
use rusqlite::params;

use crate::error::StateError;
use crate::handles::Devices;
use crate::sql::Row;

/// A device as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceRow {
    pub name: String,
    /// Its definition, JSON.
    pub definition: String,
    /// The discovery topic it was pinned from; `None` for one added by hand.
    pub discovery_topic: Option<String>,
    pub added_at: Timestamp,
}

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

/// A stored time that no longer reads is the epoch, never an error that hides the rest.
fn time(text: &str) -> Timestamp {
    text.parse().unwrap_or(Timestamp::UNIX_EPOCH)
}

fn seen_config(row: &Row<'_>) -> rusqlite::Result<SeenConfig> {
    Ok(SeenConfig {
        topic: row.get(0)?,
        payload: row.get(1)?,
        since: time(&row.get::<_, String>(2)?),
        seen_at: time(&row.get::<_, String>(3)?),
    })
}

impl Devices {
    /// Every stored device, by name.
    pub fn devices(&self) -> Result<Vec<DeviceRow>, StateError> {
        self.db.read(|c| {
            c.query_map(
                "SELECT name, definition, discovery_topic, added_at FROM devices ORDER BY name",
                params![],
                |row| {
                    Ok(DeviceRow {
                        name: row.get(0)?,
                        definition: row.get(1)?,
                        discovery_topic: row.get(2)?,
                        added_at: time(&row.get::<_, String>(3)?),
                    })
                },
            )
        })
    }

    /// Stores a device; false when one of that name is stored already.
    pub fn add_device(&self, row: &DeviceRow) -> Result<bool, StateError> {
        self.db.write(|tx| {
            Ok(tx.execute(
                "INSERT INTO devices (name, definition, discovery_topic, added_at)
                 VALUES (?1, ?2, ?3, ?4) ON CONFLICT DO NOTHING",
                params![
                    row.name,
                    row.definition,
                    row.discovery_topic,
                    row.added_at.to_string()
                ],
            )? == 1)
        })
    }

    /// Removes a stored device and its last state; false when there was none.
    pub fn remove_device(&self, name: &str) -> Result<bool, StateError> {
        self.db.write(|tx| {
            let removed = tx.execute("DELETE FROM devices WHERE name = ?1", params![name])?;
            tx.execute("DELETE FROM device_states WHERE device = ?1", params![name])?;
            Ok(removed == 1)
        })
    }

    /// Records the discovery config seen at `topic` now. An empty payload (Home Assistant's
    /// way of removing a device) forgets the topic.
    pub fn record_discovery(
        &self,
        topic: &str,
        payload: &str,
        now: Timestamp,
    ) -> Result<(), StateError> {
        self.db.write(|tx| {
            if payload.is_empty() {
                tx.execute(
                    "DELETE FROM device_discoveries WHERE topic = ?1",
                    params![topic],
                )?;
                return Ok(());
            }
            tx.execute(
                "INSERT INTO device_discoveries (topic, payload, since, seen_at) VALUES (?1, ?2, ?3, ?3)
                 ON CONFLICT(topic) DO UPDATE SET
                     since = CASE WHEN device_discoveries.payload = excluded.payload
                                  THEN device_discoveries.since ELSE excluded.since END,
                     payload = excluded.payload,
                     seen_at = excluded.seen_at",
                params![topic, payload, now.to_string()],
            )?;
            Ok(())
        })
    }

    /// The latest config seen at `topic`.
    pub fn discovery(&self, topic: &str) -> Result<Option<SeenConfig>, StateError> {
        self.db.read(|c| {
            c.query_optional(
                "SELECT topic, payload, since, seen_at FROM device_discoveries WHERE topic = ?1",
                params![topic],
                seen_config,
            )
        })
    }

    /// Every config seen, by topic.
    pub fn discoveries(&self) -> Result<Vec<SeenConfig>, StateError> {
        self.db.read(|c| {
            c.query_map(
                "SELECT topic, payload, since, seen_at FROM device_discoveries ORDER BY topic",
                params![],
                seen_config,
            )
        })
    }

    /// Records the state `device` reports now; says since when tau has seen it.
    pub fn observe_device_state(
        &self,
        device: &str,
        payload: &[u8],
        now: Timestamp,
    ) -> Result<SeenState, StateError> {
        self.db.write(|tx| {
            let before: Option<(Vec<u8>, String)> = tx
                .query_optional(
                    "SELECT payload, since FROM device_states WHERE device = ?1",
                    params![device],
                    |row| Ok((row.get(0)?, row.get(1)?)),
                )?;
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
            Ok(SeenState {
                payload: payload.to_vec(),
                since,
                changed,
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_stores::TestStore;
    use pretty_assertions::assert_eq;

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(seconds).unwrap()
    }

    fn open(dir: &TestStore) -> Devices {
        dir.open().devices()
    }

    #[test]
    fn devices_are_added_once_read_back_and_removed() {
        for dir in crate::test_stores::stores() {
            let store = open(&dir);
            let row = |name: &str, topic: Option<&str>, added: i64| DeviceRow {
                name: name.into(),
                definition: format!("{{\"name\":\"{name}\"}}"),
                discovery_topic: topic.map(str::to_owned),
                added_at: at(added),
            };
            assert!(store.add_device(&row("porch-light", None, 10)).unwrap());
            assert!(!store.add_device(&row("porch-light", None, 20)).unwrap());
            let garage = row("garage-door", Some("homeassistant/cover/garage/config"), 30);
            assert!(store.add_device(&garage).unwrap());
            store
                .observe_device_state("porch-light", b"ON", at(40))
                .unwrap();
            assert_eq!(
                store.devices().unwrap(),
                vec![garage.clone(), row("porch-light", None, 10)]
            );
            assert!(store.remove_device("porch-light").unwrap());
            assert!(!store.remove_device("porch-light").unwrap());
            assert_eq!(store.devices().unwrap(), vec![garage]);
            let again = store
                .observe_device_state("porch-light", b"ON", at(50))
                .unwrap();
            assert!(again.changed, "a removed device's last state went with it");
        }
    }

    #[test]
    fn a_discovery_config_keeps_since_until_it_changes() {
        for dir in crate::test_stores::stores() {
            let store = open(&dir);
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
    }

    #[test]
    fn a_state_is_aged_from_when_tau_first_saw_it() {
        for dir in crate::test_stores::stores() {
            let store = open(&dir);
            let first = store
                .observe_device_state("porch-light", b"ON", at(10))
                .unwrap();
            assert_eq!((first.since, first.changed), (at(10), true));
            let again = store
                .observe_device_state("porch-light", b"ON", at(50))
                .unwrap();
            assert_eq!((again.since, again.changed), (at(10), false));
            let other = store
                .observe_device_state("porch-light", b"OFF", at(60))
                .unwrap();
            assert_eq!((other.since, other.changed), (at(60), true));
        }
    }
}
