//! Load on `tau serve` over TauBar's HTTP API: many conversations send one message at
//! once; a `replay:` model answers each with one tier-0 call (`clock`) and then a text.
//! Prints throughput, p50 and p99 latency of a turn with the call, the same for a turn
//! without a call (a second `tau serve` whose model only answers), the difference at the
//! p99 (what the call round costs: the gate, the audit line, the tool and one more model
//! call), and checks the audit log against the calls: one `tool_call` line per call,
//! nothing lost.
//!
//! ```sh
//! cargo bench -p tau --bench serve_load                    # 1000 conversations
//! cargo bench -p tau --bench serve_load -- --sessions 200
//! ```
//!
//! A latency runs from just before the message's POST to the `at` of the session's
//! `turn_end` line in the audit log (one clock: the same machine).
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

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::serve::Serve;
use common::{Tau, answer, tool_call};
use jiff::Timestamp;
use serde_json::{Value, json};

/// Clients sending at once (TauBar serves 256 connections at a time).
const SENDERS: usize = 64;

struct Measured {
    sessions: usize,
    /// From the first POST to the last turn's end.
    wall: Duration,
    latencies_ms: Vec<f64>,
    tool_calls: usize,
    failed_calls: usize,
    turns: usize,
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

fn run(sessions: usize, script: &Value) -> Measured {
    let tau = Tau::new();
    let model = tau.replay(script);
    let serve = tau.serve(&model, &tau.serve_config(""));
    let ids: Vec<String> = (0..sessions).map(|_| serve.new_session()).collect();
    let (addr, bearer) = (serve.addr, format!("Bearer {}", serve.token));

    let queue = Arc::new(Mutex::new(ids.clone()));
    let sent: Arc<Mutex<HashMap<String, Timestamp>>> = Arc::default();
    let start = Timestamp::now();
    let senders: Vec<_> = (0..SENDERS)
        .map(|_| {
            let (queue, sent, bearer) = (Arc::clone(&queue), Arc::clone(&sent), bearer.clone());
            std::thread::spawn(move || {
                let (host, origin) = (addr.to_string(), format!("http://{addr}"));
                let headers = [
                    ("Host", host.as_str()),
                    ("Authorization", bearer.as_str()),
                    ("Origin", origin.as_str()),
                ];
                loop {
                    let Some(id) = queue.lock().unwrap().pop() else {
                        return;
                    };
                    let at = Timestamp::now();
                    let reply = common::serve::request(
                        addr,
                        "POST",
                        &format!("/api/sessions/{id}/messages"),
                        &headers,
                        Some(r#"{"text": "What time is it?"}"#),
                    );
                    assert_eq!(reply.status, 202, "{reply:?}");
                    sent.lock().unwrap().insert(id, at);
                }
            })
        })
        .collect();
    for sender in senders {
        sender.join().unwrap();
    }

    // Every turn ends with a `turn_end` line of its session.
    let deadline = Instant::now() + Duration::from_secs(600);
    let lines = loop {
        let lines = tau.audit();
        let ended = lines.iter().filter(|l| l["type"] == "turn_end").count();
        if ended >= sessions {
            break lines;
        }
        assert!(
            Instant::now() < deadline,
            "only {ended} of {sessions} turns ended"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let sent = sent.lock().unwrap();
    let mut latencies_ms = Vec::new();
    let mut last = start;
    for line in lines.iter().filter(|l| l["type"] == "turn_end") {
        let session = line["session"].as_str().unwrap();
        let at: Timestamp = line["at"].as_str().unwrap().parse().unwrap();
        let began = sent[session];
        latencies_ms.push(at.duration_since(began).as_secs_f64() * 1000.0);
        last = last.max(at);
    }
    latencies_ms.sort_by(f64::total_cmp);
    let calls_seen = lines.iter().filter(|l| l["type"] == "tool_call").count();
    // Counted again once tau serve has stopped: a line written after its turn's end line
    // would show here, one never written would not.
    stop(serve);
    let lines = tau.audit();
    let calls: Vec<&Value> = lines.iter().filter(|l| l["type"] == "tool_call").collect();
    if calls.len() != calls_seen {
        println!(
            "{} tool_call lines were written after the turn_end lines of all turns",
            calls.len() - calls_seen
        );
    }
    let expected_calls = script_calls(script) * sessions;
    if calls.len() != expected_calls {
        for line in lines.iter().filter(|l| l["type"] == "turn_end") {
            let session = &line["session"];
            if !calls.iter().any(|c| &c["session"] == session) {
                let theirs: Vec<&Value> =
                    lines.iter().filter(|l| &l["session"] == session).collect();
                println!("a turn without its call: {theirs:#?}");
            }
        }
        let log = tau.log();
        println!("tau.log:\n{log}");
    }
    let odd: Vec<&Value> = lines
        .iter()
        .filter(|l| l["type"] == "turn_end" && l["stop_reason"] != "end_turn")
        .collect();
    assert!(odd.is_empty(), "turns that did not end well: {odd:#?}");
    let verify = tau.run(&["audit", "verify"], "");
    assert_eq!(verify.code, 0, "{}{}", verify.stdout, verify.stderr);
    Measured {
        sessions,
        wall: Duration::try_from(last.duration_since(start)).unwrap_or_default(),
        latencies_ms,
        tool_calls: calls.len(),
        failed_calls: calls.iter().filter(|l| l["status"] != "success").count(),
        turns: lines.iter().filter(|l| l["type"] == "turn_end").count(),
    }
}

fn script_calls(script: &Value) -> usize {
    script.to_string().matches("\"toolUse\":").count()
}

fn stop(serve: Serve) {
    let (code, _) = serve.terminate();
    assert_eq!(code, 0, "tau serve did not stop cleanly");
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    percentile(values, 50.0)
}

/// The medians over the rounds of throughput, p50 and p99.
fn summary(rounds: &[Measured]) -> (f64, f64, f64, f64) {
    let mut wall: Vec<f64> = rounds.iter().map(|m| m.wall.as_secs_f64()).collect();
    let mut rate: Vec<f64> = rounds
        .iter()
        .map(|m| m.sessions as f64 / m.wall.as_secs_f64())
        .collect();
    let mut p50: Vec<f64> = rounds
        .iter()
        .map(|m| percentile(&m.latencies_ms, 50.0))
        .collect();
    let mut p99: Vec<f64> = rounds
        .iter()
        .map(|m| percentile(&m.latencies_ms, 99.0))
        .collect();
    (
        median(&mut wall),
        median(&mut rate),
        median(&mut p50),
        median(&mut p99),
    )
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (mut sessions, mut rounds) = (1000, 3);
    while let Some(arg) = args.next() {
        let value = args.next().and_then(|n| n.parse().ok());
        match arg.as_str() {
            "--sessions" => sessions = value.unwrap_or(sessions),
            "--rounds" => rounds = value.unwrap_or(rounds),
            // `cargo bench` passes `--bench`.
            _ => {}
        }
    }
    let with_call_script = json!([tool_call("t1", "clock", &json!({})), answer("It is now.")]);
    let text_only_script = json!([answer("It is now.")]);
    let (mut with_call, mut text_only) = (Vec::new(), Vec::new());
    // Alternated, so a machine that gets busier does not favour one.
    for _ in 0..rounds {
        with_call.push(run(sessions, &with_call_script));
        text_only.push(run(sessions, &text_only_script));
    }
    for m in &with_call {
        assert_eq!(m.turns, sessions);
        assert_eq!(
            m.tool_calls, sessions,
            "one audit line per call, nothing lost"
        );
        assert_eq!(m.failed_calls, 0);
    }
    for m in &text_only {
        assert_eq!(m.turns, sessions);
        assert_eq!(m.tool_calls, 0);
    }

    println!(
        "tau serve, {sessions} conversations sending one message each at once ({SENDERS} clients), medians of {rounds} rounds"
    );
    println!();
    println!("| turn | wall (s) | turns/s | p50 (ms) | p99 (ms) |");
    println!("| --- | ---: | ---: | ---: | ---: |");
    let with = summary(&with_call);
    let without = summary(&text_only);
    for (name, (wall, rate, p50, p99)) in
        [("one tier-0 call, then text", with), ("text only", without)]
    {
        println!("| {name} | {wall:.2} | {rate:.0} | {p50:.1} | {p99:.1} |");
    }
    println!();
    println!(
        "p99 added by the call round (gate, audit line, tool, one more model call): {:.1} ms",
        with.3 - without.3
    );
    println!(
        "audit: {sessions} tool_call lines for {sessions} calls and a verified chain, in each of {rounds} rounds"
    );
}
