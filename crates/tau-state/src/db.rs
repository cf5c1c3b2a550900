//! [`StateDb`]: the one way into tau's store, `state.db` or a PostgreSQL database. It opens
//! the file (private, without a second descriptor) and applies the pragma policy, or
//! connects; applies the migrations; and runs every read and write of this process on one
//! connection, off the async workers.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use std::sync::atomic::{AtomicI64, Ordering};

use rusqlite::{Connection, OpenFlags, TransactionBehavior, params};

use crate::error::StateError;
use crate::migrate;
use crate::pg::PgStore;
use crate::sql::Sql;

/// How long a statement waits for another process's write before it fails.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// SQLite's own checkpoints, in 4 KiB pages: 64 MiB of log, a bound for a turn that never
/// ends. The end of each turn checkpoints anyway (see [`StateDb::flush`]).
const AUTOCHECKPOINT_PAGES: i64 = 16_384;
/// After a checkpoint the log file is cut back to this.
const JOURNAL_SIZE_LIMIT: i64 = 4 << 20;
/// How often [`StateDb::wait_for_change`] looks at a SQLite file's `data_version`.
const SQLITE_CHANGE_POLL: Duration = Duration::from_millis(50);
/// The mode of `state.db` and of the `-wal` and `-shm` files SQLite makes beside it.
const PRIVATE_MODE: u32 = 0o600;

/// Where tau's store is: the embedded SQLite file (the default, in the home) or a
/// PostgreSQL database that several hubs share.
#[derive(Clone, PartialEq, Eq)]
pub enum StoreLocation {
    Sqlite(PathBuf),
    /// A `postgres://` url; it may hold a password, so it is never shown (see
    /// [`StateDb::describe`]).
    Postgres {
        url: String,
    },
}

impl std::fmt::Debug for StoreLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Sqlite(path) => f.debug_tuple("Sqlite").field(path).finish(),
            Self::Postgres { .. } => f.write_str("Postgres { .. }"),
        }
    }
}

/// The store, open. Cheap to clone; every clone is the same connection. Safe to share
/// between threads, and other processes may open the same store at the same time.
#[derive(Clone)]
pub struct StateDb {
    inner: Arc<Store>,
    /// The hub this process is (see [`StateDb::for_hub`]): the calls it lets through are
    /// recorded as its own.
    hub: Option<Arc<str>>,
}

enum Store {
    Sqlite(SqliteStore),
    Postgres(Box<PgStore>),
}

struct SqliteStore {
    path: PathBuf,
    connection: Mutex<Connection>,
    /// The `data_version` the last [`StateDb::wait_for_change`] saw.
    seen: AtomicI64,
}

impl std::fmt::Debug for StateDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateDb")
            .field("store", &self.describe())
            .finish_non_exhaustive()
    }
}

impl StateDb {
    /// Opens `state.db` at `path`, creating it (its folder must exist) and bringing its
    /// tables to this tau's schema.
    pub fn open(path: &Path) -> Result<Self, StateError> {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let connection =
            Connection::open_with_flags(path, flags).map_err(|source| StateError::Open {
                path: path.display().to_string(),
                source,
            })?;
        // SQLite has the file now but has read or locked nothing yet; a mode set by path
        // needs no descriptor of ours, so no lock SQLite takes later can be dropped by it.
        protect(path)?;
        let mut connection = connection;
        configure(&connection)?;
        migrate::to_latest(&mut connection)?;
        let seen = connection.query_row("PRAGMA data_version", params![], |row| row.get(0))?;
        Ok(Self {
            inner: Arc::new(Store::Sqlite(SqliteStore {
                path: path.to_owned(),
                connection: Mutex::new(connection),
                seen: AtomicI64::new(seen),
            })),
            hub: None,
        })
    }

    /// Opens `state.db` when it exists; `None` (nothing created) when it does not.
    pub fn open_existing(path: &Path) -> Result<Option<Self>, StateError> {
        match std::fs::symlink_metadata(path) {
            Ok(_) => Self::open(path).map(Some),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(StateError::Protect {
                path: path.display().to_string(),
                source,
            }),
        }
    }

    /// Connects to the PostgreSQL database at `url` and brings its tables to this tau's
    /// schema (creating them in an empty database).
    pub fn connect(url: &str) -> Result<Self, StateError> {
        off_the_runtime(|| {
            let store = PgStore::connect(url)?;
            migrate::postgres_to_latest(&store)?;
            store.seen_so_far()?;
            Ok(Self {
                inner: Arc::new(Store::Postgres(Box::new(store))),
                hub: None,
            })
        })
    }

    /// Another connection to the same store, for a thread that waits for changes
    /// ([`Self::wait_for_change`]) without holding this one: the file opened again, or a
    /// second PostgreSQL connection. Its waits count this one's commits as changes, as
    /// any other's.
    pub fn another_connection(&self) -> Result<Self, StateError> {
        let inner = match &*self.inner {
            Store::Sqlite(store) => {
                return Ok(Self {
                    hub: self.hub.clone(),
                    ..Self::open(&store.path)?
                });
            }
            Store::Postgres(store) => {
                Store::Postgres(Box::new(off_the_runtime(|| store.another())?))
            }
        };
        Ok(Self {
            inner: Arc::new(inner),
            hub: self.hub.clone(),
        })
    }

    /// Opens the store at `location`: [`Self::open`] or [`Self::connect`].
    pub fn open_store(location: &StoreLocation) -> Result<Self, StateError> {
        match location {
            StoreLocation::Sqlite(path) => Self::open(path),
            StoreLocation::Postgres { url } => Self::connect(url),
        }
    }

    /// This store as seen by hub `hub` (a stable id per home): every clone and handle of
    /// the result records the calls it lets through as that hub's, and at a start closes
    /// only its own cut-off calls and those of hubs whose lease has run out
    /// (`leases.rs`), never a call another live hub is running.
    #[must_use]
    pub fn for_hub(mut self, hub: &str) -> Self {
        self.hub = Some(Arc::from(hub));
        self
    }

    /// The hub this handle is, when [`Self::for_hub`] said.
    pub fn hub(&self) -> Option<&str> {
        self.hub.as_deref()
    }

    /// The SQLite file, when the store is one.
    pub fn path(&self) -> Option<&Path> {
        match &*self.inner {
            Store::Sqlite(store) => Some(&store.path),
            Store::Postgres(_) => None,
        }
    }

    /// The store for a message: the SQLite file's path, or `postgres://host:port/db`
    /// (never a user or a password).
    pub fn describe(&self) -> String {
        match &*self.inner {
            Store::Sqlite(store) => store.path.display().to_string(),
            Store::Postgres(store) => store.description().to_owned(),
        }
    }

    /// Whether the store is PostgreSQL (shared by several hubs) rather than a file.
    pub fn is_shared(&self) -> bool {
        matches!(&*self.inner, Store::Postgres(_))
    }

    /// Runs `read` on the connection.
    pub(crate) fn read<T>(
        &self,
        read: impl FnOnce(&Sql<'_>) -> Result<T, StateError>,
    ) -> Result<T, StateError> {
        match &*self.inner {
            Store::Sqlite(store) => off_the_runtime(|| read(&Sql::Sqlite(&store.lock()))),
            Store::Postgres(store) => off_the_runtime(|| store.with(|c| read(&Sql::Postgres(c)))),
        }
    }

    /// Runs `write` in one transaction that takes the write lock at its start (a
    /// transaction that read first could find another process wrote meanwhile, and fail
    /// instead of waiting): SQLite's `BEGIN IMMEDIATE`, PostgreSQL's advisory lock that
    /// every hub sharing the database takes. A commit survives a killed process; see
    /// [`Self::write_durable`] for one that survives a power cut too.
    pub(crate) fn write<T>(
        &self,
        write: impl FnOnce(&Sql<'_>) -> Result<T, StateError>,
    ) -> Result<T, StateError> {
        match &*self.inner {
            Store::Sqlite(store) => off_the_runtime(|| transaction(&mut store.lock(), write)),
            Store::Postgres(store) => off_the_runtime(|| store.write(|c| write(&Sql::Postgres(c)))),
        }
    }

    /// [`Self::write`], with the log flushed to the disk at its commit: this write and
    /// every one before it survive a power cut once it returns. For what must never be
    /// lost: a person's answer, a call let through, the end of a turn. On SQLite the commit
    /// runs at `synchronous = FULL`; on PostgreSQL every commit waits for the server's
    /// log flush (its own `synchronous_commit`, on unless its operator said otherwise), so
    /// this is [`Self::write`].
    pub(crate) fn write_durable<T>(
        &self,
        write: impl FnOnce(&Sql<'_>) -> Result<T, StateError>,
    ) -> Result<T, StateError> {
        let store = match &*self.inner {
            Store::Sqlite(store) => store,
            Store::Postgres(store) => {
                return off_the_runtime(|| store.write(|c| write(&Sql::Postgres(c))));
            }
        };
        off_the_runtime(|| {
            let mut connection = store.lock();
            connection.pragma_update(None, "synchronous", "FULL")?;
            let result = transaction(&mut connection, write);
            let restored = connection.pragma_update(None, "synchronous", "NORMAL");
            let value = result?;
            restored?;
            Ok(value)
        })
    }

    /// One statement as a write of its own: the rows it changed. Whether it commits is the
    /// statement's alone (it commits when it succeeds, changing nothing or not), so on
    /// PostgreSQL the start, the statement, the counter and the commit travel together:
    /// one round trip, where [`Self::write`] takes two for one statement.
    /// `durable`: as [`Self::write_durable`].
    ///
    /// On PostgreSQL it takes no write lock, so other processes' writes run beside it: the
    /// statement must be right on its own, as a compare-and-set whose condition names what
    /// it may change (`UPDATE … WHERE state = 'pending'`, which the server checks again
    /// once it holds the row) or an insert a key keeps single. A write that must read
    /// before it decides is [`Self::write`].
    pub(crate) fn write_statement(
        &self,
        durable: bool,
        sql: &str,
        params: crate::sql::Params<'_>,
    ) -> Result<usize, StateError> {
        let changed = self.write_statements(durable, &[(sql, params)])?;
        Ok(changed.first().copied().unwrap_or(0))
    }

    /// Statements as one write that stands when every one of them succeeds (and is rolled
    /// back when one fails): the rows each changed. As [`Self::write_statement`], one round
    /// trip on PostgreSQL without the write lock, so no statement may need what an earlier
    /// one returned, and each must be right on its own; each sees what an earlier one
    /// wrote. A statement that must stop the write fails on purpose (a NULL where none may
    /// go, say).
    pub(crate) fn write_statements(
        &self,
        durable: bool,
        statements: &[(&str, crate::sql::Params<'_>)],
    ) -> Result<Vec<usize>, StateError> {
        match &*self.inner {
            Store::Postgres(store) => {
                let statements = statements
                    .iter()
                    .map(|(sql, params)| Ok((*sql, crate::sql::values(params)?)))
                    .collect::<Result<Vec<_>, StateError>>()?;
                off_the_runtime(|| store.write_statements(&statements))
            }
            Store::Sqlite(_) => {
                let run = |tx: &Sql<'_>| {
                    statements
                        .iter()
                        .map(|(sql, params)| tx.execute(sql, params))
                        .collect::<Result<Vec<_>, StateError>>()
                };
                if durable {
                    self.write_durable(run)
                } else {
                    self.write(run)
                }
            }
        }
    }

    /// Makes every write so far survive a power cut: one durable commit (the log is
    /// flushed with it, and with it every commit before it), then on SQLite a checkpoint
    /// that copies the log into the database file without waiting for readers in other
    /// processes.
    ///
    /// On PostgreSQL there is nothing to do: every commit there already waited for the
    /// server's log flush (see [`Self::write_durable`]), so a flush would be one more
    /// transaction and one more flush for nothing.
    pub fn flush(&self) -> Result<(), StateError> {
        if self.is_shared() {
            return Ok(());
        }
        self.write_durable(|tx| {
            tx.execute(
                "INSERT INTO state_meta (key, value) VALUES ('flushed_at', ?1)
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                params![jiff::Timestamp::now().to_string()],
            )?;
            Ok(())
        })?;
        let Store::Sqlite(store) = &*self.inner else {
            return Ok(());
        };
        off_the_runtime(|| {
            store
                .lock()
                .query_row("PRAGMA wal_checkpoint(PASSIVE)", params![], |_| Ok(()))?;
            Ok(())
        })
    }

    /// SQLite's own check of the whole file: `["ok"]` when it is sound. On PostgreSQL
    /// (which checks its own pages) the closest honest check: the database answers and
    /// its schema is at this tau's step.
    pub fn integrity_check(&self) -> Result<Vec<String>, StateError> {
        match &*self.inner {
            Store::Sqlite(_) => self.read(|c| {
                c.query_map("PRAGMA integrity_check", params![], |row| {
                    row.get::<_, String>(0)
                })
            }),
            Store::Postgres(_) => {
                let step = self.schema_version()?;
                Ok(vec![if step == migrate::LATEST {
                    "ok".to_owned()
                } else {
                    format!("schema step {step}, not {}", migrate::LATEST)
                }])
            }
        }
    }

    /// A number that changes when another process committed to the store since the last
    /// call on this connection (SQLite's `data_version`; on PostgreSQL a counter every
    /// write transaction bumps); this process's own commits do not change it.
    pub fn data_version(&self) -> Result<i64, StateError> {
        match &*self.inner {
            Store::Sqlite(store) => off_the_runtime(|| {
                Ok(store
                    .lock()
                    .query_row("PRAGMA data_version", params![], |row| row.get(0))?)
            }),
            Store::Postgres(store) => off_the_runtime(|| store.data_version()),
        }
    }

    /// Waits up to `timeout` for another process's commit: true when one came since the
    /// last wait. PostgreSQL wakes it at once (`LISTEN`); on SQLite it looks at
    /// [`Self::data_version`] every few milliseconds. A hub that only polls
    /// `data_version` misses nothing either.
    pub fn wait_for_change(&self, timeout: Duration) -> Result<bool, StateError> {
        match &*self.inner {
            Store::Sqlite(store) => {
                let started = std::time::Instant::now();
                loop {
                    let version = self.data_version()?;
                    if store.seen.swap(version, Ordering::Relaxed) != version {
                        return Ok(true);
                    }
                    let left = timeout.saturating_sub(started.elapsed());
                    if left.is_zero() {
                        return Ok(false);
                    }
                    std::thread::sleep(left.min(SQLITE_CHANGE_POLL));
                }
            }
            Store::Postgres(store) => off_the_runtime(|| store.wait_for_change(timeout)),
        }
    }

    /// The schema step the store is at.
    pub fn schema_version(&self) -> Result<i64, StateError> {
        self.read(migrate::version)
    }

    /// The SQLite store, or what to say when an operation needs one.
    pub(crate) fn sqlite_only(&self, what: &'static str) -> Result<(), StateError> {
        match &*self.inner {
            Store::Sqlite(_) => Ok(()),
            Store::Postgres(store) => Err(StateError::Unsupported {
                what,
                store: store.description().to_owned(),
            }),
        }
    }
}

impl SqliteStore {
    fn lock(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

fn transaction<T>(
    connection: &mut Connection,
    write: impl FnOnce(&Sql<'_>) -> Result<T, StateError>,
) -> Result<T, StateError> {
    let tx = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let value = write(&Sql::Sqlite(&tx))?;
    tx.commit()?;
    Ok(value)
}

/// The pragma policy, the same for every process: WAL (readers and one writer apart),
/// `synchronous = NORMAL` (a commit is in the operating system's hands when it returns, so
/// it survives a killed process; [`StateDb::write_durable`] and [`StateDb::flush`] put
/// what must survive a power cut on the disk), a wait for a busy file, foreign keys.
fn configure(connection: &Connection) -> Result<(), StateError> {
    connection.busy_timeout(BUSY_TIMEOUT)?;
    let mode: String =
        connection.query_row("PRAGMA journal_mode = WAL", params![], |row| row.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(StateError::NoWriteAheadLog { mode });
    }
    connection.pragma_update(None, "synchronous", "NORMAL")?;
    connection.pragma_update(None, "foreign_keys", "ON")?;
    connection.pragma_update(None, "wal_autocheckpoint", AUTOCHECKPOINT_PAGES)?;
    connection.pragma_update(None, "journal_size_limit", JOURNAL_SIZE_LIMIT)?;
    Ok(())
}

/// Gives `state.db` and its `-wal` and `-shm` files (SQLite makes those with the database's
/// own mode) mode 0600, by path: never through a descriptor of tau's own, whose closing
/// would drop the locks SQLite holds on the file.
pub(crate) fn protect(db: &Path) -> Result<(), StateError> {
    use std::os::unix::fs::PermissionsExt;
    for suffix in ["", "-wal", "-shm"] {
        let mut name = db.as_os_str().to_owned();
        name.push(suffix);
        let path = PathBuf::from(name);
        let failed = |source| StateError::Protect {
            path: path.display().to_string(),
            source,
        };
        match std::fs::metadata(&path) {
            Ok(meta) if meta.permissions().mode() & 0o777 == PRIVATE_MODE => {}
            Ok(_) => std::fs::set_permissions(&path, std::fs::Permissions::from_mode(PRIVATE_MODE))
                .map_err(failed)?,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(failed(error)),
        }
    }
    Ok(())
}

/// Runs blocking SQLite work without holding up the async workers: on tokio's
/// multi-threaded runtime the worker hands its other tasks to another thread first
/// (`block_in_place`); anywhere else (a plain thread, a blocking task, a single-threaded
/// test runtime) it simply runs.
fn off_the_runtime<T>(work: impl FnOnce() -> T) -> T {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(work)
        }
        Ok(_) | Err(_) => work(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use std::os::unix::fs::PermissionsExt;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn a_new_file_and_its_log_are_private_and_the_policy_holds() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.db");
        let db = StateDb::open(&path).unwrap();
        db.flush().unwrap();
        for file in ["state.db", "state.db-wal", "state.db-shm"] {
            assert_eq!(mode(&dir.path().join(file)), 0o600, "{file}");
        }
        let pragma = |name: &str| -> String {
            db.read(|c| {
                c.query_row(&format!("PRAGMA {name}"), params![], |row| {
                    row.get::<_, rusqlite::types::Value>(0)
                })
            })
            .map(|v| format!("{v:?}"))
            .unwrap()
        };
        assert_eq!(
            [
                pragma("journal_mode"),
                pragma("synchronous"),
                pragma("foreign_keys"),
                pragma("busy_timeout"),
                pragma("wal_autocheckpoint"),
            ],
            [
                "Text(\"wal\")",
                "Integer(1)",
                "Integer(1)",
                "Integer(5000)",
                "Integer(16384)"
            ]
        );
        assert_eq!(db.integrity_check().unwrap(), ["ok"]);
    }

    #[test]
    fn looser_modes_left_behind_are_tightened_at_open() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.db");
        StateDb::open(&path).unwrap().flush().unwrap();
        for file in ["state.db", "state.db-wal", "state.db-shm"] {
            let file = dir.path().join(file);
            if file.exists() {
                std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
            }
        }
        let _db = StateDb::open(&path).unwrap();
        for file in ["state.db", "state.db-wal", "state.db-shm"] {
            let file = dir.path().join(file);
            if file.exists() {
                assert_eq!(mode(&file), 0o600, "{}", file.display());
            }
        }
    }

    #[test]
    fn opening_what_does_not_exist_creates_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.db");
        assert!(StateDb::open_existing(&path).unwrap().is_none());
        assert!(!path.exists());
        StateDb::open(&path).unwrap();
        assert!(StateDb::open_existing(&path).unwrap().is_some());
    }

    #[test]
    fn another_connection_s_commit_changes_the_data_version_and_ours_does_not() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.db");
        let ours = StateDb::open(&path).unwrap();
        let theirs = StateDb::open(&path).unwrap();
        let before = ours.data_version().unwrap();
        ours.flush().unwrap();
        assert_eq!(ours.data_version().unwrap(), before);
        theirs.flush().unwrap();
        assert_ne!(ours.data_version().unwrap(), before);
    }

    #[test]
    fn a_durable_write_waits_for_the_disk_and_postgres_waits_for_every_commit() {
        for store in crate::test_stores::stores() {
            let db = store.open();
            let setting = |c: &Sql<'_>| match c.store() {
                crate::sql::StoreKind::Sqlite => {
                    c.query_row("PRAGMA synchronous", params![], |row| {
                        row.get::<_, i64>(0).map(|level| level.to_string())
                    })
                }
                crate::sql::StoreKind::Postgres => c.query_row(
                    "SELECT current_setting('synchronous_commit')",
                    params![],
                    |row| row.get::<_, String>(0),
                ),
            };
            let seen = [
                db.write(setting).unwrap(),
                db.write_durable(setting).unwrap(),
                db.write(setting).unwrap(),
            ];
            // SQLite: NORMAL (1), FULL (2); PostgreSQL: the server's own (on) for every
            // write, or a commit it answered is lost when its process crashes.
            let expected = match store.kind {
                "sqlite" => ["1", "2", "1"],
                _ => ["on", "on", "on"],
            };
            assert_eq!(seen, expected, "{}", store.kind);
        }
    }

    #[test]
    fn a_write_whose_commit_failed_leaves_the_store_usable() {
        for store in crate::test_stores::stores() {
            let db = store.open();
            // A statement fails and the write carries on as if it had not: the commit
            // cannot go through and the write fails.
            let insert = "INSERT INTO state_meta (key, value) VALUES ('twice', 'x')";
            let failed = db.write(|c| {
                c.execute(insert, params![])?;
                let _ = c.execute(insert, params![]);
                c.execute(
                    "INSERT INTO state_meta (key, value) VALUES ('lost', 'x')",
                    params![],
                )
            });
            if store.kind == "postgres" {
                assert!(failed.is_err(), "{}", store.kind);
            }
            db.write(|c| {
                c.execute(
                    "INSERT INTO state_meta (key, value) VALUES ('kept', 'x')",
                    params![],
                )
            })
            .unwrap_or_else(|e| panic!("{}: {e}", store.kind));
            db.flush().unwrap();
        }
    }

    #[test]
    fn a_statement_sent_with_its_commit_that_fails_writes_nothing_and_the_store_goes_on() {
        for store in crate::test_stores::stores() {
            let db = store.open();
            let kind = store.kind;
            let key = |key: &str| crate::pg_writes_tests::meta(&db, key);
            let insert = "INSERT INTO state_meta (key, value) VALUES (?1, ?2)";
            assert_eq!(
                db.write_statement(false, insert, params!["a", "1"])
                    .unwrap(),
                1
            );
            // The key is taken: the statement fails, and so does its commit.
            let twice = db.write_statement(true, insert, params!["a", "2"]);
            assert!(twice.is_err(), "{kind}: {twice:?}");
            assert_eq!(key("a").as_deref(), Some("1"), "{kind}");
            // The connection is out of the failed transaction: the next write stands.
            assert_eq!(
                db.write_statement(false, insert, params!["b", "1"])
                    .unwrap(),
                1
            );
            assert_eq!(key("b").as_deref(), Some("1"), "{kind}");
            // Statements that stand together: the second fails, nothing of the first stays.
            let failed = db.write_statements(
                false,
                &[(insert, params!["e", "1"]), (insert, params!["a", "3"])],
            );
            assert!(failed.is_err(), "{kind}");
            assert_eq!(key("e"), None, "{kind}");
            // The later statements see the earlier ones' rows.
            let changed = db
                .write_statements(
                    true,
                    &[
                        (insert, params!["f", "1"]),
                        (
                            "UPDATE state_meta SET value = '2' WHERE key = 'f' AND value = '1'",
                            params![],
                        ),
                    ],
                )
                .unwrap();
            assert_eq!(changed, [1, 1], "{kind}");
            assert_eq!(key("f").as_deref(), Some("2"), "{kind}");
        }
    }

    #[test]
    fn a_missing_postgresql_fails_the_store_tests_when_peers_are_required() {
        use crate::test_stores::server_url;
        assert_eq!(server_url(None, false), None);
        assert_eq!(server_url(Some(String::new()), false), None);
        let url = "postgres://postgres@127.0.0.1:5432/postgres".to_owned();
        assert_eq!(server_url(Some(url.clone()), true), Some(url));
        let missing = std::panic::catch_unwind(|| server_url(None, true));
        assert!(missing.is_err());
    }

    #[test]
    fn a_postgresql_store_answers_inside_either_runtime_and_outside_any() {
        let Some(store) = crate::test_stores::postgres() else {
            return;
        };
        let db = store.open();
        let write = |db: &StateDb, key: &str| {
            db.write_statement(
                false,
                "INSERT INTO state_meta (key, value) VALUES (?1, 'x')",
                params![key],
            )
            .unwrap()
        };
        assert_eq!(write(&db, "outside"), 1);
        // A current-thread runtime: the call holds its one thread until the server answers.
        let current = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        assert_eq!(current.block_on(async { write(&db, "current") }), 1);
        // A multi-threaded one: from a task, beside a task that keeps ticking.
        let multi = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let shared = db.clone();
        let written = multi.block_on(async move {
            let ticker = tokio::spawn(async {
                for _ in 0..5 {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            });
            let written = tokio::spawn(async move { write(&shared, "multi") }).await;
            ticker.await.unwrap();
            written.unwrap()
        });
        assert_eq!(written, 1);
        let keys: Vec<String> = db
            .read(|c| {
                c.query_map(
                    "SELECT key FROM state_meta WHERE value = 'x' ORDER BY key",
                    params![],
                    |row| row.get(0),
                )
            })
            .unwrap();
        assert_eq!(keys, ["current", "multi", "outside"]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn work_on_the_multi_threaded_runtime_runs_beside_other_tasks() {
        let dir = tempfile::tempdir().unwrap();
        let db = StateDb::open(&dir.path().join("state.db")).unwrap();
        let ticker = tokio::spawn(async {
            for _ in 0..5 {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        });
        for _ in 0..20 {
            db.flush().unwrap();
        }
        ticker.await.unwrap();
        assert_eq!(db.integrity_check().unwrap(), ["ok"]);
    }
}
