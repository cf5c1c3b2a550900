//! TauBar's caps on connections without the token, against the real `tau serve` started
//! at the usual open-files limit (through `prlimit`): a flood from many loopback
//! addresses counts as one peer and costs its own oldest connections, never the person's
//! request nor a connection that proved itself with the token or the page's cookie; the
//! descriptors it cannot take stay tau's, so an approved command still runs; and `tau
//! serve` raises its open-files limit to the hard limit.

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use common::hostile::{Flood, KINDS, Kind, Surge};
use common::serve::open_files;
use common::{Tau, answer};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// The usual open-files limit, soft and hard alike, so `tau serve` cannot raise it: the
/// caps are then the smallest they get in practice.
const USUAL: (u64, u64) = (1024, 1024);
/// What the caps are at [`USUAL`] (half the descriptors for connections, half of those
/// for unproven ones, half of those for one peer), as `tau serve` logs them.
const CAPS_AT_USUAL: [(&str, u64); 4] = [
    ("open_files", 1024),
    ("connections", 512),
    ("unproven", 256),
    ("unproven_per_peer", 128),
];
/// The server's deadline for a request head (`tau-web`), after which it closes an idle
/// connection anyway; a connection closed well before it was closed by a cap.
const HEAD_DEADLINE: Duration = Duration::from_secs(10);
/// Only the web listener's and `tau serve`'s start-up lines at debug.
const DEBUG_START: (&str, &str) = ("TAU_LOG", "info,tau::serve=debug,tau_web::server=debug");

/// `key=value` pairs of the first log line that says `what`.
fn logged(tau: &Tau, what: &str) -> Vec<(String, String)> {
    let log = tau.log();
    let line = log
        .lines()
        .find(|l| l.contains(what))
        .unwrap_or_else(|| panic!("the log does not say {what:?}:\n{log}"));
    line.split_whitespace()
        .filter_map(|word| word.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

fn the_caps_are_the_usual_ones(tau: &Tau) {
    let said = logged(tau, "web connections capped");
    for (key, value) in CAPS_AT_USUAL {
        assert!(
            said.contains(&(key.to_owned(), value.to_string())),
            "{key}={value} in {said:?}"
        );
    }
}

/// A connection kept alive as a browser keeps one: requests one after another on it.
struct KeptAlive {
    reader: BufReader<TcpStream>,
    host: String,
}

impl KeptAlive {
    fn open(addr: SocketAddr) -> Self {
        let stream = TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        Self {
            reader: BufReader::new(stream),
            host: addr.to_string(),
        }
    }

    /// Sends a request with these extra headers and reads its answer (status, body);
    /// `None` when the server closed the connection instead.
    fn send(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> Option<(u16, String)> {
        let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {}\r\n", self.host);
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        if method != "GET" {
            head.push_str(&format!(
                "Origin: http://{}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
                self.host,
                body.len()
            ));
        }
        head.push_str("\r\n");
        head.push_str(body);
        self.reader.get_mut().write_all(head.as_bytes()).ok()?;
        let mut status_line = String::new();
        if self.reader.read_line(&mut status_line).ok()? == 0 {
            return None;
        }
        let status = status_line.split(' ').nth(1)?.parse().ok()?;
        let mut length = 0;
        loop {
            let mut line = String::new();
            if self.reader.read_line(&mut line).ok()? == 0 {
                return None;
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(": ")
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.parse().ok()?;
            }
        }
        let mut body = vec![0; length];
        self.reader.read_exact(&mut body).ok()?;
        Some((status, String::from_utf8_lossy(&body).into_owned()))
    }

    /// [`KeptAlive::send`] that must be answered.
    fn must(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> (u16, String) {
        self.send(method, path, headers, body)
            .unwrap_or_else(|| panic!("the person's connection was closed ({method} {path})"))
    }
}

/// Polls `check` on the person's kept-alive connection (which also keeps it from idling
/// past the head deadline) until it gives a value.
fn until<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let started = Instant::now();
    loop {
        if let Some(value) = check() {
            return value;
        }
        assert!(
            started.elapsed() < Duration::from_secs(90),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn a_flood_from_many_loopback_addresses_at_the_cap_lets_the_token_through_and_loses_its_oldest() {
    let tau = Tau::new();
    let serve = tau.serve_with_open_files(
        &tau.replay(&json!([answer("unused")])),
        &tau.serve_config(""),
        &[DEBUG_START],
        USUAL,
    );
    the_caps_are_the_usual_ones(&tau);
    // As many idle connections as loopback may hold unproven, from 20 addresses in turn:
    // each address is far under any share of its own.
    let flood = Flood::open(serve.addr, &[Kind::Idle], 128, 20, "none");
    // One more connection, the person's, with the token: it is answered, and the flood's
    // oldest connection made room for it.
    let reply = serve.get("/api/sessions");
    assert_eq!(reply.status, 200, "{reply:?}");
    let closed = until("the flood's oldest connection closed", || {
        let closed = flood.closed_after();
        closed[0].map(|_| closed)
    });
    assert!(
        closed[0].unwrap() < HEAD_DEADLINE / 2,
        "the oldest was closed by the head deadline ({:?}), not to make room",
        closed[0]
    );
    let early: Vec<usize> = (1..closed.len())
        .filter(|&i| {
            closed[i].is_some_and(|after| after < HEAD_DEADLINE - Duration::from_millis(500))
        })
        .collect();
    assert!(early.is_empty(), "more than the oldest went: {early:?}");
    serve.kill_hard();
}

#[test]
fn a_proven_connection_survives_any_flood_and_an_approved_command_still_runs() {
    let tau = Tau::new();
    let serve = tau.serve_with_open_files(
        &tau.make_proof(),
        &tau.serve_config(
            "[[routines]]\nname = \"doorbell\"\nwebhook = { secret_env = \"TAU_TEST_DOORBELL\" }\ntool = \"append_note\"\narguments = { text = \"ding\" }\n",
        ),
        &[DEBUG_START, ("TAU_TEST_DOORBELL", "a-doorbell-secret-long-enough")],
        USUAL,
    );
    the_caps_are_the_usual_ones(&tau);
    let bearer = format!("Bearer {}", serve.token);
    let token = [("Authorization", bearer.as_str())];
    let mut person = KeptAlive::open(serve.addr);
    let (status, body) = person.must("POST", "/api/sessions", &token, "");
    assert_eq!(status, 201, "{body}");
    let session = serde_json::from_str::<Value>(&body).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (status, _) = person.must(
        "POST",
        &format!("/api/sessions/{session}/messages"),
        &token,
        r#"{"text":"make a file"}"#,
    );
    assert_eq!(status, 202);
    let (id, card) = until("the question", || {
        let (_, body) = person.must("GET", "/api/approvals?state=pending", &token, "");
        let rows: Value = serde_json::from_str(&body).unwrap();
        let row = rows.as_array()?.first()?;
        Some((
            row["id"].as_str()?.to_owned(),
            row["card_sha256"].as_str()?.to_owned(),
        ))
    });

    // 63 idle connections from each of 20 loopback addresses, each opened again when
    // the server closes it; new ones from 127.0.0.1 as fast as they open; and every
    // other kind (half heads, heads a byte at a time, webhook bodies that stall).
    let surge = Surge::start(serve.addr, 20, 63, 1000, 100_000);
    let kinds = Flood::open(serve.addr, &KINDS, 50, 20, "doorbell");
    until("the flood past every cap", || {
        person.must("GET", "/api/sessions", &token, "");
        (surge.opened() > 4000 && surge.closed_by_server() > 2000).then_some(())
    });
    let (status, body) = person.must(
        "POST",
        &format!("/api/approvals/{id}"),
        &token,
        &format!(r#"{{"decision":"approve","card_sha256":"{card}"}}"#),
    );
    assert_eq!(status, 200, "{body}");
    let messages = until("the answer", || {
        let (_, body) = person.must(
            "GET",
            &format!("/api/sessions/{session}/messages"),
            &token,
            "",
        );
        let messages: Value = serde_json::from_str(&body).unwrap();
        let last = messages.as_array()?.last()?.clone();
        (last["role"] == "assistant" && last["content"][0]["text"] == "Done.").then_some(messages)
    });
    assert_eq!(tau.proof().as_deref(), Some("made\n"), "{messages:#}");
    let ran: Vec<Value> = tau
        .audit()
        .into_iter()
        .filter(|l| l["type"] == "tool_call")
        .collect();
    assert_eq!(ran.len(), 1, "{ran:#?}");
    assert_eq!(ran[0]["status"], "success", "{ran:#?}");
    drop(kinds);
    drop(surge);
    let log = tau.log();
    assert!(
        !log.contains("Too many open files"),
        "tau ran out of descriptors:\n{}",
        log.lines()
            .filter(|l| l.contains("open files"))
            .take(5)
            .collect::<Vec<_>>()
            .join("\n")
    );
    serve.kill_hard();
}

#[test]
fn a_flood_from_the_browsers_own_address_cannot_close_the_browsers_proven_connection() {
    let tau = Tau::new();
    let serve = tau.serve_with_open_files(
        &tau.replay(&json!([answer("unused")])),
        &tau.serve_config(""),
        &[DEBUG_START],
        USUAL,
    );
    the_caps_are_the_usual_ones(&tau);
    // The page's cookie, as the browser got it for the token.
    let login = serve.post("/api/login", "");
    assert_eq!(login.status, 204, "{login:?}");
    let cookie = login
        .header("set-cookie")
        .and_then(|c| c.split(';').next())
        .unwrap()
        .to_owned();
    let with_cookie = [("Cookie", cookie.as_str())];
    // The browser loads the page on a connection it keeps: the cookie proves it.
    let mut browser = KeptAlive::open(serve.addr);
    let (status, page) = browser.must("GET", "/", &with_cookie, "");
    assert_eq!(status, 200);
    assert!(page.contains("<html"), "{page}");
    // From the same address, three times what loopback may hold unproven.
    let flood = Flood::open(serve.addr, &[Kind::Idle], 3 * 128, 1, "none");
    until("the flood cut to its share", || {
        (flood.open_now() <= 128).then_some(())
    });
    let (status, body) = browser.must("GET", "/api/sessions", &with_cookie, "");
    assert_eq!(status, 200, "{body}");
    let (status, _) = browser.must("GET", "/app.js", &with_cookie, "");
    assert_eq!(status, 200);
    drop(flood);
    serve.kill_hard();
}

#[test]
fn tau_serve_raises_its_open_files_limit_to_the_hard_limit() {
    let (_, hard) = open_files("self");
    let hard = hard.min(1 << 20);
    let soft = 1024.min(hard / 2);
    let tau = Tau::new();
    let serve = tau.serve_with_open_files(
        &tau.replay(&json!([answer("unused")])),
        &tau.serve_config(""),
        &[DEBUG_START],
        (soft, hard),
    );
    assert_eq!(
        open_files(&serve.child.id().to_string()),
        (hard, hard),
        "tau serve started at {soft} / {hard}"
    );
    let said = logged(&tau, "open files limit raised");
    assert!(
        said.contains(&("from".to_owned(), soft.to_string())),
        "{said:?}"
    );
    assert!(
        said.contains(&("to".to_owned(), hard.to_string())),
        "{said:?}"
    );
    // The caps follow the raised limit.
    let caps = logged(&tau, "web connections capped");
    assert!(
        caps.contains(&("open_files".to_owned(), hard.to_string())),
        "{caps:?}"
    );
    serve.kill_hard();
}
