//! tau-test-support: what several of tau's test suites need, in one place.
//!
//! Owns helpers that make recorded events comparable as whole values, and the real peers
//! several suites talk to: an MQTT broker (`mosquitto.rs`), a device on it (`device.rs`)
//! the Telegram Bot API emulator (`telegram`), npm's mock Web Push service
//! (`web_push.rs`), a throwaway PostgreSQL server (`postgres.rs`), and `state.db` changed
//! behind tau's back by another program (`state_db.rs`). Used only as a dev-dependency; knows nothing of
//! tau's crates, only the JSON and the tables they write and the peers they talk to.

mod device;
mod mosquitto;
mod postgres;
mod state_db;
pub mod telegram;
mod web_push;

pub use device::{DeviceStandIn, StandInSpec, publish};
pub use mosquitto::Mosquitto;
pub use postgres::{Postgres, postgres_bin};
pub use state_db::{edit_behind_tau, tamper_approval};
pub use web_push::PushService;

use serde_json::Value;

/// Replaces random approval ids by `ap_1`, `ap_2`, ... in order of first appearance, and
/// deadlines by `<deadline>`, at every depth, so whole event sequences compare exactly.
/// The same id always gets the same number, so a test still sees which events share one.
pub fn stable_ids(value: &mut Value) {
    stabilize(value, &mut Vec::new());
}

fn stabilize(value: &mut Value, seen: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, inner) in map.iter_mut() {
                match (key.as_str(), &*inner) {
                    ("approval_id", Value::String(id)) => {
                        let n = match seen.iter().position(|s| s == id) {
                            Some(n) => n + 1,
                            None => {
                                seen.push(id.clone());
                                seen.len()
                            }
                        };
                        *inner = Value::String(format!("ap_{n}"));
                    }
                    ("deadline", Value::String(_)) => {
                        *inner = Value::String("<deadline>".into());
                    }
                    _ => stabilize(inner, seen),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| stabilize(v, seen)),
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => {}
    }
}

/// `value` with every object's keys in sorted order. Key order otherwise depends on
/// whether some crate in the build switched on serde_json's `preserve_order`, so a snapshot
/// of JSON sorts first.
pub fn sorted_keys(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k, sorted_keys(v)))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted_keys).collect()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ids_are_numbered_by_first_appearance_and_deadlines_hidden() {
        let mut value = json!([
            {"approval_id": "ap_9f", "deadline": "2026-12-02T20:00:00Z"},
            {"approval_id": "ap_11", "inner": {"approval_id": "ap_9f"}},
            {"approval_id": null, "deadline": null}
        ]);
        stable_ids(&mut value);
        assert_eq!(
            value,
            json!([
                {"approval_id": "ap_1", "deadline": "<deadline>"},
                {"approval_id": "ap_2", "inner": {"approval_id": "ap_1"}},
                {"approval_id": null, "deadline": null}
            ])
        );
    }
}
