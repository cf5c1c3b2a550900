//! Routines in `state.db`: those made in a conversation (with the content hash the person
//! approved), the on/off switch of every routine, each routine's runs, and since when the
//! engine has been keeping each routine's schedule (to tell runs missed while tau was not
//! running). Its own tables, beside the sessions'.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Mutex, MutexGuard, PoisonError};

use jiff::Timestamp;
use rusqlite::{Connection, OptionalExtension, params};
use serde_json::Value;
use tau_core::RoutineOutcome;

use crate::def::RoutineDef;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS routines (
    name TEXT PRIMARY KEY,
    definition TEXT NOT NULL,
    approved_hash TEXT NOT NULL,
    created_at TEXT NOT NULL,
    created_in TEXT
);
CREATE TABLE IF NOT EXISTS routine_switches (
    name TEXT PRIMARY KEY,
    enabled INTEGER NOT NULL,
    changed_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS routine_runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    routine TEXT NOT NULL,
    trigger TEXT NOT NULL,
    scheduled INTEGER NOT NULL,
    outcome TEXT NOT NULL,
    detail TEXT,
    tool_use_id TEXT,
    started_at TEXT NOT NULL,
    duration_ms INTEGER
);
CREATE INDEX IF NOT EXISTS routine_runs_by_routine ON routine_runs (routine, id);
CREATE TABLE IF NOT EXISTS routine_marks (
    name TEXT PRIMARY KEY,
    content_hash TEXT NOT NULL,
    since TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS routine_meta (
    key TEXT PRIMARY KEY,
    value INTEGER NOT NULL
);
";

/// The routine store could not be read or written.
#[derive(Debug, thiserror::Error)]
#[error("routine store: {0}")]
pub struct StoreError(pub String);

impl From<rusqlite::Error> for StoreError {
    fn from(error: rusqlite::Error) -> Self {
        Self(error.to_string())
    }
}

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

/// The on/off switch set for a routine, and when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Switch {
    pub enabled: bool,
    pub changed_at: Timestamp,
}

/// The store. Safe to share between threads; several processes may open one file.
pub struct RoutineStore {
    connection: Mutex<Connection>,
}

fn time(text: &str) -> Timestamp {
    text.parse().unwrap_or(Timestamp::UNIX_EPOCH)
}

impl RoutineStore {
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

    /// A number that changes whenever a routine is made, deleted, edited or switched.
    pub fn generation(&self) -> Result<i64, StoreError> {
        Ok(self
            .lock()
            .query_row(
                "SELECT value FROM routine_meta WHERE key = 'generation'",
                [],
                |row| row.get(0),
            )
            .optional()?
            .unwrap_or(0))
    }

    fn bump(connection: &Connection) -> Result<(), StoreError> {
        connection.execute(
            "INSERT INTO routine_meta (key, value) VALUES ('generation', 1)
             ON CONFLICT(key) DO UPDATE SET value = value + 1",
            [],
        )?;
        Ok(())
    }

    /// Every stored routine, by name. A row that no longer parses is reported, not hidden.
    pub fn stored(&self) -> Result<Vec<StoredRow>, StoreError> {
        let connection = self.lock();
        let mut statement = connection.prepare(
            "SELECT name, definition, approved_hash, created_at, created_in FROM routines ORDER BY name",
        )?;
        let rows = statement.query_map([], |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, String>(2)?,
                row.get::<_, String>(3)?,
                row.get::<_, Option<String>>(4)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (name, definition, approved_hash, created_at, created_in) = row?;
            out.push(parse_stored(&name, &definition).map(|def| StoredRoutine {
                def,
                approved_hash,
                created_at: time(&created_at),
                created_in,
            }));
        }
        Ok(out)
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
        let mut connection = self.lock();
        let tx = connection.transaction()?;
        let inserted = tx.execute(
            "INSERT OR IGNORE INTO routines (name, definition, approved_hash, created_at, created_in)
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![
                def.name,
                def.content().0,
                approved_hash,
                now.to_string(),
                created_in
            ],
        )?;
        if inserted == 1 {
            // A new routine starts with its own switch, whatever an older one of that name had.
            tx.execute(
                "DELETE FROM routine_switches WHERE name = ?1",
                params![def.name],
            )?;
            Self::bump(&tx)?;
        }
        tx.commit()?;
        Ok(inserted == 1)
    }

    /// Replaces a stored routine's definition without an approval. The routine keeps the
    /// hash its person approved, so it no longer matches it and loses its exemption.
    pub fn replace_definition(&self, def: &RoutineDef) -> Result<bool, StoreError> {
        let connection = self.lock();
        let changed = connection.execute(
            "UPDATE routines SET definition = ?2 WHERE name = ?1",
            params![def.name, def.content().0],
        )?;
        Self::bump(&connection)?;
        Ok(changed == 1)
    }

    /// Deletes a stored routine and its switch. False when there was none.
    pub fn delete(&self, name: &str) -> Result<bool, StoreError> {
        let mut connection = self.lock();
        let tx = connection.transaction()?;
        let deleted = tx.execute("DELETE FROM routines WHERE name = ?1", params![name])?;
        tx.execute(
            "DELETE FROM routine_switches WHERE name = ?1",
            params![name],
        )?;
        tx.execute("DELETE FROM routine_marks WHERE name = ?1", params![name])?;
        Self::bump(&tx)?;
        tx.commit()?;
        Ok(deleted == 1)
    }

    /// Switches a routine on or off (a `tau.toml` routine too: this wins over its
    /// `enabled`).
    pub fn set_enabled(&self, name: &str, enabled: bool, now: Timestamp) -> Result<(), StoreError> {
        let connection = self.lock();
        connection.execute(
            "INSERT INTO routine_switches (name, enabled, changed_at) VALUES (?1, ?2, ?3)
             ON CONFLICT(name) DO UPDATE SET enabled = ?2, changed_at = ?3",
            params![name, enabled, now.to_string()],
        )?;
        Self::bump(&connection)?;
        Ok(())
    }

    pub fn switches(&self) -> Result<BTreeMap<String, Switch>, StoreError> {
        let connection = self.lock();
        let mut statement =
            connection.prepare("SELECT name, enabled, changed_at FROM routine_switches")?;
        let rows = statement.query_map([], |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, bool>(1)?,
                row.get::<_, String>(2)?,
            ))
        })?;
        let mut out = BTreeMap::new();
        for row in rows {
            let (name, enabled, changed_at) = row?;
            out.insert(
                name,
                Switch {
                    enabled,
                    changed_at: time(&changed_at),
                },
            );
        }
        Ok(out)
    }

    pub fn record_run(&self, run: &RunRecord) -> Result<(), StoreError> {
        self.lock().execute(
            "INSERT INTO routine_runs (routine, trigger, scheduled, outcome, detail, tool_use_id, started_at, duration_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                run.routine,
                run.trigger,
                run.scheduled,
                run.outcome.as_str(),
                run.detail,
                run.tool_use_id,
                run.started_at.to_string(),
                run.duration_ms.and_then(|d| i64::try_from(d).ok()),
            ],
        )?;
        Ok(())
    }

    /// The last `limit` runs of `name`, newest first.
    pub fn runs(&self, name: &str, limit: usize) -> Result<Vec<RunRecord>, StoreError> {
        let connection = self.lock();
        let mut statement = connection.prepare(
            "SELECT routine, trigger, scheduled, outcome, detail, tool_use_id, started_at, duration_ms
             FROM routine_runs WHERE routine = ?1 ORDER BY id DESC LIMIT ?2",
        )?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = statement.query_map(params![name, limit], |row| {
            Ok(RunRecord {
                routine: row.get(0)?,
                trigger: row.get(1)?,
                scheduled: row.get(2)?,
                outcome: RoutineOutcome::parse(&row.get::<_, String>(3)?)
                    .unwrap_or(RoutineOutcome::Error),
                detail: row.get(4)?,
                tool_use_id: row.get(5)?,
                started_at: time(&row.get::<_, String>(6)?),
                duration_ms: row
                    .get::<_, Option<i64>>(7)?
                    .and_then(|d| u64::try_from(d).ok()),
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// When the last scheduled run (any outcome but `missed`) of `name` started.
    pub fn last_scheduled_run(&self, name: &str) -> Result<Option<Timestamp>, StoreError> {
        let started: Option<String> = self
            .lock()
            .query_row(
                "SELECT started_at FROM routine_runs
                 WHERE routine = ?1 AND scheduled = 1 AND outcome != 'missed'
                 ORDER BY id DESC LIMIT 1",
                params![name],
                |row| row.get(0),
            )
            .optional()?;
        Ok(started.map(|s| time(&s)))
    }

    /// Since when the engine has kept `name`'s schedule with this content: the stored time
    /// when the content is the same as last time, else `now` (stored).
    pub fn mark(
        &self,
        name: &str,
        content_hash: &str,
        now: Timestamp,
    ) -> Result<Timestamp, StoreError> {
        let connection = self.lock();
        let existing: Option<(String, String)> = connection
            .query_row(
                "SELECT content_hash, since FROM routine_marks WHERE name = ?1",
                params![name],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .optional()?;
        if let Some((hash, since)) = existing
            && hash == content_hash
        {
            return Ok(time(&since));
        }
        connection.execute(
            "INSERT INTO routine_marks (name, content_hash, since) VALUES (?1, ?2, ?3)
             ON CONFLICT(name) DO UPDATE SET content_hash = ?2, since = ?3",
            params![name, content_hash, now.to_string()],
        )?;
        Ok(now)
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

    #[test]
    fn a_routine_is_stored_once_with_its_approved_hash() {
        let store = RoutineStore::in_memory().unwrap();
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
        let store = RoutineStore::in_memory().unwrap();
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
