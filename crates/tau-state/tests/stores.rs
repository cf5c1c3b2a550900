//! What differs between the two stores and what must not: a password in a url is never
//! shown, a cut connection fails closed (nothing is decided) and the store answers again
//! once it is back, another process's commit is seen (and wakes a waiter, also one on a
//! second connection of the same process) on both, and
//! what only a SQLite file has is refused on PostgreSQL with a typed error. A commit the
//! store answered survives a crash of the server, and a server that stops answering fails
//! calls in bounded time. The tests that need a shared PostgreSQL server run when
//! `TAU_TEST_POSTGRES_URL` names one; the crash test starts a server of its own.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use jiff::Timestamp;
use pretty_assertions::assert_eq;
use serde_json::json;
use tau_protocol::{ApprovalId, CallCard, DecidedBy, SessionId, Tier};
use tau_state::{Answered, ApprovalState, NewApproval, StateDb, StateError, StoreLocation};
use tau_test_support::Postgres;

#[path = "../src/test_stores.rs"]
mod test_stores;

const PASSWORD: &str = "hunter2-not-for-logs";

fn question(name: &str) -> tau_state::ApprovalRow {
    NewApproval {
        id: ApprovalId::parse(name).unwrap(),
        session: SessionId::parse("web-1").unwrap(),
        call_id: "t1".into(),
        tool: "lights".into(),
        tier: Tier::Physical,
        effect: "switches lights".into(),
        arguments: json!({"room": "kitchen"}),
        channel: "web".into(),
        created_at: Timestamp::now(),
        deadline: Timestamp::now() + jiff::SignedDuration::from_mins(30),
        card: CallCard::default(),
    }
    .into_row()
}

#[test]
fn a_password_in_the_url_never_appears_in_an_error() {
    // Nothing listens on port 1; a url that does not parse; a port that is not one.
    for url in [
        format!("postgres://tau:{PASSWORD}@127.0.0.1:1/tau"),
        format!("postgres://tau:{PASSWORD}@127.0.0.1:1/tau?sslmode=nonsense"),
        format!("postgres://tau:{PASSWORD}@127.0.0.1:notaport/tau"),
    ] {
        let error = StateDb::connect(&url).unwrap_err();
        let shown = format!("{error} / {error:?}");
        assert!(!shown.contains(PASSWORD), "{shown}");
        assert!(
            matches!(error, StateError::Connect { .. }),
            "a typed refusal: {shown}"
        );
        let location = format!("{:?}", StoreLocation::Postgres { url });
        assert!(!location.contains(PASSWORD), "{location}");
    }
}

#[test]
fn another_connection_s_commit_is_seen_and_wakes_a_waiter_and_ours_does_not() {
    for store in test_stores::stores() {
        let kind = store.kind;
        let ours = store.open();
        let theirs = store.open();
        let before = ours.data_version().unwrap();
        ours.approvals().create_approval(&question("ap_1")).unwrap();
        assert_eq!(
            ours.data_version().unwrap(),
            before,
            "{kind}: our own commit"
        );
        assert!(
            !ours.wait_for_change(Duration::ZERO).unwrap(),
            "{kind}: our own commit wakes nobody here"
        );
        theirs
            .approvals()
            .create_approval(&question("ap_2"))
            .unwrap();
        assert_ne!(ours.data_version().unwrap(), before, "{kind}: theirs");
        assert!(
            ours.wait_for_change(Duration::from_secs(30)).unwrap(),
            "{kind}: their commit wakes a waiter"
        );
        assert!(!ours.wait_for_change(Duration::ZERO).unwrap(), "{kind}");
        // What was committed before a store was opened is not news to its first wait.
        let later = store.open();
        assert!(!later.wait_for_change(Duration::ZERO).unwrap(), "{kind}");
    }
}

#[test]
fn a_second_connection_waits_apart_and_wakes_on_the_first_s_commit() {
    for store in test_stores::stores() {
        let kind = store.kind;
        let ours = store.open().for_hub("hub-a");
        let waiter = ours.another_connection().unwrap();
        assert_eq!(waiter.hub(), Some("hub-a"), "{kind}");
        assert_eq!(waiter.describe(), ours.describe(), "{kind}");
        assert!(
            !waiter.wait_for_change(Duration::from_millis(300)).unwrap(),
            "{kind}: nothing committed, nothing new"
        );
        let waiting = std::thread::spawn(move || waiter.wait_for_change(Duration::from_secs(30)));
        // The first connection is free while the second waits on it.
        ours.approvals().create_approval(&question("ap_1")).unwrap();
        assert!(
            waiting.join().unwrap().unwrap(),
            "{kind}: the first connection's commit wakes the second"
        );
        assert_eq!(ours.approvals().approvals(None).unwrap().len(), 1, "{kind}");
    }
}

#[test]
fn what_only_a_file_has_is_refused_on_postgres_and_the_schema_is_checked() {
    let Some(store) = test_stores::postgres() else {
        return;
    };
    let db = store.open();
    assert_eq!(db.path(), None);
    assert!(db.is_shared());
    assert!(
        db.describe().starts_with("postgres://127.0.0.1:"),
        "{}",
        db.describe()
    );
    assert_eq!(db.schema_version().unwrap(), tau_state::SCHEMA_VERSION);
    assert_eq!(db.integrity_check().unwrap(), ["ok"]);
    assert_eq!(
        db.schema_by().unwrap().as_deref(),
        Some(tau_state::TAU_VERSION)
    );
    let dir = tempfile::tempdir().unwrap();
    let refused = db.copy_to(&dir.path().join("copy.db")).unwrap_err();
    assert!(
        matches!(refused, StateError::Unsupported { .. }),
        "{refused}"
    );
    assert_eq!(
        refused.to_string(),
        format!(
            "a copy of the store through SQLite is not available on {}: use the database's own tools",
            db.describe()
        )
    );
    db.flush().unwrap();
    // A second hub on the same database finds the schema done.
    assert_eq!(
        store.open().schema_version().unwrap(),
        tau_state::SCHEMA_VERSION
    );
}

#[test]
fn a_cut_connection_decides_nothing_and_the_store_answers_once_it_is_back() {
    let Some(store) = test_stores::postgres() else {
        return;
    };
    let url = store.url().unwrap().to_owned();
    let proxy = Proxy::start(&url);
    let hub = StateDb::connect(&proxy.url).unwrap();
    let approvals = hub.approvals();
    let id = ApprovalId::parse("ap_1").unwrap();
    approvals.create_approval(&question("ap_1")).unwrap();

    proxy.cut();
    let by = DecidedBy::person("web");
    let refused = approvals.decide_approval(&id, ApprovalState::Approved, &by, Timestamp::now());
    assert!(
        matches!(refused, Err(StateError::Unavailable { .. })),
        "{refused:?}"
    );
    let again = approvals.decide_approval(&id, ApprovalState::Approved, &by, Timestamp::now());
    assert!(
        matches!(again, Err(StateError::Unavailable { .. })),
        "still cut: {again:?}"
    );
    let stored = store.open().approvals().approval(&id).unwrap().unwrap();
    assert_eq!(stored.state, ApprovalState::Pending, "nothing was approved");

    proxy.restore();
    let answered = approvals
        .decide_approval(&id, ApprovalState::Approved, &by, Timestamp::now())
        .unwrap();
    assert!(matches!(answered, Answered::Decided(_)), "{answered:?}");
    assert_eq!(
        store
            .open()
            .approvals()
            .approval(&id)
            .unwrap()
            .unwrap()
            .state,
        ApprovalState::Approved
    );
}

#[test]
fn a_store_is_reached_over_a_unix_socket_and_tls_asked_of_a_server_without_it_is_refused() {
    let server = Postgres::start().unwrap();
    let tcp = server.fresh_database().unwrap();
    let database = tcp.rsplit('/').next().unwrap();
    // The socket's folder as the url's host, percent-encoded as libpq reads it.
    let dir = server
        .socket_dir()
        .display()
        .to_string()
        .replace('/', "%2F");
    let url = format!("postgres://postgres@{dir}:{}/{database}", server.port());
    let over_socket = StateDb::connect(&url).unwrap();
    over_socket
        .approvals()
        .create_approval(&question("ap_1"))
        .unwrap();
    let over_tcp = StateDb::connect(&tcp).unwrap();
    let id = ApprovalId::parse("ap_1").unwrap();
    assert!(over_tcp.approvals().approval(&id).unwrap().is_some());

    // A url that requires TLS of a server that has none is refused at once, saying so,
    // and never falls back to plain text.
    let refused = StateDb::connect(&format!("{tcp}?sslmode=require"))
        .err()
        .unwrap();
    assert!(matches!(refused, StateError::Connect { .. }), "{refused:?}");
    assert!(refused.to_string().contains("TLS"), "{refused}");
}

#[test]
fn tls_is_spoken_when_the_url_asks_and_only_to_the_server_its_roots_and_name_vouch_for() {
    let server = Postgres::start().unwrap();
    let authority = server.enable_tls().unwrap();
    let url = server.fresh_database().unwrap();
    let database = url.rsplit('/').next().unwrap().to_owned();
    let encrypted = || {
        server
            .sql(&format!(
                "SELECT count(*) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) \
                 WHERE a.datname = '{database}' AND s.ssl"
            ))
            .unwrap()
            .trim()
            .to_owned()
    };
    let roots = format!("sslrootcert={}", authority.display());
    {
        let hub = StateDb::connect(&format!("{url}?sslmode=verify-full&{roots}")).unwrap();
        hub.approvals().create_approval(&question("ap_1")).unwrap();
        let id = ApprovalId::parse("ap_1").unwrap();
        assert!(hub.approvals().approval(&id).unwrap().is_some());
        assert_eq!(encrypted(), "1", "the hub's connection is encrypted");
    }
    // Not asked for: plain, as before, though the server could.
    let plain = StateDb::connect(&format!("{url}?sslmode=prefer")).unwrap();
    plain.data_version().unwrap();
    assert_eq!(encrypted(), "0");
    drop(plain);
    // A server the system's roots do not vouch for, and a name its certificate does not
    // carry: refused before a word of the store is spoken.
    let unknown = StateDb::connect(&format!("{url}?sslmode=require"))
        .err()
        .unwrap();
    assert!(matches!(unknown, StateError::Connect { .. }), "{unknown:?}");
    assert!(unknown.to_string().contains("certificate"), "{unknown}");
    let port = server.port();
    let elsewhere = format!(
        "postgres://postgres@db.example:{port}/{database}?hostaddr=127.0.0.1&sslmode=require&{roots}"
    );
    let misnamed = StateDb::connect(&elsewhere).err().unwrap();
    assert!(
        matches!(misnamed, StateError::Connect { .. }),
        "{misnamed:?}"
    );
    assert!(misnamed.to_string().contains("certificate"), "{misnamed}");
    // Roots that cannot be read are said when the store is opened.
    let missing = StateDb::connect(&format!(
        "{url}?sslmode=require&sslrootcert=/nonexistent.pem"
    ))
    .err()
    .unwrap();
    assert!(
        missing.to_string().contains("/nonexistent.pem"),
        "{missing}"
    );
}

#[test]
fn a_commit_the_store_answered_survives_a_crash_of_the_server() {
    let mut server = Postgres::start().unwrap();
    // The server's log writer waits 10 s between rounds (its longest): a commit answered
    // before its log was written would be lost by the crash below, every time.
    server
        .sql("ALTER SYSTEM SET wal_writer_delay = '10s'")
        .unwrap();
    server.sql("SELECT pg_reload_conf()").unwrap();
    let url = server.fresh_database().unwrap();
    let hub = StateDb::connect(&url).unwrap();
    // A stored question (a write that must survive a power cut), then ordinary writes:
    // a conversation made and its first message.
    hub.approvals().create_approval(&question("ap_1")).unwrap();
    let session = SessionId::parse("web-1").unwrap();
    let sessions = hub.sessions();
    assert!(sessions.ensure_session(&session).unwrap());
    sessions
        .append_message(&session, 0, r#"{"role":"user","content":[]}"#)
        .unwrap();

    server.stop().unwrap();
    server.start_again().unwrap();
    let id = ApprovalId::parse("ap_1").unwrap();
    assert!(hub.approvals().approval(&id).unwrap().is_some());
    assert!(
        sessions.session_exists(&session).unwrap(),
        "the conversation the store said it made"
    );
    assert_eq!(sessions.message_count(&session).unwrap(), 1);
}

#[test]
fn a_server_that_stops_answering_fails_calls_in_bounded_time_and_answers_once_back() {
    let Some(store) = test_stores::postgres() else {
        return;
    };
    let proxy = Proxy::start(store.url().unwrap());
    let hub = StateDb::connect(&proxy.url).unwrap();
    let approvals = hub.approvals();
    let id = ApprovalId::parse("ap_1").unwrap();
    approvals.create_approval(&question("ap_1")).unwrap();

    proxy.freeze();
    let by = DecidedBy::person("web");
    // On the open connection: no answer (the server's 8 s cap on a statement never
    // arrives either), so the call gives up after 10 s.
    let started = Instant::now();
    let refused = approvals.decide_approval(&id, ApprovalState::Approved, &by, Timestamp::now());
    let waited = started.elapsed();
    assert!(
        matches!(refused, Err(StateError::Unavailable { .. })),
        "{refused:?}"
    );
    assert!(waited < Duration::from_secs(15), "{waited:?}");
    // A new connection: the socket opens, the server's greeting never comes (5 s).
    let started = Instant::now();
    let again = approvals.approval(&id);
    let waited = started.elapsed();
    assert!(
        matches!(again, Err(StateError::Unavailable { .. })),
        "{again:?}"
    );
    assert!(waited < Duration::from_secs(10), "{waited:?}");

    proxy.restore();
    let stored = approvals.approval(&id).unwrap().unwrap();
    assert_eq!(stored.state, ApprovalState::Pending, "nothing was approved");
    let answered = approvals
        .decide_approval(&id, ApprovalState::Approved, &by, Timestamp::now())
        .unwrap();
    assert!(matches!(answered, Answered::Decided(_)), "{answered:?}");
}

/// A TCP relay between the store and the server that can be cut (every open connection
/// shut, new ones dropped at once), frozen (every connection, open or new, kept open and
/// nothing forwarded, as a hung server or a network that drops everything would) and
/// restored.
struct Proxy {
    url: String,
    cut: Arc<AtomicBool>,
    frozen: Arc<AtomicBool>,
    open: Arc<Mutex<Vec<TcpStream>>>,
}

impl Proxy {
    fn start(url: &str) -> Self {
        let config: tokio_postgres::Config = url.parse().unwrap();
        let host = match &config.get_hosts()[0] {
            tokio_postgres::config::Host::Tcp(host) => host.clone(),
            other => panic!("the test needs a TCP server, not {other:?}"),
        };
        let port = config.get_ports().first().copied().unwrap_or(5432);
        let upstream = format!("{host}:{port}");
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let relay = listener.local_addr().unwrap().to_string();
        let cut = Arc::new(AtomicBool::new(false));
        let frozen = Arc::new(AtomicBool::new(false));
        let open = Arc::new(Mutex::new(Vec::new()));
        {
            let (cut, frozen, open) = (Arc::clone(&cut), Arc::clone(&frozen), Arc::clone(&open));
            let upstream = upstream.clone();
            std::thread::spawn(move || {
                for client in listener.incoming() {
                    let Ok(client) = client else { continue };
                    if cut.load(Ordering::SeqCst) {
                        let _ = client.shutdown(Shutdown::Both);
                        continue;
                    }
                    let mut open = open.lock().unwrap();
                    if frozen.load(Ordering::SeqCst) {
                        open.push(client);
                        continue;
                    }
                    let server = TcpStream::connect(&upstream).unwrap();
                    open.push(client.try_clone().unwrap());
                    open.push(server.try_clone().unwrap());
                    let forwards = Arc::clone(&frozen);
                    pipe(
                        client.try_clone().unwrap(),
                        server.try_clone().unwrap(),
                        forwards,
                    );
                    pipe(server, client, Arc::clone(&frozen));
                }
            });
        }
        Self {
            url: url.replacen(&upstream, &relay, 1),
            cut,
            frozen,
            open,
        }
    }

    fn freeze(&self) {
        self.frozen.store(true, Ordering::SeqCst);
    }

    fn cut(&self) {
        self.cut.store(true, Ordering::SeqCst);
        for stream in self.open.lock().unwrap().drain(..) {
            let _ = stream.shutdown(Shutdown::Both);
        }
    }

    fn restore(&self) {
        self.cut.store(false, Ordering::SeqCst);
        self.frozen.store(false, Ordering::SeqCst);
    }
}

/// Copies `from` to `to` until either ends; while `frozen`, what arrives is dropped.
fn pipe(mut from: TcpStream, mut to: TcpStream, frozen: Arc<AtomicBool>) {
    std::thread::spawn(move || {
        let mut buffer = [0u8; 8192];
        loop {
            match from.read(&mut buffer) {
                Ok(0) | Err(_) => break,
                Ok(_) if frozen.load(Ordering::SeqCst) => {}
                Ok(n) => {
                    if to.write_all(&buffer[..n]).is_err() {
                        break;
                    }
                }
            }
        }
        let _ = to.shutdown(Shutdown::Both);
    });
}
