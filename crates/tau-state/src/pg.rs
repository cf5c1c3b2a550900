//! The PostgreSQL store: one connection per [`crate::StateDb`], driven by whichever thread
//! asks (see [`crate::pg_wire`]), so the store's callers stay synchronous and no thread
//! or runtime waits beside them. A waiter for other processes' commits
//! ([`PgStore::wait_for_change`]) listens on `tau_state` while it waits: every write
//! notifies it at its commit.
//!
//! A lost connection fails the call that found it with [`StateError::Unavailable`] (what
//! was asked did not happen, or, for a commit cut short, may not have: nothing reads that
//! as a yes) and the next call connects again.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use rusqlite::types::Value;
use tokio_postgres::types::Type;
use tokio_postgres::{Client, Config, Statement};

use crate::error::StateError;
use crate::pg_support::{describe, redact, with_causes};
use crate::pg_value::{PgValue, read_row};
use crate::pg_wire::{Stalled, Wire};

/// The channel every write transaction notifies at its commit.
const CHANGES: &str = "tau_state";
/// The advisory lock a write that reads before it writes ([`PgStore::write`]) takes
/// first: one such writer at a time across every process that shares the database, as
/// SQLite's `BEGIN IMMEDIATE` does for a file. A write of statements alone
/// ([`PgStore::write_statements`]) takes none: each of its statements is a compare-and-set
/// whose condition the server checks again under the row's lock, so it is right beside
/// any other write, and the commits of several hubs do not wait for each other's log
/// flush. ("tau!" in ASCII; any constant no other program on the database uses.)
pub(crate) const WRITE_LOCK: i64 = 0x7461_7521;
/// The first key of the session advisory locks that give each open connection a change
/// counter slot of its own (`"tau\""`; the two-key locks never meet [`WRITE_LOCK`]).
const SLOT_LOCK: i32 = 0x7461_7522;
/// How many connections at once have a slot of their own; any more share slot 0.
const SLOTS: i32 = 1024;
/// The start of every write: the transaction (the write lock follows where one is
/// taken). Its commit waits for the server's log flush (the server's own
/// `synchronous_commit`, on unless its operator said otherwise): a commit that was
/// answered survives a crash of the server's process, as a SQLite commit survives a
/// killed hub. `synchronous_commit = off` would not: the server
/// answers before its log leaves its own memory, and a crash of the server loses what it
/// had answered in the last few hundred milliseconds (a conversation it said it made, then
/// "no such session" once it is back).
const BEGIN: &str = "BEGIN";
/// The write lock, prepared once per connection (as [`BUMP`]): the server plans it once,
/// not at every write.
const LOCK: &str = "SELECT pg_advisory_xact_lock(1952544033)";
/// The change counter bumped, at the end of every write: in the connection's own slot,
/// so writes of several connections never wait for each other on one row.
const BUMP: &str = "INSERT INTO tau_changes (id, version) VALUES (?1, 1) \
     ON CONFLICT (id) DO UPDATE SET version = tau_changes.version + 1";
/// The end of every write after [`BUMP`]: the others told, the commit.
const COMMIT: &str = "NOTIFY tau_state; COMMIT";
/// The change counter, as a waiter reads it: every slot's, committed.
const VERSION: &str = "SELECT COALESCE(SUM(version), 0)::BIGINT FROM tau_changes";

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
/// How long a waiter sleeps on the socket before it reads the counter again: another
/// thread's call may have read the notification that was to wake it.
const CHANGE_RECHECK: Duration = Duration::from_millis(50);
/// The same for a connection only its waiter uses ([`PgStore::another`]): a notification
/// that came in with the counter's answer was read with it, and wakes nobody.
const WAITER_RECHECK: Duration = Duration::from_millis(250);

/// A PostgreSQL database as tau's store.
pub(crate) struct PgStore {
    /// The url as given, password and all: kept to connect again, never shown.
    config: Config,
    /// The TLS the url asked for (`sslmode=require`), its roots read when it was opened.
    tls: Option<Arc<rustls::ClientConfig>>,
    /// `postgres://host:port/db`, without user or password: what messages name.
    description: String,
    connection: Mutex<Option<PgConnection>>,
    /// Commits of this store's own, so [`Self::data_version`] moves for others' only.
    own_writes: AtomicI64,
    /// The [`Self::data_version`] the last [`Self::wait_for_change`] saw (at first, the
    /// one when the store was opened: [`Self::seen_so_far`]).
    seen: AtomicI64,
    /// How long [`Self::wait_for_change`] sleeps on the socket before it reads the counter
    /// again.
    recheck: Duration,
}

/// One open connection and its prepared statements. Only the thread holding the store's
/// lock uses it.
pub(crate) struct PgConnection {
    client: Client,
    wire: RefCell<Wire>,
    description: String,
    statements: RefCell<HashMap<String, Statement>>,
    /// Its row of the change counter ([`SLOT_LOCK`]).
    slot: i64,
    /// The start of a write, until its first request carries it.
    opening: Cell<Option<&'static str>>,
}

impl PgStore {
    /// Parses `url` and connects; the schema is the caller's.
    pub(crate) fn connect(url: &str) -> Result<Self, StateError> {
        let (driver_url, tls) = crate::pg_tls::from_url(url);
        let config: Config =
            driver_url
                .parse()
                .map_err(|error: tokio_postgres::Error| StateError::Connect {
                    store: "the PostgreSQL url".to_owned(),
                    why: redact(&with_causes(&error), url),
                })?;
        let description = describe(&config);
        let tls = tls
            .map(|wanted| crate::pg_tls::client_config(&wanted))
            .transpose()
            .map_err(|why| StateError::Connect {
                store: description.clone(),
                why,
            })?;
        let store = Self {
            config,
            tls,
            description,
            connection: Mutex::new(None),
            own_writes: AtomicI64::new(0),
            seen: AtomicI64::new(0),
            recheck: CHANGE_RECHECK,
        };
        let connection = store.open().map_err(|error| match error {
            StateError::Unavailable { store, why } => StateError::Connect { store, why },
            other => other,
        })?;
        *store.lock() = Some(connection);
        Ok(store)
    }

    /// A second connection to the same database, for a thread that waits for changes
    /// while others use this one. Nobody else reads its notifications, so its waits read
    /// the counter less often ([`WAITER_RECHECK`]).
    pub(crate) fn another(&self) -> Result<Self, StateError> {
        let store = Self {
            config: self.config.clone(),
            tls: self.tls.clone(),
            description: self.description.clone(),
            connection: Mutex::new(None),
            own_writes: AtomicI64::new(0),
            seen: AtomicI64::new(0),
            recheck: WAITER_RECHECK,
        };
        *store.lock() = Some(store.open()?);
        store.seen_so_far()?;
        Ok(store)
    }

    /// Marks every commit so far as seen, once the schema is in place: what was committed
    /// before the store was opened is not news to its first [`Self::wait_for_change`].
    pub(crate) fn seen_so_far(&self) -> Result<(), StateError> {
        let version = self.data_version()?;
        self.seen.store(version, Ordering::Relaxed);
        Ok(())
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
            Some(connection) if !connection.closed_while_idle() => connection,
            Some(_) | None => self.open()?,
        };
        let result = work(&connection);
        let lost = matches!(result, Err(StateError::Unavailable { .. }));
        if !lost && !connection.closed() {
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
            c.opening.set(Some(BEGIN));
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
                    let sent = c.opening.take().is_none();
                    let lost = matches!(error, StateError::Unavailable { .. });
                    if sent && !lost {
                        let _ = c.execute_batch("ROLLBACK");
                    }
                    Err(error)
                }
            }
        })
    }

    /// Statements as a write of their own (see [`crate::StateDb::write_statements`]): the
    /// start, the statements, the counter, the notice and the commit sent at once,
    /// answered in one round trip, without the write lock (see [`WRITE_LOCK`]). A start or
    /// statement that failed leaves the transaction aborted, and the server turns its
    /// commit into a rollback: the first failure is the answer, and nothing was written.
    pub(crate) fn write_statements(
        &self,
        statements: &[(&str, Vec<Value>)],
    ) -> Result<Vec<usize>, StateError> {
        let changed = self.with(|c| {
            let written = Self::statements_and_commit(c, statements);
            // A failure before the commit leaves the transaction open and aborted (the
            // commit, behind the failed notice in its batch, never ran): ending it keeps
            // the connection usable. A connection that is gone ended it.
            if let Err(error) = &written
                && !matches!(error, StateError::Unavailable { .. })
            {
                let _ = c.execute_batch("ROLLBACK");
            }
            written
        })?;
        self.own_writes.fetch_add(1, Ordering::Relaxed);
        Ok(changed
            .into_iter()
            .map(|n| usize::try_from(n).unwrap_or(usize::MAX))
            .collect())
    }

    fn statements_and_commit(
        c: &PgConnection,
        statements: &[(&str, Vec<Value>)],
    ) -> Result<Vec<u64>, StateError> {
        // Prepared (once per connection) before anything of the write is sent.
        let bump = c.prepare(BUMP)?;
        let prepared = statements
            .iter()
            .map(|(sql, params)| Ok((c.prepare(sql)?, PgValue::all(params))))
            .collect::<Result<Vec<_>, StateError>>()?;
        // Each request is sent when first polled, and these are first polled in order.
        let slot: [&(dyn tokio_postgres::types::ToSql + Sync); 1] = [&c.slot];
        let (started, changed, bumped, committed) = c.answer(async {
            let runs = prepared.iter().map(|(statement, params)| async move {
                c.client.execute(statement, &PgValue::refs(params)).await
            });
            futures::join!(
                c.client.batch_execute(BEGIN),
                futures::future::join_all(runs),
                c.client.execute(&bump, &slot),
                c.client.batch_execute(COMMIT),
            )
        })?;
        started.map_err(|error| c.failed(error))?;
        let changed = changed
            .into_iter()
            .map(|changed| changed.map_err(|error| c.failed(error)))
            .collect::<Result<Vec<u64>, StateError>>()?;
        bumped.map_err(|error| c.failed(error))?;
        committed.map_err(|error| c.failed(error))?;
        Ok(changed)
    }

    /// A number that changes when another process committed: the shared counter less the
    /// commits made here.
    pub(crate) fn data_version(&self) -> Result<i64, StateError> {
        self.with(|c| self.version_on(c))
    }

    fn version_on(&self, c: &PgConnection) -> Result<i64, StateError> {
        let version = c
            .query(VERSION, &[])?
            .first()
            .and_then(|row| match row.first() {
                Some(Value::Integer(version)) => Some(*version),
                _ => None,
            })
            .ok_or_else(|| StateError::unreadable("tau_changes", "no row"))?;
        Ok(version.wrapping_sub(self.own_writes.load(Ordering::Relaxed)))
    }

    /// Waits up to `timeout` for another process's commit; true when one came since the
    /// last wait (or since the store was opened). The connection listens while it waits,
    /// so a commit wakes it at once; what decides is the change counter, so a notification
    /// read by another call in between costs at most [`CHANGE_RECHECK`].
    pub(crate) fn wait_for_change(&self, timeout: Duration) -> Result<bool, StateError> {
        let deadline = Instant::now() + timeout;
        let mut listening = false;
        let changed = loop {
            let (version, fd) = self.with(|c| {
                if !listening {
                    c.execute_batch(&format!("LISTEN {CHANGES}"))?;
                }
                let version = self.version_on(c)?;
                let fd = c.wire.borrow().fd().map_err(|e| c.unavailable(&e))?;
                Ok((version, fd))
            })?;
            listening = true;
            if self.seen.swap(version, Ordering::Relaxed) != version {
                break true;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break false;
            }
            crate::pg_wire::readable_within(fd.as_fd(), left.min(self.recheck));
        };
        // Nobody listens between waits: the server queues nothing for a connection that
        // may not read for a long time. (A connection lost meanwhile listens no more.)
        if listening {
            self.with(|c| c.execute_batch(&format!("UNLISTEN {CHANGES}")))?;
        }
        Ok(changed)
    }

    fn lock(&self) -> MutexGuard<'_, Option<PgConnection>> {
        self.connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Connects on this thread, within [`CONNECT_TIMEOUT`].
    fn open(&self) -> Result<PgConnection, StateError> {
        let (client, wire) = crate::pg_wire::connect(
            &self.config,
            self.tls.as_ref(),
            Instant::now() + CONNECT_TIMEOUT,
        )
        .map_err(|why| StateError::Unavailable {
            store: self.description.clone(),
            why,
        })?;
        let mut connection = PgConnection {
            client,
            wire: RefCell::new(wire),
            description: self.description.clone(),
            statements: RefCell::new(HashMap::new()),
            slot: 0,
            opening: Cell::new(None),
        };
        // The timeouts, and the lowest free counter slot, held until the connection closes
        // (none when every one is held; without an ORDER BY the scan stops at the first
        // lock it got): one round trip, as text.
        let answers = connection.send(connection.client.simple_query(&format!(
            "SET lock_timeout = '{LOCK_TIMEOUT}'; SET statement_timeout = '{STATEMENT_TIMEOUT}'; \
             SELECT n FROM generate_series(1, {SLOTS}) AS n \
             WHERE pg_try_advisory_lock({SLOT_LOCK}, n) LIMIT 1"
        )))?;
        connection.slot = answers
            .iter()
            .find_map(|answer| match answer {
                tokio_postgres::SimpleQueryMessage::Row(row) => row.get(0)?.parse().ok(),
                _ => None,
            })
            .unwrap_or(0);
        Ok(connection)
    }
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
                self.client.execute(&bump, &[&self.slot]),
                self.client.batch_execute(COMMIT),
            )
            .await;
            bumped?;
            committed
        })
    }

    /// Runs `request`, behind a write's start and lock when they wait: all are sent
    /// before any answer is read (one round trip), and the server runs them in order, so
    /// the request runs inside the transaction behind the lock, and fails when the start
    /// or the lock failed.
    fn send<T>(
        &self,
        request: impl Future<Output = Result<T, tokio_postgres::Error>>,
    ) -> Result<T, StateError> {
        let Some(start) = self.opening.take() else {
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
        let deadline = Instant::now() + ANSWER_TIMEOUT;
        let mut wire = self.wire.borrow_mut();
        wire.run(request, deadline).map_err(|stalled| {
            let why = match stalled {
                Stalled::Late => format!(
                    "the server did not answer within {} s",
                    ANSWER_TIMEOUT.as_secs()
                ),
                Stalled::Ended => "the connection ended".to_owned(),
            };
            StateError::Unavailable {
                store: self.description.clone(),
                why,
            }
        })
    }

    /// Whether the server closed the connection since it was last used.
    fn closed_while_idle(&self) -> bool {
        self.wire.borrow_mut().ended_while_idle() || self.client.is_closed()
    }

    /// Whether the connection is gone (or given up on): the next call opens another.
    fn closed(&self) -> bool {
        self.client.is_closed() || self.wire.borrow().ended()
    }

    fn unavailable(&self, why: &dyn std::error::Error) -> StateError {
        StateError::Unavailable {
            store: self.description.clone(),
            why: with_causes(why),
        }
    }

    /// The statement for `sql` (its `?N` written `$N`), prepared once per connection.
    fn prepare(&self, sql: &str) -> Result<Statement, StateError> {
        if let Some(statement) = self.statements.borrow().get(sql) {
            return Ok(statement.clone());
        }
        let text = crate::sql::numbered_placeholders(sql);
        let statement = self
            .answer(self.client.prepare_typed(&text, &[] as &[Type]))?
            .map_err(|error| self.failed(error))?;
        self.statements
            .borrow_mut()
            .insert(sql.to_owned(), statement.clone());
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
    fn every_write_bumps_its_own_slot_and_notifies_the_one_channel() {
        assert_eq!(BEGIN, "BEGIN", "the server's own synchronous_commit");
        assert_eq!(LOCK, format!("SELECT pg_advisory_xact_lock({WRITE_LOCK})"));
        assert!(BUMP.starts_with("INSERT INTO tau_changes (id, version) VALUES (?1, 1)"));
        assert_eq!(COMMIT, format!("NOTIFY {CHANGES}; COMMIT"));
    }
}
