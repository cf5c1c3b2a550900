//! The schema, as numbered steps, one list for both stores. `PRAGMA user_version` says
//! which step a file is at (a PostgreSQL database: its `schema_version` row); a store is
//! brought to the last step when it is opened, in one transaction, so a second process
//! opening it at the same moment waits and then finds nothing left to do.
//!
//! Step 1 is the schema tau kept before this crate owned the file, exactly, created only
//! where it is missing: a home from then (at version 0, its tables made table by table by
//! their old owners, some before questions had cards) is taken over in place, with all it
//! holds.

use rusqlite::{Connection, TransactionBehavior, params};

use crate::error::StateError;
use crate::pg::PgStore;
use crate::sql::{Sql, StoreKind};

/// Step 1: every table as tau made it before it had one owner for the file.
const TABLES_BEFORE_ONE_OWNER: &str = "
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS messages (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,
    body TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (session_id, idx)
);
CREATE TABLE IF NOT EXISTS agent_state (
    session_id TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
    body TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS approvals (
    id TEXT PRIMARY KEY,
    session TEXT NOT NULL,
    call_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    tier INTEGER NOT NULL,
    effect TEXT NOT NULL,
    arguments TEXT NOT NULL,
    arguments_sha256 TEXT NOT NULL,
    channel TEXT NOT NULL,
    created_at TEXT NOT NULL,
    deadline TEXT NOT NULL,
    state TEXT NOT NULL,
    decided_by TEXT,
    decided_at TEXT,
    consumed_at TEXT,
    settled INTEGER NOT NULL DEFAULT 0,
    card TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX IF NOT EXISTS approvals_state ON approvals (state, settled);
CREATE TABLE IF NOT EXISTS conversations (
    channel TEXT NOT NULL,
    key TEXT NOT NULL,
    session TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL,
    PRIMARY KEY (channel, key)
);
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
CREATE TABLE IF NOT EXISTS telegram_offset (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    next INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS telegram_chats (
    chat INTEGER PRIMARY KEY,
    generation INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS telegram_questions (
    approval_id TEXT PRIMARY KEY,
    chat INTEGER NOT NULL,
    message_id INTEGER NOT NULL,
    closed INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS audit_anchor (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    seq INTEGER NOT NULL,
    hash TEXT NOT NULL
);
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
CREATE TABLE IF NOT EXISTS audit_announced (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    seq INTEGER NOT NULL,
    hash TEXT NOT NULL
);
";

/// Step 1 on SQLite: what an old file may lack after [`TABLES_BEFORE_ONE_OWNER`] ran (the
/// card column of a table of questions made before cards).
fn add_missing_card(sql: &Sql<'_>) -> Result<(), StateError> {
    let has_card = sql.exists(
        "SELECT 1 FROM pragma_table_info('approvals') WHERE name = 'card'",
        params![],
    )?;
    if !has_card {
        sql.execute_batch("ALTER TABLE approvals ADD COLUMN card TEXT NOT NULL DEFAULT '{}'")?;
    }
    Ok(())
}

/// Step 1 on PostgreSQL: the row order SQLite keeps in every table (`rowid`), as a column,
/// where tau reads rows in the order they were written.
const POSTGRES_ROWIDS: &str = "
ALTER TABLE telegram_questions ADD COLUMN rowid BIGINT GENERATED ALWAYS AS IDENTITY;
";

/// Step 2: the store's own small facts (which tau wrote the schema, when it was flushed).
const STATE_META: &str = "
CREATE TABLE state_meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
";

/// Step 4: what became of an approved call once it was let through (`outcome`: `finished`
/// or `effect_uncertain`, and when). A call let through (`consumed_at`) without an outcome
/// was dispatched and its result never stored: tau stopped while it ran.
const CALL_OUTCOME: &str = "
ALTER TABLE approvals ADD COLUMN outcome TEXT;
ALTER TABLE approvals ADD COLUMN outcome_at TEXT;
";

/// Step 5: whether a question may be shown. The conversation gate stores its question
/// before the turn's paused state is saved and shows it only after; a question never
/// shown is listed nowhere and answers nothing, so a kill in between cancels a question
/// nobody saw. Rows from before were all shown.
const QUESTION_SHOWN: &str = "
ALTER TABLE approvals ADD COLUMN shown INTEGER NOT NULL DEFAULT 1;
";

/// Step 6: a stored question's grant offer (what "yes, and allow this again" would
/// cover, as the gate worked it out when it asked) and the grant its yes asked for.
const STORED_GRANTS: &str = "
ALTER TABLE approvals ADD COLUMN grant_offer TEXT;
ALTER TABLE approvals ADD COLUMN grant_request TEXT;
";

/// Step 8: a session's decided questions its turn has not settled yet, found without
/// reading the session's every question (the hub looks after each turn).
const UNSETTLED_BY_SESSION: &str = "
CREATE INDEX IF NOT EXISTS approvals_unsettled ON approvals (session) WHERE settled = 0;
";

/// Step 12: several hubs on one store. `leases`: a name (`hub:<id>`, a Telegram bot, a
/// routine) held by one holder until `expires_at` (milliseconds since the epoch), claimed
/// and renewed by compare-and-set; `approvals.dispatched_by`: the hub that let a call
/// through, so a start closes only the cut-off calls of hubs that are gone;
/// `audit_heads`: each hub's audit anchor and announced line (`anchor.rs`).
const SEVERAL_HUBS: &str = "
CREATE TABLE leases (
    name TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    expires_at INTEGER NOT NULL
);
ALTER TABLE approvals ADD COLUMN dispatched_by TEXT;
CREATE TABLE audit_heads (
    hub TEXT NOT NULL,
    kind TEXT NOT NULL,
    seq INTEGER NOT NULL,
    hash TEXT NOT NULL,
    PRIMARY KEY (hub, kind)
);
";

/// Step 14: the hub that asked a question (`approvals.asked_by`): while that hub's lease
/// holds, it alone resumes the question's turn, whichever hub took the answer; once the
/// lease ran out, one other hub claims the question (a compare-and-set on this column).
const QUESTION_ASKED_BY: &str = "
ALTER TABLE approvals ADD COLUMN asked_by TEXT;
";

/// Step 15, PostgreSQL only: the change counter is a row per connection slot, not one
/// row every write of every hub updates (which made each commit wait for the one before
/// it, across hubs). Nothing changes in a `state.db`.
const POSTGRES_CHANGE_SLOTS: &str = "
ALTER TABLE tau_changes DROP CONSTRAINT IF EXISTS tau_changes_id_check;
";

/// One step of the schema, run inside the migration's transaction, the same on both
/// stores: SQLite's text, and PostgreSQL's where it is not SQLite's with PostgreSQL's type
/// names ([`postgres_text`]).
pub(crate) struct Step {
    sqlite: &'static str,
    /// PostgreSQL's text, when the translation of `sqlite` is not it.
    postgres: Option<&'static str>,
    /// PostgreSQL only: run after the step's text.
    postgres_after: Option<&'static str>,
    /// SQLite only: what an old file may still lack once `sqlite` ran.
    repair: Option<Repair>,
}

/// A SQLite step's repair of an old file.
type Repair = fn(&Sql<'_>) -> Result<(), StateError>;

impl Step {
    const fn same(sqlite: &'static str) -> Self {
        Self {
            sqlite,
            postgres: None,
            postgres_after: None,
            repair: None,
        }
    }
}

/// Every step, in order; a store at version N has had the first N. A new step is one
/// more entry here.
const STEPS: &[Step] = &[
    Step {
        repair: Some(add_missing_card),
        postgres_after: Some(POSTGRES_ROWIDS),
        ..Step::same(TABLES_BEFORE_ONE_OWNER)
    },
    Step::same(STATE_META),
    Step::same(crate::grants::GRANTS_TABLE),
    Step::same(CALL_OUTCOME),
    Step::same(QUESTION_SHOWN),
    Step::same(STORED_GRANTS),
    Step::same(crate::titles::SESSION_TITLE),
    Step::same(UNSETTLED_BY_SESSION),
    Step::same(crate::grant_pins::GRANT_PINS),
    Step::same(crate::push::PUSH_SUBSCRIPTIONS),
    Step::same(crate::passkeys::PASSKEYS),
    Step::same(SEVERAL_HUBS),
    Step::same(crate::people::PEOPLE),
    Step::same(QUESTION_ASKED_BY),
    Step {
        postgres: Some(POSTGRES_CHANGE_SLOTS),
        ..Step::same("")
    },
];

/// A step's SQLite text in PostgreSQL's words: every integer column `BIGINT` (SQLite's
/// `INTEGER` is 64 bits), a row id counted by the database an identity column, bytes
/// `BYTEA`.
fn postgres_text(sqlite: &str) -> String {
    sqlite
        .replace(
            "INTEGER PRIMARY KEY AUTOINCREMENT",
            "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY",
        )
        .replace(" INTEGER", " BIGINT")
        .replace(" BLOB", " BYTEA")
}

/// The version a file has once this tau opened it.
pub const LATEST: i64 = STEPS.len() as i64;

/// This tau's version, recorded as the writer of the schema (`state_meta.schema_by`).
pub const TAU_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The `state_meta` key that names the tau which brought the schema to its step.
const SCHEMA_BY: &str = "schema_by";

/// The step the store is at: SQLite's `user_version`, PostgreSQL's `schema_version` row
/// (0 before there is one).
pub(crate) fn version(sql: &Sql<'_>) -> Result<i64, StateError> {
    match sql.store() {
        StoreKind::Sqlite => sql.query_row("PRAGMA user_version", params![], |row| row.get(0)),
        StoreKind::Postgres => {
            if !has_table(sql, "schema_version")? {
                return Ok(0);
            }
            Ok(sql
                .query_optional(
                    "SELECT step FROM schema_version WHERE id = 1",
                    params![],
                    |row| row.get(0),
                )?
                .unwrap_or(0))
        }
    }
}

fn has_table(sql: &Sql<'_>, name: &str) -> Result<bool, StateError> {
    match sql.store() {
        StoreKind::Sqlite => sql.exists(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1",
            params![name],
        ),
        StoreKind::Postgres => sql.exists(
            "SELECT 1 FROM information_schema.tables
             WHERE table_schema = current_schema() AND table_name = ?1",
            params![name],
        ),
    }
}

/// The tau that brought the schema to its step (`0.1.0`), when one said (`state_meta` came
/// at step 2, `schema_by` later).
pub(crate) fn schema_by(sql: &Sql<'_>) -> Result<Option<String>, StateError> {
    if !has_table(sql, "state_meta")? {
        return Ok(None);
    }
    sql.query_optional(
        "SELECT value FROM state_meta WHERE key = ?1",
        params![SCHEMA_BY],
        |row| row.get(0),
    )
}

fn record_schema_by(sql: &Sql<'_>) -> Result<(), StateError> {
    sql.execute(
        "INSERT INTO state_meta (key, value) VALUES (?1, ?2)
         ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        params![SCHEMA_BY, TAU_VERSION],
    )?;
    Ok(())
}

/// The refusal of a store at step `found`, naming the tau that wrote it and this one.
fn newer(sql: &Sql<'_>, found: i64) -> StateError {
    let by = match schema_by(sql) {
        Ok(Some(version)) => format!("tau {version}"),
        Ok(None) | Err(_) => "a newer tau".to_owned(),
    };
    StateError::Newer {
        found,
        known: LATEST,
        by,
        this: TAU_VERSION.to_owned(),
    }
}

/// Brings the file to [`LATEST`] and records this tau as the writer of its schema; a file
/// from a newer tau is refused, never changed. A file already at [`LATEST`] that does not
/// say which tau wrote it (made before tau recorded it) is given this tau's version once.
pub(crate) fn to_latest(connection: &mut Connection) -> Result<(), StateError> {
    let current = version(&Sql::Sqlite(connection))?;
    if current > LATEST {
        return Err(newer(&Sql::Sqlite(connection), current));
    }
    if current == LATEST && schema_by(&Sql::Sqlite(connection))?.is_some() {
        return Ok(());
    }
    let tx = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let sql = Sql::Sqlite(&tx);
    // Read again under the write lock: another process may have migrated meanwhile.
    let current = version(&sql)?;
    if current > LATEST {
        return Err(newer(&sql, current));
    }
    let done = usize::try_from(current).unwrap_or(0);
    for (step, run) in STEPS.iter().enumerate().skip(done) {
        sql.execute_batch(run.sqlite)?;
        if let Some(repair) = run.repair {
            repair(&sql)?;
        }
        tx.pragma_update(None, "user_version", step + 1)?;
        tracing::info!(version = step + 1, "state.db migrated");
    }
    if current < LATEST || schema_by(&sql)?.is_none() {
        record_schema_by(&sql)?;
    }
    tx.commit()?;
    Ok(())
}

/// The PostgreSQL store's own tables: the schema step it is at, and the counter every
/// write transaction bumps (see [`crate::StateDb::data_version`]): one row per connection
/// slot, the counter their sum.
const POSTGRES_BOOKKEEPING: &str = "
CREATE TABLE IF NOT EXISTS schema_version (
    id BIGINT PRIMARY KEY CHECK (id = 1),
    step BIGINT NOT NULL
);
INSERT INTO schema_version (id, step) VALUES (1, 0) ON CONFLICT (id) DO NOTHING;
CREATE TABLE IF NOT EXISTS tau_changes (
    id BIGINT PRIMARY KEY,
    version BIGINT NOT NULL
);
INSERT INTO tau_changes (id, version) VALUES (1, 0) ON CONFLICT (id) DO NOTHING;
";

/// Brings a PostgreSQL database to [`LATEST`], in one transaction behind the write lock
/// (a second hub connecting at the same moment waits, then finds nothing to do); an empty
/// database gets every step at once. A database from a newer tau is refused, never changed.
pub(crate) fn postgres_to_latest(store: &PgStore) -> Result<(), StateError> {
    store.with(|c| {
        let sql = Sql::Postgres(c);
        let current = version(&sql)?;
        if current > LATEST {
            return Err(newer(&sql, current));
        }
        if current == LATEST && schema_by(&sql)?.is_some() {
            return Ok(());
        }
        c.execute_batch(&format!(
            "BEGIN; SELECT pg_advisory_xact_lock({});",
            crate::pg::WRITE_LOCK
        ))?;
        let migrated = postgres_steps(&sql);
        match migrated {
            Ok(()) => c.execute_batch("COMMIT"),
            Err(error) => {
                let _ = c.execute_batch("ROLLBACK");
                Err(error)
            }
        }
    })
}

fn postgres_steps(sql: &Sql<'_>) -> Result<(), StateError> {
    sql.execute_batch(POSTGRES_BOOKKEEPING)?;
    let current = version(sql)?;
    if current > LATEST {
        return Err(newer(sql, current));
    }
    let done = usize::try_from(current).unwrap_or(0);
    for (step, run) in STEPS.iter().enumerate().skip(done) {
        match run.postgres {
            Some(text) => sql.execute_batch(text)?,
            None => sql.execute_batch(&postgres_text(run.sqlite))?,
        }
        if let Some(after) = run.postgres_after {
            sql.execute_batch(after)?;
        }
        sql.execute(
            "UPDATE schema_version SET step = ?1 WHERE id = 1",
            params![i64::try_from(step + 1).unwrap_or(i64::MAX)],
        )?;
        tracing::info!(version = step + 1, "the PostgreSQL store migrated");
    }
    if current < LATEST || schema_by(sql)?.is_none() {
        record_schema_by(sql)?;
    }
    Ok(())
}
