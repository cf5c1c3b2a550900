//! The schema, as numbered steps. `PRAGMA user_version` says which step a file is at; a
//! file is brought to the last step when it is opened, in one transaction, so a second
//! process opening it at the same moment waits and then finds nothing left to do.
//!
//! Step 1 is the schema tau kept before this crate owned the file, exactly, created only
//! where it is missing: a home from then (at version 0, its tables made table by table by
//! their old owners, some before questions had cards) is taken over in place, with all it
//! holds.

use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior};

use crate::error::StateError;

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

/// Step 1: the tables as they were, and the card column a table of questions made
/// before cards lacks.
fn before_one_owner(tx: &Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute_batch(TABLES_BEFORE_ONE_OWNER)?;
    let has_card = tx
        .prepare("SELECT 1 FROM pragma_table_info('approvals') WHERE name = 'card'")?
        .exists([])?;
    if !has_card {
        tx.execute_batch("ALTER TABLE approvals ADD COLUMN card TEXT NOT NULL DEFAULT '{}'")?;
    }
    Ok(())
}

fn state_meta(tx: &Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute_batch(STATE_META)
}

/// Step 2: the store's own small facts (when it was last flushed).
const STATE_META: &str = "
CREATE TABLE state_meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
";

/// Step 3: grants, a person's "yes, and allow exactly this again".
fn grants(tx: &Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute_batch(crate::grants::GRANTS_TABLE)
}

/// Step 4: what became of an approved call once it was let through (`outcome`: `finished`
/// or `effect_uncertain`, and when). A call let through (`consumed_at`) without an outcome
/// was dispatched and its result never stored: tau stopped while it ran.
const CALL_OUTCOME: &str = "
ALTER TABLE approvals ADD COLUMN outcome TEXT;
ALTER TABLE approvals ADD COLUMN outcome_at TEXT;
";

fn call_outcome(tx: &Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute_batch(CALL_OUTCOME)
}

/// Step 5: whether a question may be shown. The conversation gate stores its question
/// before the turn's paused state is saved and shows it only after; a question never
/// shown is listed nowhere and answers nothing, so a kill in between cancels a question
/// nobody saw. Rows from before were all shown.
const QUESTION_SHOWN: &str = "
ALTER TABLE approvals ADD COLUMN shown INTEGER NOT NULL DEFAULT 1;
";

fn question_shown(tx: &Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute_batch(QUESTION_SHOWN)
}

/// Step 6: a stored question's grant offer (what "yes, and allow this again" would
/// cover, as the gate worked it out when it asked) and the grant its yes asked for.
const STORED_GRANTS: &str = "
ALTER TABLE approvals ADD COLUMN grant_offer TEXT;
ALTER TABLE approvals ADD COLUMN grant_request TEXT;
";

fn stored_grants(tx: &Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute_batch(STORED_GRANTS)
}

/// Step 8: a session's decided questions its turn has not settled yet, found without
/// reading the session's every question (the hub looks after each turn).
const UNSETTLED_BY_SESSION: &str = "
CREATE INDEX IF NOT EXISTS approvals_unsettled ON approvals (session) WHERE settled = 0;
";

fn unsettled_by_session(tx: &Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute_batch(UNSETTLED_BY_SESSION)
}

/// One step of the schema, run inside the migration's transaction.
type Step = fn(&Transaction<'_>) -> rusqlite::Result<()>;

/// Every step, in order; a file at version N has had the first N.
const STEPS: &[Step] = &[
    before_one_owner,
    state_meta,
    grants,
    call_outcome,
    question_shown,
    stored_grants,
    crate::titles::session_title_step,
    unsettled_by_session,
    crate::grant_pins::grant_pins_step,
    crate::people::people_step,
];

/// The version a file has once this tau opened it.
pub const LATEST: i64 = STEPS.len() as i64;

/// This tau's version, recorded as the writer of the schema (`state_meta.schema_by`).
pub const TAU_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The `state_meta` key that names the tau which brought the schema to its step.
const SCHEMA_BY: &str = "schema_by";

pub(crate) fn version(connection: &Connection) -> rusqlite::Result<i64> {
    connection.query_row("PRAGMA user_version", [], |row| row.get(0))
}

/// The tau that brought the schema to its step (`0.1.0`), when one said (`state_meta` came
/// at step 2, `schema_by` later).
pub(crate) fn schema_by(connection: &Connection) -> rusqlite::Result<Option<String>> {
    let has_meta = connection
        .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'state_meta'")?
        .exists([])?;
    if !has_meta {
        return Ok(None);
    }
    connection
        .query_row(
            "SELECT value FROM state_meta WHERE key = ?1",
            [SCHEMA_BY],
            |row| row.get(0),
        )
        .optional()
}

fn record_schema_by(tx: &Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute(
        "INSERT INTO state_meta (key, value) VALUES (?1, ?2)
         ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        [SCHEMA_BY, TAU_VERSION],
    )?;
    Ok(())
}

/// The refusal of a file at step `found`, naming the tau that wrote it and this one.
fn newer(connection: &Connection, found: i64) -> StateError {
    let by = match schema_by(connection) {
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
    let current = version(connection)?;
    if current > LATEST {
        return Err(newer(connection, current));
    }
    if current == LATEST && schema_by(connection)?.is_some() {
        return Ok(());
    }
    let tx = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
    // Read again under the write lock: another process may have migrated meanwhile.
    let current = version(&tx)?;
    if current > LATEST {
        return Err(newer(&tx, current));
    }
    let done = usize::try_from(current).unwrap_or(0);
    for (step, run) in STEPS.iter().enumerate().skip(done) {
        run(&tx)?;
        tx.pragma_update(None, "user_version", step + 1)?;
        tracing::info!(version = step + 1, "state.db migrated");
    }
    if current < LATEST || schema_by(&tx)?.is_none() {
        record_schema_by(&tx)?;
    }
    tx.commit()?;
    Ok(())
}
