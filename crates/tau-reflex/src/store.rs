//! Routines in `state.db`, as the engine reads them: those made in a conversation (with
//! the content hash the person approved), the on/off switch of every routine, each
//! routine's runs, and since when the engine has been keeping each routine's schedule (to
//! tell runs missed while tau was not running). `tau-state` keeps the rows; this is where
//! they become definitions and outcomes.

use std::collections::BTreeMap;

use jiff::Timestamp;
use serde_json::Value;
use tau_core::RoutineOutcome;
use tau_state::{RoutineRow, Routines, RunRow, StateError, Switch};

use crate::def::RoutineDef;

/// How long a hub keeps a routine's MQTT messages after taking one, when several hubs
/// share the store: long enough that every hub has received the same message, short
/// enough that a hub whose broker connection broke does not keep them for long.
const MESSAGE_WINDOW: std::time::Duration = std::time::Duration::from_secs(2);

/// The routine store could not be read or written.
#[derive(Debug, thiserror::Error)]
#[error("routine store: {0}")]
pub struct StoreError(#[from] pub StateError);

/// A routine made in a conversation, as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredRoutine {
    pub def: RoutineDef,
    /// The content hash the person approved when the routine was made.
    pub approved_hash: String,
    pub created_at: Timestamp,
    /// The session whose conversation made it.
    pub created_in: Option<String>,
}

/// A stored routine, or the name of one that no longer reads and why.
pub type StoredRow = Result<StoredRoutine, (String, String)>;

/// One run of a routine (or runs missed, or a trigger skipped).
#[derive(Debug, Clone, PartialEq)]
pub struct RunRecord {
    pub routine: String,
    pub trigger: String,
    /// False for a run a person started (`tau routines run`).
    pub scheduled: bool,
    pub outcome: RoutineOutcome,
    pub detail: Option<String>,
    pub tool_use_id: Option<String>,
    pub started_at: Timestamp,
    pub duration_ms: Option<u64>,
}

/// The routines' tables of one `state.db`. Safe to share between threads; several
/// processes may have the same file open.
pub struct RoutineStore {
    db: Routines,
}

impl RoutineStore {
    pub fn new(db: Routines) -> Self {
        Self { db }
    }

    /// A number that changes whenever a routine is made, deleted, edited or switched.
    pub fn generation(&self) -> Result<i64, StoreError> {
        Ok(self.db.routines_generation()?)
    }

    /// Every stored routine, by name. A row that no longer parses is reported, not hidden.
    pub fn stored(&self) -> Result<Vec<StoredRow>, StoreError> {
        Ok(self
            .db
            .stored_routines()?
            .into_iter()
            .map(|row| {
                parse_stored(&row.name, &row.definition).map(|def| StoredRoutine {
                    def,
                    approved_hash: row.approved_hash,
                    created_at: row.created_at,
                    created_in: row.created_in,
                })
            })
            .collect())
    }

    pub fn get(&self, name: &str) -> Result<Option<StoredRoutine>, StoreError> {
        Ok(self.stored()?.into_iter().find_map(|row| match row {
            Ok(stored) if stored.def.name == name => Some(stored),
            Ok(_) | Err(_) => None,
        }))
    }

    /// Stores a routine a person approved (`approved_hash` is its content hash as shown
    /// to them). False when a routine of that name exists.
    pub fn create(
        &self,
        def: &RoutineDef,
        approved_hash: &str,
        created_in: Option<&str>,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        Ok(self.db.create_routine(&RoutineRow {
            name: def.name.clone(),
            definition: def.content().0,
            approved_hash: approved_hash.to_owned(),
            created_at: now,
            created_in: created_in.map(str::to_owned),
        })?)
    }

    /// Replaces a stored routine's definition without an approval. The routine keeps the
    /// hash its person approved, so it no longer matches it and loses its exemption.
    pub fn replace_definition(&self, def: &RoutineDef) -> Result<bool, StoreError> {
        Ok(self
            .db
            .replace_routine_definition(&def.name, &def.content().0)?)
    }

    /// Deletes a stored routine and its switch. False when there was none.
    pub fn delete(&self, name: &str) -> Result<bool, StoreError> {
        Ok(self.db.delete_routine(name)?)
    }

    /// Switches a routine on or off (a `tau.toml` routine too: this wins over its
    /// `enabled`).
    pub fn set_enabled(&self, name: &str, enabled: bool, now: Timestamp) -> Result<(), StoreError> {
        Ok(self.db.set_routine_enabled(name, enabled, now)?)
    }

    pub fn switches(&self) -> Result<BTreeMap<String, Switch>, StoreError> {
        Ok(self.db.routine_switches()?)
    }

    pub fn record_run(&self, run: &RunRecord) -> Result<(), StoreError> {
        Ok(self.db.record_routine_run(&RunRow {
            routine: run.routine.clone(),
            trigger: run.trigger.clone(),
            scheduled: run.scheduled,
            outcome: run.outcome.as_str().to_owned(),
            detail: run.detail.clone(),
            tool_use_id: run.tool_use_id.clone(),
            started_at: run.started_at,
            duration_ms: run.duration_ms,
        })?)
    }

    /// The last `limit` runs of `name`, newest first.
    pub fn runs(&self, name: &str, limit: usize) -> Result<Vec<RunRecord>, StoreError> {
        Ok(self
            .db
            .routine_runs(name, limit)?
            .into_iter()
            .map(|row| RunRecord {
                outcome: RoutineOutcome::parse(&row.outcome).unwrap_or(RoutineOutcome::Error),
                routine: row.routine,
                trigger: row.trigger,
                scheduled: row.scheduled,
                detail: row.detail,
                tool_use_id: row.tool_use_id,
                started_at: row.started_at,
                duration_ms: row.duration_ms,
            })
            .collect())
    }

    /// Whether this process runs `name`'s occurrence due at `due`: true for the first of
    /// the hubs sharing the store to claim it.
    pub fn claim_tick(&self, name: &str, due: Timestamp) -> Result<bool, StoreError> {
        Ok(self.db.claim_scheduled_tick(name, due)?)
    }

    /// Whether this process runs `name` for a message that just fired it: true for the
    /// hub that holds the routine's message lease (see `claim_message` in the store).
    pub fn claim_message(&self, name: &str) -> Result<bool, StoreError> {
        Ok(self.db.claim_message(name, MESSAGE_WINDOW)?)
    }

    /// When the last scheduled run (any outcome but `missed`) of `name` started.
    pub fn last_scheduled_run(&self, name: &str) -> Result<Option<Timestamp>, StoreError> {
        Ok(self.db.last_scheduled_run(name)?)
    }

    /// Since when the engine has kept `name`'s schedule with this content: the stored time
    /// when the content is the same as last time, else `now` (stored).
    pub fn mark(
        &self,
        name: &str,
        content_hash: &str,
        now: Timestamp,
    ) -> Result<Timestamp, StoreError> {
        Ok(self.db.mark_routine(name, content_hash, now)?)
    }
}

fn parse_stored(name: &str, definition: &str) -> Result<RoutineDef, (String, String)> {
    let value: Value = serde_json::from_str(definition)
        .map_err(|e| (name.to_owned(), format!("unreadable definition: {e}")))?;
    let def = RoutineDef::from_json(value)
        .map_err(|e| (name.to_owned(), format!("{}: {}", e.key, e.message)))?;
    if def.name != name {
        return Err((
            name.to_owned(),
            format!("its definition is named '{}'", def.name),
        ));
    }
    Ok(def)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[allow(clippy::needless_pass_by_value)]
    fn def(args: Value) -> RoutineDef {
        RoutineDef::from_json(
            json!({"name": "lamp", "every": "10m", "tool": "mqtt_publish", "arguments": args}),
        )
        .unwrap()
    }

    fn at(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    fn store(dir: &tempfile::TempDir) -> RoutineStore {
        RoutineStore::new(
            tau_state::StateDb::open(&dir.path().join("state.db"))
                .unwrap()
                .routines(),
        )
    }

    #[test]
    fn a_routine_is_stored_once_with_its_approved_hash() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(&dir);
        let lamp = def(json!({"topic": "t", "payload": "on"}));
        let g0 = store.generation().unwrap();
        assert!(
            store
                .create(
                    &lamp,
                    &lamp.content_hash(),
                    Some("kitchen"),
                    at("2026-01-01T00:00:00Z")
                )
                .unwrap()
        );
        assert!(
            !store
                .create(
                    &lamp,
                    &lamp.content_hash(),
                    None,
                    at("2026-01-01T00:00:00Z")
                )
                .unwrap()
        );
        assert_ne!(store.generation().unwrap(), g0);
        let stored = store.get("lamp").unwrap().unwrap();
        assert_eq!(
            stored,
            StoredRoutine {
                def: lamp.clone(),
                approved_hash: lamp.content_hash(),
                created_at: at("2026-01-01T00:00:00Z"),
                created_in: Some("kitchen".into()),
            }
        );
        let edited = def(json!({"topic": "t", "payload": "off"}));
        assert!(store.replace_definition(&edited).unwrap());
        let stored = store.get("lamp").unwrap().unwrap();
        assert_eq!(stored.def, edited);
        assert_ne!(
            stored.approved_hash,
            edited.content_hash(),
            "an edit is not an approval"
        );
        assert!(store.delete("lamp").unwrap());
        assert!(store.get("lamp").unwrap().is_none());
        assert!(!store.delete("lamp").unwrap());
    }

    #[test]
    fn runs_switches_and_marks_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(&dir);
        store
            .set_enabled("lamp", false, at("2026-01-01T00:00:00Z"))
            .unwrap();
        assert_eq!(
            store.switches().unwrap().get("lamp"),
            Some(&Switch {
                enabled: false,
                changed_at: at("2026-01-01T00:00:00Z")
            })
        );
        let run = |outcome, scheduled, started: &str| RunRecord {
            routine: "lamp".into(),
            trigger: "every 10m".into(),
            scheduled,
            outcome,
            detail: None,
            tool_use_id: None,
            started_at: at(started),
            duration_ms: Some(3),
        };
        store
            .record_run(&run(RoutineOutcome::Success, true, "2026-01-01T00:10:00Z"))
            .unwrap();
        store
            .record_run(&run(RoutineOutcome::Success, false, "2026-01-01T00:15:00Z"))
            .unwrap();
        store
            .record_run(&run(RoutineOutcome::Missed, true, "2026-01-01T00:20:00Z"))
            .unwrap();
        assert_eq!(
            store.last_scheduled_run("lamp").unwrap(),
            Some(at("2026-01-01T00:10:00Z")),
            "manual runs and missed runs are not the schedule's"
        );
        let runs = store.runs("lamp", 2).unwrap();
        assert_eq!(runs.len(), 2);
        assert_eq!(runs[0].outcome, RoutineOutcome::Missed);
        assert_eq!(
            store
                .mark("lamp", "h1", at("2026-01-01T00:00:00Z"))
                .unwrap(),
            at("2026-01-01T00:00:00Z")
        );
        assert_eq!(
            store
                .mark("lamp", "h1", at("2026-02-01T00:00:00Z"))
                .unwrap(),
            at("2026-01-01T00:00:00Z")
        );
        assert_eq!(
            store
                .mark("lamp", "h2", at("2026-02-01T00:00:00Z"))
                .unwrap(),
            at("2026-02-01T00:00:00Z")
        );
    }
}
