//! A home from before `state.db` had one owner is taken over in place: the file the
//! earlier tau wrote (`fixtures/state-before-tau-state.sql` is its dump: a hub with a
//! pending and an approved question, a `tau chat` session, routines with switches, runs and
//! marks, Telegram's memory, the audit anchor) opens, is migrated once, and reads back
//! everything it held.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use pretty_assertions::assert_eq;
use serde_json::Value;
use tau_protocol::{ApprovalId, DecidedBy, SessionId};
use tau_state::{ApprovalState, AuditHead, SCHEMA_VERSION, ShownQuestion, StateDb, TAU_VERSION};

/// Writes the earlier tau's file: its own tables, WAL, `user_version` 0.
fn earlier_home(dir: &tempfile::TempDir) -> std::path::PathBuf {
    let path = dir.path().join("state.db");
    let connection = rusqlite::Connection::open(&path).unwrap();
    connection
        .execute_batch(include_str!("fixtures/state-before-tau-state.sql"))
        .unwrap();
    let mode: String = connection
        .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    let version: i64 = connection
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .unwrap();
    assert_eq!(version, 0);
    drop(connection);
    path
}

fn session(text: &str) -> SessionId {
    SessionId::parse(text).unwrap()
}

fn approval(text: &str) -> ApprovalId {
    ApprovalId::parse(text).unwrap()
}

#[test]
fn an_earlier_home_is_migrated_in_place_and_keeps_everything() {
    let dir = tempfile::tempdir().unwrap();
    let path = earlier_home(&dir);
    let db = StateDb::open(&path).unwrap();
    assert_eq!(db.schema_version().unwrap(), SCHEMA_VERSION);

    let mut sessions: Vec<(String, u64)> = db
        .sessions()
        .list_sessions()
        .unwrap()
        .into_iter()
        .map(|s| (s.id.to_string(), s.message_count))
        .collect();
    sessions.sort();
    assert_eq!(
        sessions,
        [
            ("kitchen".to_owned(), 4),
            ("web-20261203-095021-ba7817".to_owned(), 2),
            ("web-20261203-095028-a2c5f5".to_owned(), 4),
        ]
    );
    let kitchen = db
        .sessions()
        .stored_messages(&session("kitchen"), 0)
        .unwrap();
    let first: Value = serde_json::from_str(&kitchen[0].body).unwrap();
    assert_eq!(first["role"], "user");
    let waiting = db
        .sessions()
        .agent_state(&session("web-20261203-095021-ba7817"))
        .unwrap()
        .unwrap();
    let waiting: Value = serde_json::from_str(&waiting).unwrap();
    assert_eq!(
        waiting["interruptState"]["activated"], true,
        "the paused turn still waits"
    );

    let pending = db
        .approvals()
        .approvals(Some(ApprovalState::Pending))
        .unwrap();
    assert_eq!(
        pending.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
        ["ap_6bc08b220c120cc028c3c168b82bf576"]
    );
    let approved = db
        .approvals()
        .approval(&approval("ap_33d5afd8222aaad7faaac120c70dbfc8"))
        .unwrap()
        .unwrap();
    assert_eq!(
        (
            approved.state,
            approved.decided_by,
            approved.consumed_at.is_some()
        ),
        (
            ApprovalState::Approved,
            Some(DecidedBy::person("web")),
            true
        )
    );
    assert_eq!(
        db.conversations()
            .conversation_of(&session("web-20261203-095028-a2c5f5"))
            .unwrap()
            .map(|c| c.channel),
        Some("web".to_owned())
    );

    let stored = db.routines().stored_routines().unwrap();
    assert_eq!(
        stored.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(),
        ["porch-light"]
    );
    let switches = db.routines().routine_switches().unwrap();
    assert_eq!(
        switches
            .iter()
            .map(|(name, s)| (name.as_str(), s.enabled))
            .collect::<Vec<_>>(),
        [("lamp", true), ("porch-light", false)]
    );
    assert_eq!(db.routines().routine_runs("lamp", 100).unwrap().len(), 11);
    assert_eq!(db.routines().routines_generation().unwrap(), 4);

    assert_eq!(db.telegram_memory().telegram_offset().unwrap(), Some(5012));
    assert_eq!(
        db.telegram_memory().telegram_generation(424_242).unwrap(),
        2
    );
    assert_eq!(
        db.telegram_memory()
            .telegram_question(&approval("ap_6bc08b220c120cc028c3c168b82bf576"))
            .unwrap(),
        Some(ShownQuestion {
            chat: 424_242,
            message_id: 77,
            closed: false
        })
    );
    assert_eq!(
        db.audit_anchor().audit_head().unwrap(),
        Some(AuditHead {
            seq: 33,
            hash: "f5514829c449d0fae90281f90354166f142e6d260ab8af4fdead6bc2bcf13261".into()
        })
    );
    assert_eq!(db.integrity_check().unwrap(), ["ok"]);
}

#[test]
fn a_migrated_home_opens_again_without_change_and_new_writes_land_beside_the_old() {
    let dir = tempfile::tempdir().unwrap();
    let path = earlier_home(&dir);
    let first = StateDb::open(&path).unwrap();
    let kitchen = session("kitchen");
    first
        .sessions()
        .append_message(
            &kitchen,
            4,
            r#"{"role":"user","content":[{"text":"again"}]}"#,
        )
        .unwrap();
    drop(first);
    let again = StateDb::open(&path).unwrap();
    assert_eq!(again.schema_version().unwrap(), SCHEMA_VERSION);
    assert_eq!(again.sessions().message_count(&kitchen).unwrap(), 5);
}

#[test]
fn two_processes_opening_an_earlier_home_at_once_migrate_it_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = earlier_home(&dir);
    let opened: Vec<i64> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let path = &path;
                scope.spawn(move || StateDb::open(path).unwrap().schema_version().unwrap())
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(opened, vec![SCHEMA_VERSION; 4]);
    let db = StateDb::open(&path).unwrap();
    assert_eq!(db.sessions().list_sessions().unwrap().len(), 3);
}

#[test]
fn a_file_from_a_newer_tau_is_refused_naming_both_versions_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    drop(StateDb::open(&path).unwrap());
    let connection = rusqlite::Connection::open(&path).unwrap();
    connection
        .pragma_update(None, "user_version", SCHEMA_VERSION + 1)
        .unwrap();
    connection
        .execute(
            "UPDATE state_meta SET value = '9.9.9' WHERE key = 'schema_by'",
            [],
        )
        .unwrap();
    drop(connection);
    let error = StateDb::open(&path).unwrap_err();
    assert!(matches!(error, tau_state::StateError::Newer { .. }));
    assert_eq!(
        error.to_string(),
        format!(
            "state.db was written by tau 9.9.9 (schema step {}); this is tau {TAU_VERSION}, which knows steps up to {SCHEMA_VERSION}: run tau 9.9.9 or later on this home, or restore a backup made by tau {TAU_VERSION} into a new one",
            SCHEMA_VERSION + 1
        )
    );
    let connection = rusqlite::Connection::open(&path).unwrap();
    let (version, by): (i64, String) = connection
        .query_row(
            "SELECT (SELECT user_version FROM pragma_user_version), value FROM state_meta WHERE key = 'schema_by'",
            [],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .unwrap();
    assert_eq!(
        (version, by.as_str()),
        (SCHEMA_VERSION + 1, "9.9.9"),
        "left alone"
    );
}

#[test]
fn a_file_from_a_newer_tau_that_did_not_say_which_is_refused_all_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    drop(StateDb::open(&path).unwrap());
    let connection = rusqlite::Connection::open(&path).unwrap();
    connection
        .pragma_update(None, "user_version", SCHEMA_VERSION + 3)
        .unwrap();
    connection
        .execute("DELETE FROM state_meta WHERE key = 'schema_by'", [])
        .unwrap();
    drop(connection);
    let error = StateDb::open(&path).unwrap_err().to_string();
    assert!(
        error.starts_with(&format!(
            "state.db was written by a newer tau (schema step {}); this is tau {TAU_VERSION}",
            SCHEMA_VERSION + 3
        )),
        "{error}"
    );
}

#[test]
fn the_tau_that_wrote_the_schema_is_recorded_also_in_a_home_from_before_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let path = earlier_home(&dir);
    let db = StateDb::open(&path).unwrap();
    assert_eq!(db.schema_by().unwrap().as_deref(), Some(TAU_VERSION));
    drop(db);
    // A home at the last step whose tau did not record itself yet.
    let connection = rusqlite::Connection::open(&path).unwrap();
    connection
        .execute("DELETE FROM state_meta WHERE key = 'schema_by'", [])
        .unwrap();
    drop(connection);
    let db = StateDb::open(&path).unwrap();
    assert_eq!(db.schema_by().unwrap().as_deref(), Some(TAU_VERSION));
    assert_eq!(db.schema_version().unwrap(), SCHEMA_VERSION);
}
