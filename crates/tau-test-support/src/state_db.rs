//! `state.db` changed behind tau's back, as another program with the file could: its own
//! connection, not tau's, so a test sees what tau does with a row it did not write.

use std::path::Path;

/// Runs `sql` on the SQLite file at `path` with `?1` bound to `id`; returns how many rows
/// it changed. Panics when the file does not open or the statement fails: a test that
/// cannot tamper has nothing to show.
#[allow(clippy::panic, reason = "test support: a failed setup ends the test")]
pub fn edit_behind_tau(path: &Path, sql: &str, id: &str) -> usize {
    let connection = rusqlite::Connection::open(path)
        .unwrap_or_else(|error| panic!("cannot open {}: {error}", path.display()));
    connection
        .execute(sql, [id])
        .unwrap_or_else(|error| panic!("{sql}: {error}"))
}

/// Sets `set` (an SQL assignment list) on the approval row `id` behind tau's back; panics
/// unless exactly that row changed.
pub fn tamper_approval(path: &Path, id: &str, set: &str) {
    let changed = edit_behind_tau(
        path,
        &format!("UPDATE approvals SET {set} WHERE id = ?1"),
        id,
    );
    assert_eq!(changed, 1, "{set}");
}
