//! The PostgreSQL store: one connection per [`crate::StateDb`], driven on a thread of its
//! own (a current-thread tokio runtime that does nothing else), so the store's callers stay
//! synchronous and block on the client's futures wherever they run. The connection also
//! listens on `tau_state`: another process's commit wakes [`PgStore::wait_for_change`].
//!
//! A lost connection fails the call that found it with [`StateError::Unavailable`] (what
//! was asked did not happen, or, for a commit cut short, may not have: nothing reads that
//! as a yes) and the next call connects again.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI32, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use futures::StreamExt;
use futures::executor::block_on;
use rusqlite::types::Value;
use tokio_postgres::types::Type;
use tokio_postgres::{AsyncMessage, Client, Config, NoTls, Statement};

use crate::error::StateError;
use crate::pg_value::{PgValue, read_row};

/// The channel every write transaction notifies at its commit.
const CHANGES: &str = "tau_state";
/// The advisory lock every write transaction takes first: one writer at a time across
/// every process that shares the database, as SQLite's `BEGIN IMMEDIATE` does for a file.
/// ("tau!" in ASCII; any constant no other program on the database uses.)
pub(crate) const WRITE_LOCK: i64 = 0x7461_7521;
/// The start of a write that must survive a power cut once it returns: the write lock.
const BEGIN_DURABLE: &str = "BEGIN; SELECT pg_advisory_xact_lock(1952544033)";
/// The start of an ordinary write: the write lock, and a commit that does not wait for
/// the disk.
const BEGIN_ORDINARY: &str =
    "BEGIN; SET LOCAL synchronous_commit = off; SELECT pg_advisory_xact_lock(1952544033)";
/// The end of every write: the change counter bumped, the others told, the commit.
const COMMIT: &str =
    "UPDATE tau_changes SET version = version + 1 WHERE id = 1; NOTIFY tau_state; COMMIT";

/// Whether a write's commit waits for the disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Durability {
    /// In the operating system's hands at its commit: survives a killed process.
    Ordinary,
    /// On the disk at its commit, with every commit before it: survives a power cut.
    Flushed,
}

/// How long connecting may take before the store counts as unavailable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a statement waits for another process's lock before it fails, as SQLite's
/// busy timeout.
const LOCK_TIMEOUT: &str = "5s";

/// A PostgreSQL database as tau's store.
pub(crate) struct PgStore {
    /// The url as given, password and all: kept to connect again, never shown.
    config: Config,
    /// `postgres://host:port/db`, without user or password: what messages name.
    description: String,
    connection: Mutex<Option<PgConnection>>,
    changes: Arc<Changes>,
    /// Commits of this store's own, so [`Self::data_version`] moves for others' only.
    own_writes: AtomicI64,
    /// The count of notifications the last [`Self::wait_for_change`] saw.
    seen: AtomicU64,
}

/// Notifications that arrived from other processes' commits.
#[derive(Default)]
struct Changes {
    count: Mutex<u64>,
    arrived: Condvar,
    /// This connection's server process, whose own notifications are not news.
    own_pid: AtomicI32,
}

/// One open connection and its prepared statements.
pub(crate) struct PgConnection {
    client: Client,
    description: String,
    statements: Mutex<HashMap<String, Statement>>,
    /// The start of a write, until its first request carries it.
    opening: Mutex<Option<&'static str>>,
}

impl PgStore {
    /// Parses `url` and connects; the schema is the caller's.
    pub(crate) fn connect(url: &str) -> Result<Self, StateError> {
        let mut config: Config =
            url.parse()
                .map_err(|error: tokio_postgres::Error| StateError::Connect {
                    store: "the PostgreSQL url".to_owned(),
                    why: redact(&with_causes(&error), url),
                })?;
        config
            .connect_timeout(CONNECT_TIMEOUT)
            .keepalives_idle(Duration::from_secs(10));
        let description = describe(&config);
        let store = Self {
            config,
            description,
            connection: Mutex::new(None),
            changes: Arc::new(Changes::default()),
            own_writes: AtomicI64::new(0),
            seen: AtomicU64::new(0),
        };
        let connection = store.open().map_err(|error| match error {
            StateError::Unavailable { store, why } => StateError::Connect { store, why },
            other => other,
        })?;
        *store.lock() = Some(connection);
        Ok(store)
    }

    /// `postgres://host:port/db`.
    pub(crate) fn description(&self) -> &str {
        &self.description
    }

    /// Runs `work` on the connection, connecting first when there is none or it was lost;
    /// a connection found lost is dropped, for the next call to replace.
    pub(crate) fn with<T>(
        &self,
        work: impl FnOnce(&PgConnection) -> Result<T, StateError>,
    ) -> Result<T, StateError> {
        let mut slot = self.lock();
        let connection = match slot.take() {
            Some(connection) if !connection.client.is_closed() => connection,
            Some(_) | None => self.open()?,
        };
        let result = work(&connection);
        let lost = matches!(result, Err(StateError::Unavailable { .. }));
        if !lost && !connection.client.is_closed() {
            *slot = Some(connection);
        }
        result
    }

    /// Runs `write` in one transaction behind the write lock, which also bumps the change
    /// counter and notifies the other processes at its commit. The fixed parts are one
    /// simple-query batch each (the start, lock and all; the counter, notice and commit),
    /// and the start travels with the write's first statement: a write of n statements is
    /// n + 1 round trips.
    ///
    /// An ordinary write commits without waiting for the log to reach the disk
    /// (`synchronous_commit = off` for this transaction alone), as SQLite's
    /// `synchronous = NORMAL` does: a crash of the server's machine may lose the last such
    /// commits, whole and in order, never part of one. A `durable` write keeps the server's
    /// own setting (on unless its operator said otherwise): it returns once its commit, and
    /// with it every commit before it, is on the disk.
    pub(crate) fn write<T>(
        &self,
        durable: Durability,
        write: impl FnOnce(&PgConnection) -> Result<T, StateError>,
    ) -> Result<T, StateError> {
        self.with(|c| {
            c.begin(match durable {
                Durability::Flushed => BEGIN_DURABLE,
                Durability::Ordinary => BEGIN_ORDINARY,
            });
            let committed = write(c).and_then(|value| {
                c.execute_batch(COMMIT)?;
                Ok(value)
            });
            match committed {
                Ok(value) => {
                    self.own_writes.fetch_add(1, Ordering::Relaxed);
                    Ok(value)
                }
                Err(error) => {
                    // After a failed statement or commit the transaction is over or
                    // aborted: ending it keeps the connection usable. A connection that
                    // is gone rolled the transaction back with it; a start never sent
                    // began nothing.
                    if c.take_opening().is_none() {
                        let _ = c.execute_batch("ROLLBACK");
                    }
                    Err(error)
                }
            }
        })
    }

    /// A number that changes when another process committed: the shared counter less the
    /// commits made here.
    pub(crate) fn data_version(&self) -> Result<i64, StateError> {
        let version = self.with(|c| {
            c.query("SELECT version FROM tau_changes WHERE id = 1", &[])?
                .first()
                .and_then(|row| match row.first() {
                    Some(Value::Integer(version)) => Some(*version),
                    _ => None,
                })
                .ok_or_else(|| StateError::unreadable("tau_changes", "no row"))
        })?;
        Ok(version.wrapping_sub(self.own_writes.load(Ordering::Relaxed)))
    }

    /// Waits up to `timeout` for another process's commit; true when one came since the
    /// last wait (or since the store was opened).
    pub(crate) fn wait_for_change(&self, timeout: Duration) -> bool {
        let seen = self.seen.load(Ordering::Relaxed);
        let count = self
            .changes
            .count
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let (count, _) = self
            .changes
            .arrived
            .wait_timeout_while(count, timeout, |count| *count == seen)
            .unwrap_or_else(PoisonError::into_inner);
        self.seen.store(*count, Ordering::Relaxed);
        *count != seen
    }

    fn lock(&self) -> MutexGuard<'_, Option<PgConnection>> {
        self.connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn unavailable(&self, why: impl std::error::Error) -> StateError {
        StateError::Unavailable {
            store: self.description.clone(),
            why: with_causes(&why),
        }
    }

    /// Connects on a new thread that then drives the connection until it ends.
    fn open(&self) -> Result<PgConnection, StateError> {
        let (sender, receiver) = std::sync::mpsc::sync_channel(1);
        let config = self.config.clone();
        let changes = Arc::clone(&self.changes);
        std::thread::Builder::new()
            .name("tau-state-postgres".to_owned())
            .spawn(move || drive(config, changes, sender))
            .map_err(|error| self.unavailable(error))?;
        let client = receiver
            .recv()
            .map_err(|error| self.unavailable(error))?
            .map_err(|error| self.unavailable(error))?;
        let connection = PgConnection {
            client,
            description: self.description.clone(),
            statements: Mutex::new(HashMap::new()),
            opening: Mutex::new(None),
        };
        connection.execute_batch(&format!(
            "SET lock_timeout = '{LOCK_TIMEOUT}'; LISTEN {CHANGES}"
        ))?;
        let pid = connection.query("SELECT pg_backend_pid()", &[])?;
        if let Some(Value::Integer(pid)) = pid.first().and_then(|row| row.first()) {
            let pid = i32::try_from(*pid).unwrap_or(0);
            self.changes.own_pid.store(pid, Ordering::Relaxed);
        }
        Ok(connection)
    }
}

/// The connection's thread: connects, hands the client over, then drives the connection,
/// counting other processes' notifications, until it ends (closed by the server, or its
/// client dropped).
fn drive(
    config: Config,
    changes: Arc<Changes>,
    sender: std::sync::mpsc::SyncSender<Result<Client, tokio_postgres::Error>>,
) {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            tracing::warn!(%error, "no runtime for the PostgreSQL connection");
            return;
        }
    };
    runtime.block_on(async move {
        let (client, mut connection) = match config.connect(NoTls).await {
            Ok(pair) => pair,
            Err(error) => {
                let _ = sender.send(Err(error));
                return;
            }
        };
        if sender.send(Ok(client)).is_err() {
            return;
        }
        let mut messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(message) = messages.next().await {
            match message {
                Ok(AsyncMessage::Notification(notification)) => {
                    if notification.process_id() != changes.own_pid.load(Ordering::Relaxed) {
                        let mut count =
                            changes.count.lock().unwrap_or_else(PoisonError::into_inner);
                        *count = count.wrapping_add(1);
                        changes.arrived.notify_all();
                    }
                }
                Ok(_) => {}
                Err(error) => {
                    tracing::warn!(%error, "the PostgreSQL connection ended");
                    break;
                }
            }
        }
    });
}

impl PgConnection {
    pub(crate) fn execute(&self, sql: &str, params: &[Value]) -> Result<usize, StateError> {
        let statement = self.prepare(sql)?;
        let params = PgValue::all(params);
        let params = PgValue::refs(&params);
        let changed = self.send(self.client.execute(&statement, &params))?;
        Ok(usize::try_from(changed).unwrap_or(usize::MAX))
    }

    pub(crate) fn query(&self, sql: &str, params: &[Value]) -> Result<Vec<Vec<Value>>, StateError> {
        let statement = self.prepare(sql)?;
        let params = PgValue::all(params);
        let params = PgValue::refs(&params);
        let rows = self.send(self.client.query(&statement, &params))?;
        rows.iter()
            .map(|row| read_row(row).map_err(|why| StateError::unreadable("a PostgreSQL row", why)))
            .collect()
    }

    pub(crate) fn execute_batch(&self, sql: &str) -> Result<(), StateError> {
        self.send(self.client.batch_execute(sql))
    }

    /// Makes `start` (a write's `BEGIN` and lock) go with the next request.
    fn begin(&self, start: &'static str) {
        *self.opening.lock().unwrap_or_else(PoisonError::into_inner) = Some(start);
    }

    fn take_opening(&self) -> Option<&'static str> {
        self.opening
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    /// Runs `request`, behind a write's start when one waits: both are sent before either
    /// answer is read (one round trip), and the server runs them in order, so the request
    /// runs inside the transaction behind the lock, and fails when the start failed.
    fn send<T>(
        &self,
        request: impl Future<Output = Result<T, tokio_postgres::Error>>,
    ) -> Result<T, StateError> {
        let Some(start) = self.take_opening() else {
            return block_on(request).map_err(|error| self.failed(error));
        };
        let (started, answered) = block_on(futures::future::join(
            self.client.batch_execute(start),
            request,
        ));
        started.map_err(|error| self.failed(error))?;
        answered.map_err(|error| self.failed(error))
    }

    /// The statement for `sql` (its `?N` written `$N`), prepared once per connection.
    fn prepare(&self, sql: &str) -> Result<Statement, StateError> {
        let mut statements = self
            .statements
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(statement) = statements.get(sql) {
            return Ok(statement.clone());
        }
        let text = crate::sql::numbered_placeholders(sql);
        let statement = block_on(self.client.prepare_typed(&text, &[] as &[Type]))
            .map_err(|error| self.failed(error))?;
        statements.insert(sql.to_owned(), statement.clone());
        Ok(statement)
    }

    /// An error of the server's (a constraint, a query it refused) or of the connection,
    /// which is then unavailable.
    fn failed(&self, error: tokio_postgres::Error) -> StateError {
        let io = std::error::Error::source(&error)
            .is_some_and(|source| source.downcast_ref::<std::io::Error>().is_some());
        if error.is_closed() || io {
            return StateError::Unavailable {
                store: self.description.clone(),
                why: with_causes(&error),
            };
        }
        StateError::Postgres {
            store: self.description.clone(),
            source: error,
        }
    }
}

/// `error` and what caused it (`error connecting to server: Connection refused`): the
/// driver's own words stop at the first.
fn with_causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(error) = cause {
        let more = error.to_string();
        if !text.ends_with(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        cause = error.source();
    }
    text
}

/// `postgres://host:port/db`: the url without user, password or options.
fn describe(config: &Config) -> String {
    use tokio_postgres::config::Host;
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(host)) => host.clone(),
        Some(Host::Unix(path)) => path.display().to_string(),
        None => "localhost".to_owned(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let db = config
        .get_dbname()
        .or(config.get_user())
        .unwrap_or("postgres");
    format!("postgres://{host}:{port}/{db}")
}

/// `text` with the url's password (if any) blotted out: a parse error may quote the url.
fn redact(text: &str, url: &str) -> String {
    let password = url
        .split_once("://")
        .and_then(|(_, rest)| rest.split_once('@'))
        .and_then(|(credentials, _)| credentials.split_once(':'))
        .map(|(_, password)| password)
        .filter(|password| !password.is_empty());
    match password {
        Some(password) => text.replace(password, "***"),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn every_write_takes_the_one_write_lock_and_notifies_the_one_channel() {
        for begin in [BEGIN_DURABLE, BEGIN_ORDINARY] {
            assert!(begin.starts_with("BEGIN;"), "{begin}");
            assert!(
                begin.ends_with(&format!("SELECT pg_advisory_xact_lock({WRITE_LOCK})")),
                "{begin}"
            );
        }
        assert!(!BEGIN_DURABLE.contains("synchronous_commit"));
        assert!(COMMIT.contains(&format!("NOTIFY {CHANGES};")));
        assert!(COMMIT.ends_with("; COMMIT"));
    }

    #[test]
    fn a_store_is_described_without_its_user_or_password() {
        let config: Config = "postgres://tau:s3cret@db.example:6543/tau_home?sslmode=disable"
            .parse()
            .unwrap();
        assert_eq!(describe(&config), "postgres://db.example:6543/tau_home");
        assert_eq!(
            redact("bad url postgres://tau:s3cret@x", "postgres://tau:s3cret@x"),
            "bad url postgres://tau:***@x"
        );
    }
}
