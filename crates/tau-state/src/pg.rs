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
use rusqlite::types::Value;
use tokio_postgres::types::Type;
use tokio_postgres::{AsyncMessage, Client, Config, NoTls, Statement};

use crate::error::StateError;
use crate::pg_support::{block_on_for, describe, redact, with_causes};
use crate::pg_value::{PgValue, read_row};

/// The channel every write transaction notifies at its commit.
const CHANGES: &str = "tau_state";
/// The advisory lock every write transaction takes first: one writer at a time across
/// every process that shares the database, as SQLite's `BEGIN IMMEDIATE` does for a file.
/// ("tau!" in ASCII; any constant no other program on the database uses.)
pub(crate) const WRITE_LOCK: i64 = 0x7461_7521;
/// The start of every write: the transaction and the write lock. Its commit waits for the
/// server's log flush (the server's own `synchronous_commit`, on unless its operator said
/// otherwise): a commit that was answered survives a crash of the server's process, as a
/// SQLite commit survives a killed hub. `synchronous_commit = off` would not: the server
/// answers before its log leaves its own memory, and a crash of the server loses what it
/// had answered in the last few hundred milliseconds (a conversation it said it made, then
/// "no such session" once it is back).
const BEGIN: &str = "BEGIN";
/// The write lock, prepared once per connection (as [`BUMP`]): the server plans it once,
/// not at every write.
const LOCK: &str = "SELECT pg_advisory_xact_lock(1952544033)";
/// The change counter bumped, at the end of every write.
const BUMP: &str = "UPDATE tau_changes SET version = version + 1 WHERE id = 1";
/// The end of every write after [`BUMP`]: the others told, the commit.
const COMMIT: &str = "NOTIFY tau_state; COMMIT";

/// How long connecting (the socket, the server's greeting and the login) may take before
/// the store counts as unavailable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a statement waits for another process's lock before it fails, as SQLite's
/// busy timeout.
const LOCK_TIMEOUT: &str = "5s";
/// How long the server lets one statement run before it cancels it: a statement that
/// runs away fails as a statement, and the connection stays.
const STATEMENT_TIMEOUT: &str = "8s";
/// How long a call waits for the server's answer before the store counts as unavailable
/// and the connection is dropped: longer than [`STATEMENT_TIMEOUT`], so it fires only when
/// the server (or the network to it) has stopped answering altogether.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);

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
    /// Dropped with the connection: the connection's thread then ends, even while the
    /// server owes it answers it will never send.
    _stop: tokio::sync::oneshot::Sender<()>,
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
    /// counter and notifies the other processes at its commit. The start and the lock
    /// travel with the write's first statement, and the counter, the notice and the
    /// commit together: a write of n statements is n + 1 round trips. Every commit returns
    /// once the server's log has it (see [`BEGIN`]).
    pub(crate) fn write<T>(
        &self,
        write: impl FnOnce(&PgConnection) -> Result<T, StateError>,
    ) -> Result<T, StateError> {
        self.with(|c| {
            c.begin(BEGIN);
            let committed = write(c).and_then(|value| {
                c.commit()?;
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
                    // is gone (or did not answer in time, and is dropped) ends the
                    // transaction with it; a start never sent began nothing.
                    let sent = c.take_opening().is_none();
                    let lost = matches!(error, StateError::Unavailable { .. });
                    if sent && !lost {
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
        // The thread answers within CONNECT_TIMEOUT; the margin is for a busy machine.
        let (client, stop) = receiver
            .recv_timeout(CONNECT_TIMEOUT + Duration::from_secs(1))
            .map_err(|error| self.unavailable(error))?
            .map_err(|why| StateError::Unavailable {
                store: self.description.clone(),
                why,
            })?;
        let connection = PgConnection {
            client,
            _stop: stop,
            description: self.description.clone(),
            statements: Mutex::new(HashMap::new()),
            opening: Mutex::new(None),
        };
        connection.execute_batch(&format!(
            "SET lock_timeout = '{LOCK_TIMEOUT}'; \
             SET statement_timeout = '{STATEMENT_TIMEOUT}'; LISTEN {CHANGES}"
        ))?;
        let pid = connection.query("SELECT pg_backend_pid()", &[])?;
        if let Some(Value::Integer(pid)) = pid.first().and_then(|row| row.first()) {
            let pid = i32::try_from(*pid).unwrap_or(0);
            self.changes.own_pid.store(pid, Ordering::Relaxed);
        }
        Ok(connection)
    }
}

/// What the connection's thread hands over: the client and the switch that ends the
/// thread, or why there is no connection.
type Opened = Result<(Client, tokio::sync::oneshot::Sender<()>), String>;

/// The connection's thread: connects (within [`CONNECT_TIMEOUT`]), hands the client over,
/// then drives the connection, counting other processes' notifications, until it ends
/// (closed by the server, or the [`PgConnection`] dropped).
fn drive(config: Config, changes: Arc<Changes>, sender: std::sync::mpsc::SyncSender<Opened>) {
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
        let (client, mut connection) =
            match tokio::time::timeout(CONNECT_TIMEOUT, config.connect(NoTls)).await {
                Ok(Ok(pair)) => pair,
                Ok(Err(error)) => {
                    let _ = sender.send(Err(with_causes(&error)));
                    return;
                }
                Err(_) => {
                    let why = format!("no answer within {} s", CONNECT_TIMEOUT.as_secs());
                    let _ = sender.send(Err(why));
                    return;
                }
            };
        let (stop, mut stopped) = tokio::sync::oneshot::channel();
        if sender.send(Ok((client, stop))).is_err() {
            return;
        }
        let mut messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
        loop {
            let next = futures::future::select(messages.next(), &mut stopped).await;
            let futures::future::Either::Left((Some(message), _)) = next else {
                break;
            };
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

    /// Ends a write: the counter bumped, then the notice and the commit, sent together. A
    /// bump that failed left the transaction aborted, which the commit then rolls back.
    fn commit(&self) -> Result<(), StateError> {
        let bump = self.prepare(BUMP)?;
        self.send(async {
            let (bumped, committed) = futures::future::join(
                self.client.execute(&bump, &[]),
                self.client.batch_execute(COMMIT),
            )
            .await;
            bumped?;
            committed
        })
    }

    /// Makes `start` (a write's `BEGIN`, then its lock) go with the next request.
    fn begin(&self, start: &'static str) {
        *self.opening.lock().unwrap_or_else(PoisonError::into_inner) = Some(start);
    }

    fn take_opening(&self) -> Option<&'static str> {
        self.opening
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    /// Runs `request`, behind a write's start and lock when they wait: all are sent
    /// before any answer is read (one round trip), and the server runs them in order, so
    /// the request runs inside the transaction behind the lock, and fails when the start
    /// or the lock failed.
    fn send<T>(
        &self,
        request: impl Future<Output = Result<T, tokio_postgres::Error>>,
    ) -> Result<T, StateError> {
        let Some(start) = self.take_opening() else {
            return self.answer(request)?.map_err(|error| self.failed(error));
        };
        // Prepared before anything of the write is sent (once per connection).
        let lock = self.prepare(LOCK)?;
        let (started, locked, answered) = self.answer(futures::future::join3(
            self.client.batch_execute(start),
            self.client.execute(&lock, &[]),
            request,
        ))?;
        started.map_err(|error| self.failed(error))?;
        locked.map_err(|error| self.failed(error))?;
        answered.map_err(|error| self.failed(error))
    }

    /// Waits for `request` on this thread, at most [`ANSWER_TIMEOUT`]: a server that
    /// stopped answering (hung, or a network that drops everything without closing) makes
    /// the store unavailable, and the connection is dropped, rather than holding up the
    /// hub.
    fn answer<T>(&self, request: impl Future<Output = T>) -> Result<T, StateError> {
        block_on_for(request, ANSWER_TIMEOUT).ok_or_else(|| StateError::Unavailable {
            store: self.description.clone(),
            why: format!(
                "the server did not answer within {} s",
                ANSWER_TIMEOUT.as_secs()
            ),
        })
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
        let statement = self
            .answer(self.client.prepare_typed(&text, &[] as &[Type]))?
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_write_takes_the_one_write_lock_and_notifies_the_one_channel() {
        assert_eq!(BEGIN, "BEGIN", "the server's own synchronous_commit");
        assert_eq!(LOCK, format!("SELECT pg_advisory_xact_lock({WRITE_LOCK})"));
        assert!(BUMP.starts_with("UPDATE tau_changes SET version = version + 1"));
        assert_eq!(COMMIT, format!("NOTIFY {CHANGES}; COMMIT"));
    }
}
