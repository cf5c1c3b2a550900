//! How writes of several connections to one PostgreSQL database meet: a write of
//! statements alone runs beside another's write lock, and each connection counts its
//! commits in a slot of its own, so no commit waits on another's.

use std::sync::mpsc;

use rusqlite::params;

use crate::StateDb;

/// The value stored under `key` in `state_meta`, if any (a row any test may write).
pub(crate) fn meta(db: &StateDb, key: &str) -> Option<String> {
    db.read(|c| {
        c.query_optional(
            "SELECT value FROM state_meta WHERE key = ?1",
            params![key],
            |row| row.get(0),
        )
    })
    .unwrap()
}

#[test]
fn a_write_of_statements_commits_while_another_connection_holds_the_write_lock() {
    let Some(store) = crate::test_stores::postgres() else {
        return;
    };
    let (holder, other) = (store.open(), store.open());
    let ((held, is_held), (release, released)) = (mpsc::channel(), mpsc::channel::<()>());
    std::thread::scope(|scope| {
        let holder = &holder;
        let holding = scope.spawn(move || {
            holder.write(|c| {
                c.execute(
                    "INSERT INTO state_meta (key, value) VALUES ('held', '1')",
                    params![],
                )?;
                held.send(()).unwrap();
                // The lock stays taken, the transaction open, until the other's write
                // is in.
                released.recv().unwrap();
                Ok(())
            })
        });
        is_held.recv().unwrap();
        // Were it to wait for the lock, the server would give up after its lock timeout
        // and this would be an error.
        let written = other.write_statement(
            false,
            "INSERT INTO state_meta (key, value) VALUES ('beside', '1')",
            params![],
        );
        assert_eq!(written.unwrap(), 1);
        assert_eq!(meta(&other, "beside").as_deref(), Some("1"));
        assert_eq!(meta(&other, "held"), None, "the holder's is not in yet");
        release.send(()).unwrap();
        holding.join().unwrap().unwrap();
    });
    assert_eq!(meta(&other, "held").as_deref(), Some("1"));
}

#[test]
fn each_connection_counts_its_commits_in_a_slot_of_its_own_and_others_see_the_sum() {
    let Some(store) = crate::test_stores::postgres() else {
        return;
    };
    let (a, b, watcher) = (store.open(), store.open(), store.open());
    let before = watcher.data_version().unwrap();
    let write = |db: &StateDb, key: &str| {
        db.write_statement(
            false,
            "INSERT INTO state_meta (key, value) VALUES (?1, 'x')",
            params![key],
        )
        .unwrap();
    };
    write(&a, "a1");
    write(&a, "a2");
    a.write(|c| {
        c.execute(
            "UPDATE state_meta SET value = 'y' WHERE key = 'a1'",
            params![],
        )
    })
    .unwrap();
    write(&b, "b1");
    let slots: Vec<(i64, i64)> = watcher
        .read(|c| {
            c.query_map(
                "SELECT id, version FROM tau_changes WHERE version > 0 ORDER BY id",
                params![],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
        })
        .unwrap();
    let versions: Vec<i64> = slots.iter().map(|(_, version)| *version).collect();
    assert_eq!(versions, [3, 1], "a's three commits, b's one: {slots:?}");
    assert_eq!(watcher.data_version().unwrap(), before + 4);
    // A commit of one's own does not move one's own count.
    let mine = a.data_version().unwrap();
    write(&a, "a3");
    assert_eq!(a.data_version().unwrap(), mine);
    assert_eq!(watcher.data_version().unwrap(), before + 5);
}
