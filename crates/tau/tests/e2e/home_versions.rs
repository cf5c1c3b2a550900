//! A home written by an earlier tau opens and keeps what it holds; one written by a newer
//! tau is refused with a line that names both versions, and is left as it was.

use crate::common;

use common::{Tau, answer};
use pretty_assertions::assert_eq;
use serde_json::json;

#[test]
fn a_home_written_by_an_earlier_tau_opens_with_everything_it_held() {
    let tau = Tau::new();
    std::fs::create_dir_all(tau.home()).unwrap();
    let db = rusqlite::Connection::open(tau.home().join("state.db")).unwrap();
    db.execute_batch(include_str!(
        "../../../tau-state/tests/fixtures/state-before-tau-state.sql"
    ))
    .unwrap();
    drop(db);
    let listed = tau.run(&["sessions", "list"], "");
    assert_eq!((listed.code, listed.stderr.as_str()), (0, ""));
    assert!(listed.stdout.contains("kitchen"), "{}", listed.stdout);
    let db = rusqlite::Connection::open(tau.home().join("state.db")).unwrap();
    let (version, by): (i64, String) = db
        .query_row(
            "SELECT (SELECT user_version FROM pragma_user_version), value FROM state_meta WHERE key = 'schema_by'",
            [],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .unwrap();
    assert_eq!(
        (version, by.as_str()),
        (tau_state::SCHEMA_VERSION, env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn a_home_written_by_a_newer_tau_is_refused_naming_both_versions() {
    let tau = Tau::new();
    let model = tau.replay(&json!([answer("Hello.")]));
    let chat = tau.run(&["--model", &model, "chat", "--session", "s1"], "hi\n");
    assert_eq!(chat.code, 0, "{}", chat.stderr);
    let newer = tau_state::SCHEMA_VERSION + 1;
    let db = rusqlite::Connection::open(tau.home().join("state.db")).unwrap();
    db.pragma_update(None, "user_version", newer).unwrap();
    db.execute(
        "UPDATE state_meta SET value = '9.9.9' WHERE key = 'schema_by'",
        [],
    )
    .unwrap();
    drop(db);
    let this = env!("CARGO_PKG_VERSION");
    let said = format!(
        "tau: state.db was written by tau 9.9.9 (schema step {newer}); this is tau {this}, which knows steps up to {}: run tau 9.9.9 or later on this home, or restore a backup made by tau {this} into a new one\n",
        tau_state::SCHEMA_VERSION
    );
    for args in [
        &["sessions", "list"][..],
        &["--model", &model, "chat", "--session", "s1"][..],
    ] {
        let run = tau.run(args, "hi\n");
        assert_eq!(
            (run.code, run.stderr.as_str()),
            (1, said.as_str()),
            "{args:?}"
        );
    }
    let db = rusqlite::Connection::open(tau.home().join("state.db")).unwrap();
    let version: i64 = db
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .unwrap();
    assert_eq!(version, newer, "left as it was");
}
