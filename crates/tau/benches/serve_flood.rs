//! The person's requests to TauBar while a local flood without the token is open, at the
//! usual open-files limit of 1,024: the real `tau serve` started under `prlimit` (soft
//! limit 1,024; the hard limit this machine's, then 1,024 too), 63 idle connections from
//! each of 20 loopback addresses (127.0.0.1 to 127.0.0.20; each one the server closes is
//! opened again) and, from 127.0.0.1 (the browser's address), new idle connections one
//! after another as fast as one thread opens them. The person's requests carry the token,
//! each on a new connection from 127.0.0.1 (`GET /api/sessions`, every tenth a new chat).
//! Prints p50, p99 and the worst latency (and of it the connect alone: once the flood has
//! left most ports of 127.0.0.1 waiting out `TIME_WAIT`, the kernel's search for a free one
//! shows there), how many requests got no answer, and the most descriptors `tau serve`
//! held, with and without the flood.
//!
//! ```sh
//! cargo bench -p tau --bench serve_flood                   # 3 rounds of 100 requests
//! cargo bench -p tau --bench serve_flood -- --rounds 1 --requests 50
//! cargo bench -p tau --bench serve_flood -- --hard 1024    # only that hard limit
//! cargo bench -p tau --bench serve_flood -- --churn-holds 0  # no flood from 127.0.0.1
//! ```
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::print_stdout,
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]

#[path = "../tests/e2e/common/mod.rs"]
mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::hostile::Surge;
use common::serve::{Serve, open_files};
use common::{Tau, answer};
use serde_json::json;

/// Idle connections held from each loopback address, and how many addresses.
const PER_SOURCE: usize = 63;
const SOURCES: u8 = 20;
/// Connections the 127.0.0.1 flood keeps open on its side.
const CHURN_HOLDS: usize = 1000;
/// What one round of the person's requests may take at most, whatever they wait.
const ROUND_BUDGET: Duration = Duration::from_secs(60);
/// How long one request of the person may wait for its answer.
const REQUEST_WAIT: Duration = Duration::from_secs(20);

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

/// One request of the person on a new connection; its status and how long the connect
/// took, or why it got none.
fn ask(serve: &Serve, new_chat: bool) -> Result<(u16, Duration), String> {
    let began = Instant::now();
    let mut stream = TcpStream::connect(serve.addr).map_err(|e| format!("connect: {e}"))?;
    let connected = began.elapsed();
    stream.set_read_timeout(Some(REQUEST_WAIT)).unwrap();
    let (method, path) = if new_chat {
        ("POST", "/api/sessions")
    } else {
        ("GET", "/api/sessions")
    };
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\nConnection: close\r\n",
        serve.host(),
        serve.token
    );
    if new_chat {
        head.push_str(&format!(
            "Origin: {}\r\nContent-Length: 0\r\n",
            serve.origin()
        ));
    }
    head.push_str("\r\n");
    stream
        .write_all(head.as_bytes())
        .map_err(|e| format!("write: {e}"))?;
    let mut raw = Vec::new();
    stream
        .read_to_end(&mut raw)
        .map_err(|e| format!("read: {e}"))?;
    let text = String::from_utf8_lossy(&raw);
    text.strip_prefix("HTTP/1.1 ")
        .and_then(|rest| rest.get(..3))
        .and_then(|code| code.parse().ok())
        .map(|status| (status, connected))
        .ok_or_else(|| "closed without an answer".to_owned())
}

/// Descriptors `pid` holds now.
fn descriptors(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, Iterator::count)
}

#[derive(Default)]
struct Figures {
    latencies: Vec<f64>,
    /// Of each, the connect alone.
    connects: Vec<f64>,
    unanswered: usize,
    errors: Vec<String>,
    most_descriptors: usize,
}

/// Up to `requests` of the person's requests within [`ROUND_BUDGET`].
fn person(serve: &Serve, requests: usize, figures: &mut Figures) {
    let started = Instant::now();
    for i in 0..requests {
        if started.elapsed() > ROUND_BUDGET {
            break;
        }
        let began = Instant::now();
        match ask(serve, i % 10 == 0) {
            Ok((200 | 201, connected)) => {
                figures
                    .latencies
                    .push(began.elapsed().as_secs_f64() * 1000.0);
                figures.connects.push(connected.as_secs_f64() * 1000.0);
            }
            Ok((status, _)) => {
                figures.unanswered += 1;
                figures.errors.push(format!("status {status}"));
            }
            Err(error) => {
                figures.unanswered += 1;
                figures.errors.push(error);
            }
        }
        figures.most_descriptors = figures.most_descriptors.max(descriptors(serve.child.id()));
    }
}

fn row(what: &str, figures: &mut Figures) {
    figures.latencies.sort_by(f64::total_cmp);
    figures.connects.sort_by(f64::total_cmp);
    let latencies = &figures.latencies;
    println!(
        "| {what} | {} | {} | {:.1} | {:.1} | {:.1} | {:.1} / {:.1} | {} |",
        latencies.len(),
        figures.unanswered,
        percentile(latencies, 50.0),
        percentile(latencies, 99.0),
        latencies.last().copied().unwrap_or(f64::NAN),
        percentile(&figures.connects, 50.0),
        percentile(&figures.connects, 99.0),
        figures.most_descriptors,
    );
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (mut rounds, mut requests) = (3, 100);
    let mut only_hard: Option<u64> = None;
    let mut churn_holds = CHURN_HOLDS;
    while let Some(arg) = args.next() {
        let value = args.next().and_then(|n| n.parse().ok());
        match arg.as_str() {
            "--rounds" => rounds = value.unwrap_or(rounds),
            "--requests" => requests = value.unwrap_or(requests),
            "--hard" => only_hard = value.map(|v: usize| v as u64),
            "--churn-holds" => churn_holds = value.unwrap_or(churn_holds),
            _ => {}
        }
    }
    let (_, hard) = open_files("self");
    let hard = hard.min(1 << 20);
    println!(
        "tau serve: the person's requests (token, new connection each) under a local flood, {rounds} rounds of up to {requests}"
    );
    println!(
        "flood: {PER_SOURCE} idle connections from each of {SOURCES} loopback addresses, reopened when closed, \
         plus new idle connections from 127.0.0.1 as fast as one thread opens them ({CHURN_HOLDS} kept)"
    );
    println!();
    println!(
        "| open files at start (soft / hard) → in tau serve | while | answered | no answer | p50 (ms) | p99 (ms) | worst (ms) | of which the connect, p50 / p99 (ms) | most descriptors |"
    );
    println!("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    let mut notes = Vec::new();
    for limit in [(1024, hard), (1024, 1024)]
        .into_iter()
        .filter(|(_, h)| only_hard.is_none_or(|only| only == *h))
    {
        let tau = Tau::new();
        let config = tau.serve_config("");
        let serve = tau.serve_with_open_files(
            &tau.replay(&json!([answer("hi")])),
            &config,
            &[("TAU_LOG", "debug")],
            limit,
        );
        let (soft_now, hard_now) = open_files(&serve.child.id().to_string());
        let label = format!("{} / {} → {soft_now} / {hard_now}", limit.0, limit.1);
        let mut quiet = Figures::default();
        person(&serve, requests, &mut quiet);
        let mut flooded = Figures::default();
        let mut opened = 0;
        for _ in 0..rounds {
            let surge = Surge::start(serve.addr, SOURCES, PER_SOURCE, churn_holds, 1_000_000);
            let held = usize::from(SOURCES) * PER_SOURCE;
            let waited = Instant::now();
            while surge.opened() < held && waited.elapsed() < Duration::from_secs(30) {
                std::thread::sleep(Duration::from_millis(20));
            }
            person(&serve, requests, &mut flooded);
            opened += surge.opened();
            drop(surge);
            // The flood's connections are closed on its side; let the server see it.
            std::thread::sleep(Duration::from_secs(2));
        }
        row(&format!("{label} | nothing else"), &mut quiet);
        row(&format!("{label} | the flood"), &mut flooded);
        let log = tau.log();
        let said: Vec<&str> = log
            .lines()
            .filter(|l| l.contains("open files limit") || l.contains("web connections capped"))
            .filter_map(|l| l.split_once(": ").map(|(_, said)| said))
            .collect();
        let out_of_descriptors = log
            .lines()
            .filter(|l| l.contains("Too many open files"))
            .count();
        let mut errors = flooded.errors.clone();
        errors.sort();
        errors.dedup();
        notes.push(format!(
            "{label}: the flood opened {opened} connections; tau serve logged {out_of_descriptors} \
             \"Too many open files\"; said at start: {said:?}; no answer: {errors:?}"
        ));
        serve.kill_hard();
    }
    println!();
    for note in notes {
        println!("{note}");
    }
}
