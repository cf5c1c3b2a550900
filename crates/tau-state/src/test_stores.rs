//! The stores the table-driven tests run against: always a fresh SQLite file, and a fresh
//! PostgreSQL database when `TAU_TEST_POSTGRES_URL` names a server (its url for a database
//! a test may create others from: `CREATE DATABASE tau_t_<random>`, dropped at the end).
//! Used by the unit tests beside the modules and, by path, by the tests in `tests/`.
//! Without a server those tests run on SQLite alone, unless `TAU_PEERS_REQUIRED=1` (set by
//! `scripts/test`): then a missing server fails them, so a green run ran both stores.

#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use tau_state::{StateDb, StoreLocation};

/// The server the PostgreSQL runs use, when one is given.
pub const POSTGRES_URL: &str = "TAU_TEST_POSTGRES_URL";

/// One store for one test, removed when dropped.
pub struct TestStore {
    pub location: StoreLocation,
    /// `sqlite` or `postgres`, for assertion messages.
    pub kind: &'static str,
    _dir: Option<tempfile::TempDir>,
    database: Option<(String, String)>,
}

impl TestStore {
    /// A new connection to the store (a second process's, as far as the store can tell).
    pub fn open(&self) -> StateDb {
        StateDb::open_store(&self.location)
            .unwrap_or_else(|e| panic!("{}: cannot open: {e}", self.kind))
    }

    /// The PostgreSQL url, for a test that needs it (None on SQLite).
    pub fn url(&self) -> Option<&str> {
        match &self.location {
            StoreLocation::Postgres { url } => Some(url),
            StoreLocation::Sqlite(_) => None,
        }
    }
}

impl Drop for TestStore {
    fn drop(&mut self) {
        if let Some((admin, name)) = &self.database {
            // WITH (FORCE): connections a test left open go with the database.
            let _ = admin_batch(
                admin,
                &format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
            );
        }
    }
}

/// A fresh SQLite store.
pub fn sqlite() -> TestStore {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    TestStore {
        location: StoreLocation::Sqlite(dir.path().join("state.db")),
        kind: "sqlite",
        _dir: Some(dir),
        database: None,
    }
}

/// A fresh PostgreSQL database on the server `TAU_TEST_POSTGRES_URL` names, if it names one
/// (and when it names none under `TAU_PEERS_REQUIRED=1`, a failure).
pub fn postgres() -> Option<TestStore> {
    let required = std::env::var_os("TAU_PEERS_REQUIRED").is_some_and(|v| v == "1");
    let admin = server_url(std::env::var(POSTGRES_URL).ok(), required)?;
    let name = fresh_name();
    admin_batch(&admin, &format!("CREATE DATABASE {name}"))
        .unwrap_or_else(|e| panic!("cannot create the test database {name}: {e}"));
    Some(TestStore {
        location: StoreLocation::Postgres {
            url: with_database(&admin, &name),
        },
        kind: "postgres",
        _dir: None,
        database: Some((admin, name)),
    })
}

/// The server's url from `given` (`TAU_TEST_POSTGRES_URL`): none when it is unset or
/// empty, which fails the test when a server is `required`.
pub fn server_url(given: Option<String>, required: bool) -> Option<String> {
    let url = given.filter(|u| !u.is_empty());
    assert!(
        url.is_some() || !required,
        "TAU_PEERS_REQUIRED is set, but {POSTGRES_URL} names no PostgreSQL server"
    );
    url
}

/// Every store a behaviour test runs against.
pub fn stores() -> Vec<TestStore> {
    let mut stores = vec![sqlite()];
    stores.extend(postgres());
    stores
}

fn fresh_name() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!(
        "tau_t_{}_{}_{}",
        std::process::id(),
        nanos,
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// `url` with its database replaced by `name` (options kept).
pub fn with_database(url: &str, name: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (url, None),
    };
    let authority_start = base.find("://").map_or(0, |i| i + 3);
    let host_end = base[authority_start..]
        .find('/')
        .map_or(base.len(), |i| authority_start + i);
    let mut out = format!("{}/{name}", &base[..host_end]);
    if let Some(query) = query {
        out.push('?');
        out.push_str(query);
    }
    out
}

/// Runs `sql` on the server's admin database, outside any transaction.
fn admin_batch(admin: &str, sql: &str) -> Result<(), tokio_postgres::Error> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    runtime.block_on(async {
        let (client, connection) = tokio_postgres::connect(admin, tokio_postgres::NoTls).await?;
        let driver = tokio::spawn(connection);
        let result = client.batch_execute(sql).await;
        drop(client);
        let _ = driver.await;
        result
    })
}

/// Runs `sql` on the store behind tau's back (an edit by anything else that can write it).
pub fn tamper(store: &TestStore, sql: &str) {
    match &store.location {
        StoreLocation::Sqlite(path) => {
            let raw = rusqlite::Connection::open(path).unwrap_or_else(|e| panic!("{e}"));
            raw.execute_batch(sql).unwrap_or_else(|e| panic!("{e}"));
        }
        StoreLocation::Postgres { url } => {
            admin_batch(url, sql).unwrap_or_else(|e| panic!("{e}"));
        }
    }
}

/// The path of a SQLite store, for a test of the file itself.
pub fn sqlite_path(store: &TestStore) -> Option<PathBuf> {
    match &store.location {
        StoreLocation::Sqlite(path) => Some(path.clone()),
        StoreLocation::Postgres { .. } => None,
    }
}
