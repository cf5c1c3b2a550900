//! Routines: those made in a conversation (their definition as JSON and the content hash
//! the person approved), the on/off switch of every routine, each routine's runs, since
//! when the engine keeps each routine's schedule, and a generation that changes with every
//! change, so an engine in another process sees one. What a definition means is
//! `tau-reflex`'s; this module keeps the text.

use std::collections::BTreeMap;
use std::time::Duration;

use jiff::Timestamp;
use rusqlite::params;

use crate::error::StateError;
use crate::handles::Routines;
use crate::sql::Sql;

/// A routine made in a conversation, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoutineRow {
    pub name: String,
    /// Its definition, canonical JSON.
    pub definition: String,
    /// The content hash the person approved when it was made.
    pub approved_hash: String,
    pub created_at: Timestamp,
    /// The session whose conversation made it.
    pub created_in: Option<String>,
}

/// One run of a routine (or runs missed, or a trigger skipped), as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunRow {
    pub routine: String,
    pub trigger: String,
    /// False for a run a person started (`tau routines run`).
    pub scheduled: bool,
    /// `success`, `error`, `refused`, `skipped`, `missed`.
    pub outcome: String,
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

/// A stored time that no longer reads is the epoch, never an error that hides the rest.
fn time(text: &str) -> Timestamp {
    text.parse().unwrap_or(Timestamp::UNIX_EPOCH)
}

fn bump(tx: &Sql<'_>) -> Result<(), StateError> {
    tx.execute(
        "INSERT INTO routine_meta (key, value) VALUES ('generation', 1)
         ON CONFLICT(key) DO UPDATE SET value = routine_meta.value + 1",
        params![],
    )?;
    Ok(())
}

impl Routines {
    /// A number that changes whenever a routine is made, deleted, edited or switched.
    pub fn routines_generation(&self) -> Result<i64, StateError> {
        self.db.read(|c| {
            Ok(c.query_optional(
                "SELECT value FROM routine_meta WHERE key = 'generation'",
                params![],
                |row| row.get(0),
            )?
            .unwrap_or(0))
        })
    }

    /// Every routine made in a conversation, by name.
    pub fn stored_routines(&self) -> Result<Vec<RoutineRow>, StateError> {
        self.db.read(|c| {
            c.query_map(
                "SELECT name, definition, approved_hash, created_at, created_in \
                 FROM routines ORDER BY name",
                params![],
                |row| {
                    Ok(RoutineRow {
                        name: row.get(0)?,
                        definition: row.get(1)?,
                        approved_hash: row.get(2)?,
                        created_at: time(&row.get::<_, String>(3)?),
                        created_in: row.get(4)?,
                    })
                },
            )
        })
    }

    /// Stores a routine a person approved; false when one of that name exists. A new
    /// routine starts with its own switch, whatever an older one of that name had.
    pub fn create_routine(&self, row: &RoutineRow) -> Result<bool, StateError> {
        self.db.write(|tx| {
            let inserted = tx.execute(
                "INSERT INTO routines (name, definition, approved_hash, created_at, created_in)
                 VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT DO NOTHING",
                params![
                    row.name,
                    row.definition,
                    row.approved_hash,
                    row.created_at.to_string(),
                    row.created_in
                ],
            )?;
            if inserted == 1 {
                tx.execute(
                    "DELETE FROM routine_switches WHERE name = ?1",
                    params![row.name],
                )?;
                bump(tx)?;
            }
            Ok(inserted == 1)
        })
    }

    /// Replaces a stored routine's definition, keeping the hash its person approved.
    pub fn replace_routine_definition(
        &self,
        name: &str,
        definition: &str,
    ) -> Result<bool, StateError> {
        self.db.write(|tx| {
            let changed = tx.execute(
                "UPDATE routines SET definition = ?2 WHERE name = ?1",
                params![name, definition],
            )?;
            bump(tx)?;
            Ok(changed == 1)
        })
    }

    /// Deletes a stored routine, its switch and its mark; false when there was none.
    pub fn delete_routine(&self, name: &str) -> Result<bool, StateError> {
        self.db.write(|tx| {
            let deleted = tx.execute("DELETE FROM routines WHERE name = ?1", params![name])?;
            tx.execute(
                "DELETE FROM routine_switches WHERE name = ?1",
                params![name],
            )?;
            tx.execute("DELETE FROM routine_marks WHERE name = ?1", params![name])?;
            bump(tx)?;
            Ok(deleted == 1)
        })
    }

    /// Switches a routine on or off.
    pub fn set_routine_enabled(
        &self,
        name: &str,
        enabled: bool,
        now: Timestamp,
    ) -> Result<(), StateError> {
        self.db.write(|tx| {
            tx.execute(
                "INSERT INTO routine_switches (name, enabled, changed_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT(name) DO UPDATE SET enabled = ?2, changed_at = ?3",
                params![name, enabled, now.to_string()],
            )?;
            bump(tx)
        })
    }

    pub fn routine_switches(&self) -> Result<BTreeMap<String, Switch>, StateError> {
        self.db.read(|c| {
            let rows = c.query_map(
                "SELECT name, enabled, changed_at FROM routine_switches",
                params![],
                |row| {
                    Ok((
                        row.get::<_, String>(0)?,
                        Switch {
                            enabled: row.get(1)?,
                            changed_at: time(&row.get::<_, String>(2)?),
                        },
                    ))
                },
            )?;
            Ok(rows.into_iter().collect())
        })
    }

    pub fn record_routine_run(&self, run: &RunRow) -> Result<(), StateError> {
        self.db.write(|tx| {
            tx.execute(
                "INSERT INTO routine_runs (routine, trigger, scheduled, outcome, detail, \
                 tool_use_id, started_at, duration_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                params![
                    run.routine,
                    run.trigger,
                    run.scheduled,
                    run.outcome,
                    run.detail,
                    run.tool_use_id,
                    run.started_at.to_string(),
                    run.duration_ms.and_then(|d| i64::try_from(d).ok()),
                ],
            )?;
            Ok(())
        })
    }

    /// The last `limit` runs of `name`, newest first.
    pub fn routine_runs(&self, name: &str, limit: usize) -> Result<Vec<RunRow>, StateError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.db.read(|c| {
            c.query_map(
                "SELECT routine, trigger, scheduled, outcome, detail, tool_use_id, started_at, \
                 duration_ms FROM routine_runs WHERE routine = ?1 ORDER BY id DESC LIMIT ?2",
                params![name, limit],
                |row| {
                    Ok(RunRow {
                        routine: row.get(0)?,
                        trigger: row.get(1)?,
                        scheduled: row.get(2)?,
                        outcome: row.get(3)?,
                        detail: row.get(4)?,
                        tool_use_id: row.get(5)?,
                        started_at: time(&row.get::<_, String>(6)?),
                        duration_ms: row
                            .get::<_, Option<i64>>(7)?
                            .and_then(|d| u64::try_from(d).ok()),
                    })
                },
            )
        })
    }

    /// When the last scheduled run (any outcome but `missed`) of `name` started.
    pub fn last_scheduled_run(&self, name: &str) -> Result<Option<Timestamp>, StateError> {
        let started: Option<String> = self.db.read(|c| {
            c.query_optional(
                "SELECT started_at FROM routine_runs
                     WHERE routine = ?1 AND scheduled = 1 AND outcome != 'missed'
                     ORDER BY id DESC LIMIT 1",
                params![name],
                |row| row.get(0),
            )
        })?;
        Ok(started.map(|s| time(&s)))
    }

    /// Claims the scheduled run of `name` due at `due`: true for the first process to claim
    /// it, false for every other (another hub sharing the store runs it). A compare-and-set
    /// on the routine's lease (`routine:<name>`), whose time is the last tick claimed: a
    /// tick is claimed once, and only a later one moves it.
    pub fn claim_scheduled_tick(&self, name: &str, due: Timestamp) -> Result<bool, StateError> {
        let holder = self.db.hub().unwrap_or("this hub").to_owned();
        self.db.write(|tx| {
            Ok(tx.execute(
                "INSERT INTO leases (name, holder, expires_at) VALUES (?1, ?2, ?3) \
                 ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, \
                 expires_at = excluded.expires_at WHERE leases.expires_at < excluded.expires_at",
                params![format!("routine:{name}"), holder, due.as_millisecond()],
            )? == 1)
        })
    }

    /// Whether this hub runs `name` for a message that just fired it (an MQTT trigger).
    /// Every hub sharing the store subscribes and receives each message; the first to
    /// claim the routine's message lease (`mqtt:<name>`, held for `window` and renewed by
    /// each message it takes) runs it, and the others leave it alone while that lease
    /// lives. Always true on a store of one hub's own, which writes nothing for it.
    pub fn claim_message(&self, name: &str, window: Duration) -> Result<bool, StateError> {
        let (true, Some(hub)) = (self.db.is_shared(), self.db.hub()) else {
            return Ok(true);
        };
        self.db.leases().claim(&format!("mqtt:{name}"), hub, window)
    }

    /// Since when the engine has kept `name`'s schedule with this content: the stored time
    /// when the content is the same as last time, else `now` (stored).
    pub fn mark_routine(
        &self,
        name: &str,
        content_hash: &str,
        now: Timestamp,
    ) -> Result<Timestamp, StateError> {
        self.db.write(|tx| {
            let existing: Option<(String, String)> = tx.query_optional(
                "SELECT content_hash, since FROM routine_marks WHERE name = ?1",
                params![name],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )?;
            if let Some((hash, since)) = existing
                && hash == content_hash
            {
                return Ok(time(&since));
            }
            tx.execute(
                "INSERT INTO routine_marks (name, content_hash, since) VALUES (?1, ?2, ?3)
                 ON CONFLICT(name) DO UPDATE SET content_hash = ?2, since = ?3",
                params![name, content_hash, now.to_string()],
            )?;
            Ok(now)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_stores::TestStore;
    use pretty_assertions::assert_eq;

    fn at(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    fn open(dir: &TestStore) -> Routines {
        dir.open().routines()
    }

    #[test]
    fn a_routine_is_stored_once_and_every_change_moves_the_generation() {
        for dir in crate::test_stores::stores() {
            let store = open(&dir);
            let row = RoutineRow {
                name: "lamp".into(),
                definition: r#"{"name":"lamp"}"#.into(),
                approved_hash: "h".into(),
                created_at: at("2026-01-01T00:00:00Z"),
                created_in: Some("kitchen".into()),
            };
            let mut generation = store.routines_generation().unwrap();
            let mut moved = || {
                let now = store.routines_generation().unwrap();
                let changed = now != generation;
                generation = now;
                changed
            };
            store
                .set_routine_enabled("lamp", false, at("2026-01-01T00:00:00Z"))
                .unwrap();
            assert!(moved());
            assert!(store.create_routine(&row).unwrap());
            assert!(moved());
            assert!(!store.create_routine(&row).unwrap());
            assert!(!moved());
            assert_eq!(store.stored_routines().unwrap(), vec![row.clone()]);
            assert!(
                store.routine_switches().unwrap().is_empty(),
                "a new routine has its own switch"
            );
            assert!(store.replace_routine_definition("lamp", "{}").unwrap());
            assert!(moved());
            assert_eq!(store.stored_routines().unwrap()[0].approved_hash, "h");
            assert!(store.delete_routine("lamp").unwrap());
            assert!(moved());
            assert!(!store.delete_routine("lamp").unwrap());
            assert!(store.stored_routines().unwrap().is_empty());
        }
    }

    #[test]
    fn runs_switches_and_marks_are_kept() {
        for dir in crate::test_stores::stores() {
            let store = open(&dir);
            store
                .set_routine_enabled("lamp", false, at("2026-01-01T00:00:00Z"))
                .unwrap();
            assert_eq!(
                store.routine_switches().unwrap().get("lamp"),
                Some(&Switch {
                    enabled: false,
                    changed_at: at("2026-01-01T00:00:00Z")
                })
            );
            let run = |outcome: &str, scheduled, started: &str| RunRow {
                routine: "lamp".into(),
                trigger: "every 10m".into(),
                scheduled,
                outcome: outcome.into(),
                detail: None,
                tool_use_id: None,
                started_at: at(started),
                duration_ms: Some(3),
            };
            store
                .record_routine_run(&run("success", true, "2026-01-01T00:10:00Z"))
                .unwrap();
            store
                .record_routine_run(&run("success", false, "2026-01-01T00:15:00Z"))
                .unwrap();
            store
                .record_routine_run(&run("missed", true, "2026-01-01T00:20:00Z"))
                .unwrap();
            assert_eq!(
                store.last_scheduled_run("lamp").unwrap(),
                Some(at("2026-01-01T00:10:00Z")),
                "manual runs and missed runs are not the schedule's"
            );
            let runs = store.routine_runs("lamp", 2).unwrap();
            assert_eq!(
                runs,
                vec![
                    run("missed", true, "2026-01-01T00:20:00Z"),
                    run("success", false, "2026-01-01T00:15:00Z")
                ]
            );
            assert_eq!(
                store
                    .mark_routine("lamp", "h1", at("2026-01-01T00:00:00Z"))
                    .unwrap(),
                at("2026-01-01T00:00:00Z")
            );
            assert_eq!(
                store
                    .mark_routine("lamp", "h1", at("2026-02-01T00:00:00Z"))
                    .unwrap(),
                at("2026-01-01T00:00:00Z")
            );
            assert_eq!(
                store
                    .mark_routine("lamp", "h2", at("2026-02-01T00:00:00Z"))
                    .unwrap(),
                at("2026-02-01T00:00:00Z")
            );
        }
    }
}
