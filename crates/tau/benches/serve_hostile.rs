//! The person's requests to TauBar while 1,000 hostile connections are open: the real `tau
//! serve`, a flood without the token from 16 loopback addresses (idle connections, half
//! request heads, heads sent a byte at a time, webhook calls without the secret that
//! announce 60,000 bytes and send 2), and the person's requests with the token on fresh
//! connections, as a script would make them (`GET /api/sessions`, a new chat). Prints
//! p50, p99 and the worst latency of the person's requests, and the same without a flood.
//!
//! ```sh
//! cargo bench -p tau --bench serve_hostile                  # 5 rounds of 100 requests
//! cargo bench -p tau --bench serve_hostile -- --rounds 3
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

use std::time::{Duration, Instant};

use common::hostile::{Flood, KINDS};
use common::serve::Serve;
use common::{Tau, answer};
use serde_json::json;

/// Requests of the person per round.
const REQUESTS: usize = 100;

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

/// The person's requests, each on a new connection; their latencies in ms.
fn person(serve: &Serve) -> Vec<f64> {
    (0..REQUESTS)
        .map(|i| {
            let started = Instant::now();
            let status = if i % 10 == 0 {
                serve.post("/api/sessions", "").status
            } else {
                serve.get("/api/sessions").status
            };
            assert!(status == 200 || status == 201, "status {status}");
            started.elapsed().as_secs_f64() * 1000.0
        })
        .collect()
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mut rounds = 5;
    while let Some(arg) = args.next() {
        if arg == "--rounds" {
            rounds = args.next().and_then(|n| n.parse().ok()).unwrap_or(rounds);
        }
    }
    let tau = Tau::new();
    let config = tau.serve_config(
        "[[routines]]\nname = \"doorbell\"\nwebhook = { secret_env = \"TAU_TEST_DOORBELL\" }\ntool = \"append_note\"\narguments = { text = \"ding\" }\n",
    );
    let serve = tau.serve_env(
        &tau.replay(&json!([answer("hi")])),
        &config,
        &[("TAU_TEST_DOORBELL", "a-doorbell-secret-long-enough")],
    );
    let (mut quiet, mut flooded, mut held) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        quiet.extend(person(&serve));
        let flood = Flood::open(serve.addr, &KINDS, 250, 16, "doorbell");
        held.push(flood.open_now());
        flooded.extend(person(&serve));
        held.push(flood.open_now());
        // Until the server closed them all (at the head deadline), before the next round.
        let fates = flood.wait_closed(Duration::from_secs(60));
        assert!(fates.iter().all(|f| f.closed == f.opened), "{fates:?}");
    }
    for latencies in [&mut quiet, &mut flooded] {
        latencies.sort_by(f64::total_cmp);
    }
    held.sort_unstable();
    println!(
        "tau serve: the person's requests (token, new connection each), {rounds} rounds of {REQUESTS}"
    );
    println!();
    println!("| while | p50 (ms) | p99 (ms) | worst (ms) |");
    println!("| --- | ---: | ---: | ---: |");
    for (what, latencies) in [
        ("nothing else", &quiet),
        ("1,000 hostile connections are open", &flooded),
    ] {
        println!(
            "| {what} | {:.1} | {:.1} | {:.1} |",
            percentile(latencies, 50.0),
            percentile(latencies, 99.0),
            latencies.last().copied().unwrap_or(f64::NAN),
        );
    }
    println!();
    println!(
        "hostile connections open while the person's requests ran: {} to {}",
        held.first().unwrap_or(&0),
        held.last().unwrap_or(&0)
    );
    serve.kill_hard();
}
