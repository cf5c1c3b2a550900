//! TauBar's listener under attack by someone on the same machine without the token:
//! floods of idle, half-sent, trickling and stalled connections, webhook calls without the
//! secret that announce a large body, stalled bodies. The person's requests keep being
//! answered, every hostile connection is closed, and no body is waited for without the
//! token or the secret. The bounds are generous (a loaded machine) yet far below what the
//! listener did without these defences (9-10 s per request, stalled bodies never cut).

use crate::common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use common::hostile::{Flood, KINDS, Kind};
use common::serve::{Serve, request};
use common::{Tau, answer};
use pretty_assertions::assert_eq;
use serde_json::json;

const SECRET: &str = "a-doorbell-secret-long-enough";

/// The longest a request of the person may take while a flood is open. Without the
/// defences each waited 9-10 s, or forever behind stalled webhook bodies.
const PERSON_WAITS_AT_MOST: Duration = Duration::from_secs(5);
/// A hostile connection is closed within the head or request deadline (10 s); this bound
/// leaves room for a slow machine. Without the defences stalled bodies stayed open.
const CLOSED_WITHIN: Duration = Duration::from_secs(30);

fn hub(tau: &Tau) -> Serve {
    let config = tau.serve_config(
        "[[routines]]\nname = \"doorbell\"\nwebhook = { secret_env = \"TAU_TEST_DOORBELL\" }\ntool = \"append_note\"\narguments = { text = \"ding\" }\n",
    );
    tau.serve_env(
        &tau.replay(&json!([answer("hi"), answer("hi again")])),
        &config,
        &[("TAU_TEST_DOORBELL", SECRET)],
    )
}

/// Sends `bytes` on a new connection and keeps it open.
fn send_raw(addr: SocketAddr, bytes: &[u8]) -> TcpStream {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.write_all(bytes).unwrap();
    stream
}

/// The status the server answers on `stream` and when, or `None` when it closed the
/// connection without one; waits up to `limit`.
fn answer_of(mut stream: TcpStream, limit: Duration) -> (Option<u16>, Duration) {
    let started = Instant::now();
    stream.set_read_timeout(Some(limit)).unwrap();
    let mut raw = Vec::new();
    let mut buffer = [0u8; 1024];
    loop {
        match stream.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(read) => {
                raw.extend_from_slice(&buffer[..read]);
                if raw.windows(4).any(|w| w == b"\r\n\r\n") {
                    break;
                }
            }
        }
    }
    let text = String::from_utf8_lossy(&raw).into_owned();
    let status = text
        .strip_prefix("HTTP/1.1 ")
        .and_then(|rest| rest.get(..3))
        .and_then(|code| code.parse().ok());
    (status, started.elapsed())
}

/// Waits until the server closes `stream` (or `limit` passes); how long that took.
fn closed_after(mut stream: TcpStream, limit: Duration) -> Duration {
    let started = Instant::now();
    stream.set_read_timeout(Some(limit)).unwrap();
    let mut buffer = [0u8; 4096];
    loop {
        match stream.read(&mut buffer) {
            Ok(0) | Err(_) => return started.elapsed(),
            Ok(_) => {}
        }
    }
}

/// The person's requests while a flood is open (the list, a new chat, a message and its
/// answer, the webhook with its secret); the slowest of them.
fn the_person_is_answered(serve: &Serve) -> Duration {
    let mut slowest = Duration::ZERO;
    let mut timed = |what: &str, call: &mut dyn FnMut() -> u16, expected: u16| {
        let started = Instant::now();
        let status = call();
        let took = started.elapsed();
        assert_eq!(status, expected, "{what}");
        slowest = slowest.max(took);
    };
    for _ in 0..5 {
        timed("the list", &mut || serve.get("/api/sessions").status, 200);
    }
    let mut session = String::new();
    timed(
        "a new chat",
        &mut || {
            let reply = serve.post("/api/sessions", "");
            session = reply.json()["id"].as_str().unwrap_or_default().to_owned();
            reply.status
        },
        201,
    );
    let path = format!("/api/sessions/{session}/messages");
    timed(
        "a message",
        &mut || serve.post(&path, r#"{"text":"hello"}"#).status,
        202,
    );
    serve.until_answered(&session, "hi");
    let bearer = format!("Bearer {SECRET}");
    let host = serve.host();
    timed(
        "the webhook with its secret",
        &mut || {
            request(
                serve.addr,
                "POST",
                "/hooks/doorbell",
                &[("Host", &host), ("Authorization", &bearer)],
                Some(""),
            )
            .status
        },
        202,
    );
    slowest
}

/// Every hostile connection was closed in time, and none got an answer but a refusal.
fn all_closed(fates: &[common::hostile::Fate], per_kind: usize) {
    for fate in fates {
        assert_eq!(fate.opened, per_kind, "{fate:?}");
        assert_eq!(fate.closed, fate.opened, "every one is closed: {fate:?}");
        assert!(fate.longest < CLOSED_WITHIN, "{fate:?}");
        let answered: Vec<u16> = fate.statuses.iter().map(|(s, _)| *s).collect();
        let allowed: &[u16] = match fate.kind {
            // Refused from its head alone, its body never waited for.
            Kind::StalledHook => &[401],
            // Cut before a whole head was read: no answer, or one saying so.
            Kind::Idle | Kind::HalfHead | Kind::Trickle => &[400, 408],
        };
        assert!(
            answered.iter().all(|s| allowed.contains(s)),
            "{:?} answered {answered:?}",
            fate.kind
        );
    }
}

fn doorbell_runs(tau: &Tau) -> usize {
    tau.audit()
        .into_iter()
        .filter(|l| l["type"] == "routine_run" && l["routine"] == "doorbell")
        .count()
}

#[test]
fn three_hundred_idle_half_sent_and_trickling_connections_hold_up_nobody() {
    let tau = Tau::new();
    let serve = hub(&tau);
    let kinds = [Kind::Idle, Kind::HalfHead, Kind::Trickle];
    let flood = Flood::open(serve.addr, &kinds, 100, 1, "doorbell");
    let slowest = the_person_is_answered(&serve);
    assert!(
        slowest < PERSON_WAITS_AT_MOST,
        "the person waited {slowest:?} for one request"
    );
    all_closed(&flood.wait_closed(CLOSED_WITHIN), 100);
    assert_eq!(doorbell_runs(&tau), 1, "the one call with the secret ran");
    serve.kill_hard();
}

#[test]
fn a_thousand_hostile_connections_hold_up_neither_the_person_nor_a_webhook() {
    let tau = Tau::new();
    let serve = hub(&tau);
    // From 16 loopback addresses, one peer: at this machine's open-files limit (raised to
    // the hard limit) its share holds them all until their deadline. How the share is cut
    // at the usual limit is `serve_flood_caps.rs`'s.
    let flood = Flood::open(serve.addr, &KINDS, 250, 16, "doorbell");
    let held = flood.open_now();
    let slowest = the_person_is_answered(&serve);
    assert!(
        slowest < PERSON_WAITS_AT_MOST,
        "the person waited {slowest:?} for one request"
    );
    assert!(held > 700, "the flood was open: {held} connections");
    all_closed(&flood.wait_closed(CLOSED_WITHIN), 250);
    assert_eq!(doorbell_runs(&tau), 1, "the one call with the secret ran");
    serve.kill_hard();
}

#[test]
fn no_body_is_waited_for_without_the_secret_and_a_stalled_one_is_cut() {
    let tau = Tau::new();
    let serve = hub(&tau);
    let host = serve.host();
    let stalled = |authorization: &str, path: &str| {
        send_raw(
            serve.addr,
            format!(
                "POST {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: {authorization}\r\nOrigin: http://{host}\r\nContent-Type: application/json\r\nContent-Length: 60000\r\n\r\nri"
            )
            .as_bytes(),
        )
    };
    // Without the secret: refused from the head, before the body.
    for wrong in ["Bearer not-the-secret-at-all", "Bearer "] {
        let (status, took) = answer_of(stalled(wrong, "/hooks/doorbell"), CLOSED_WITHIN);
        assert_eq!(status, Some(401), "{wrong}");
        assert!(
            took < PERSON_WAITS_AT_MOST,
            "{wrong}: answered after {took:?}"
        );
    }
    // Without the token: the API refuses from the head too.
    let (status, took) = answer_of(
        stalled(
            "Bearer 0000",
            &format!("/api/sessions/{}/messages", "web-x"),
        ),
        CLOSED_WITHIN,
    );
    assert_eq!(status, Some(401));
    assert!(took < PERSON_WAITS_AT_MOST, "answered after {took:?}");

    // With the secret or the token, a body that stalls is cut within the deadline.
    let session = serve.new_session();
    let with_secret = stalled(&format!("Bearer {SECRET}"), "/hooks/doorbell");
    let with_token = stalled(
        &format!("Bearer {}", serve.token),
        &format!("/api/sessions/{session}/messages"),
    );
    for (what, stream) in [("webhook", with_secret), ("message", with_token)] {
        let (status, took) = answer_of(stream, CLOSED_WITHIN);
        assert_eq!(status, Some(408), "{what}");
        assert!(took < CLOSED_WITHIN, "{what}: cut after {took:?}");
    }
    assert!(
        !tau.audit()
            .iter()
            .any(|l| l["type"] == "routine_run" || l["type"] == "turn_end"),
        "nothing ran on a cut request"
    );

    // A kept-alive connection that asks nothing more is closed too.
    let mut kept = send_raw(
        serve.addr,
        format!(
            "GET /api/sessions HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {}\r\n\r\n",
            serve.token
        )
        .as_bytes(),
    );
    let mut first = [0u8; 12];
    kept.read_exact(&mut first).unwrap();
    assert_eq!(&first, b"HTTP/1.1 200");
    let idle = closed_after(kept, CLOSED_WITHIN);
    assert!(idle < CLOSED_WITHIN, "an idle keep-alive stayed {idle:?}");
    serve.kill_hard();
}

#[test]
fn new_chats_in_a_burst_are_each_new_with_128_random_bits() {
    let tau = Tau::new();
    let serve = hub(&tau);
    let (addr, host, origin) = (serve.addr, serve.host(), serve.origin());
    let bearer = format!("Bearer {}", serve.token);
    // Four clients press "New chat" at once, within the same seconds: ids that were the
    // second plus 24 random bits, read back after an ignored insert, could return a
    // conversation that already existed.
    let ids: Vec<String> = std::thread::scope(|scope| {
        let clients: Vec<_> = (0..4)
            .map(|_| {
                scope.spawn(|| {
                    let headers = [
                        ("Host", host.as_str()),
                        ("Authorization", bearer.as_str()),
                        ("Origin", origin.as_str()),
                    ];
                    (0..100)
                        .map(|_| {
                            let reply = request(addr, "POST", "/api/sessions", &headers, Some(""));
                            assert_eq!(reply.status, 201, "{reply:?}");
                            reply.json()["id"].as_str().unwrap().to_owned()
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        clients
            .into_iter()
            .flat_map(|client| client.join().unwrap())
            .collect()
    });
    let distinct: std::collections::BTreeSet<&str> = ids.iter().map(String::as_str).collect();
    assert_eq!(distinct.len(), 400, "a new chat returned one made before");
    for id in &ids {
        let random = id.rsplit('-').next().unwrap();
        assert!(
            id.starts_with("web-")
                && random.len() == 32
                && random.bytes().all(|b| b.is_ascii_hexdigit()),
            "not 128 random bits: {id}"
        );
    }
    let listed = serve.get("/api/sessions").json();
    assert_eq!(listed.as_array().unwrap().len(), 400);
    serve.kill_hard();
}
