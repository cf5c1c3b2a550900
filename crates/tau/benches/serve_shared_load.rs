//! Load on hubs sharing one PostgreSQL store, beside one hub on it and one hub on its own
//! `state.db`: every conversation sends one message at once, a `replay:` model answers each
//! with one tier-0 call (`clock`) and then a text. Prints each setup's turns per second (all
//! hubs together), how busy the machine's cores were while they ran (`/proc/stat`), the
//! CPU a turn cost the hubs' own processes, and what each hub of two kept of one hub's
//! rate on the same store, and checks every hub's audit chain.
//!
//! ```sh
//! cargo bench -p tau --bench serve_shared_load                    # 300 conversations a hub
//! cargo bench -p tau --bench serve_shared_load -- --sessions 100
//! cargo bench -p tau --bench serve_shared_load -- --fsync          # commits wait for the disk
//! ```
//!
//! Needs PostgreSQL (Debian's `postgresql`; see `tau_test_support::Postgres`). Its server
//! runs without `fsync`, as the tests' does, unless `--fsync` asks for a real server's.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::print_stdout,
    clippy::cast_precision_loss
)]

#[path = "../tests/e2e/common/mod.rs"]
mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::serve::Serve;
use common::{Tau, answer, tool_call};
use serde_json::json;
use tau_test_support::Postgres;

/// Clients sending at once to each hub.
const SENDERS: usize = 32;

/// One hub under load: its home, its process, its conversations.
struct Loaded {
    tau: Tau,
    serve: Serve,
    sessions: Vec<String>,
}

fn hub(url: Option<&str>, sessions: usize) -> Loaded {
    let tau = Tau::new();
    let model = tau.replay(&json!([
        tool_call("t1", "clock", &json!({})),
        answer("It is now.")
    ]));
    let env: Vec<(&str, &str)> = url.map(|u| ("TAU_STATE_URL", u)).into_iter().collect();
    let serve = tau.serve_env(&model, &tau.serve_config(""), &env);
    let sessions = (0..sessions).map(|_| serve.new_session()).collect();
    Loaded {
        tau,
        serve,
        sessions,
    }
}

/// The machine's CPU time so far, from `/proc/stat`: (busy, all), in clock ticks.
fn machine_cpu() -> (u64, u64) {
    let stat = std::fs::read_to_string("/proc/stat").unwrap();
    let ticks: Vec<u64> = stat
        .lines()
        .next()
        .unwrap()
        .split_whitespace()
        .skip(1)
        .map(|t| t.parse().unwrap())
        .collect();
    let all: u64 = ticks.iter().take(8).sum();
    // idle and iowait
    (all - ticks[3] - ticks[4], all)
}

/// The CPU seconds process `pid` has used (user and system), from `/proc/PID/stat`.
fn process_cpu(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let (_, fields) = stat.rsplit_once(')').unwrap();
    let fields: Vec<u64> = fields
        .split_whitespace()
        .skip(11)
        .take(2)
        .map(|f| f.parse().unwrap())
        .collect();
    // Clock ticks, 100 a second on Linux.
    (fields[0] + fields[1]) as f64 / 100.0
}

/// What one load measured.
struct Measured {
    seconds: f64,
    /// How busy the machine's cores were (0 to 1).
    busy: f64,
    /// The CPU seconds the hubs' own processes used.
    hubs_cpu: f64,
}

/// Sends every hub's messages at once and waits until every turn ended.
fn load(hubs: &[Loaded]) -> Measured {
    let (busy, all) = machine_cpu();
    let cpu = || -> f64 { hubs.iter().map(|h| process_cpu(h.serve.child.id())).sum() };
    let hubs_before = cpu();
    let start = Instant::now();
    std::thread::scope(|scope| {
        for hub in hubs {
            let queue = Arc::new(Mutex::new(hub.sessions.clone()));
            let (addr, bearer) = (hub.serve.addr, format!("Bearer {}", hub.serve.token));
            for _ in 0..SENDERS {
                let (queue, bearer) = (Arc::clone(&queue), bearer.clone());
                scope.spawn(move || {
                    let (host, origin) = (addr.to_string(), format!("http://{addr}"));
                    let headers = [
                        ("Host", host.as_str()),
                        ("Authorization", bearer.as_str()),
                        ("Origin", origin.as_str()),
                    ];
                    while let Some(id) = queue.lock().unwrap().pop() {
                        let reply = common::serve::request(
                            addr,
                            "POST",
                            &format!("/api/sessions/{id}/messages"),
                            &headers,
                            Some(r#"{"text": "What time is it?"}"#),
                        );
                        assert_eq!(reply.status, 202, "{reply:?}");
                    }
                });
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(900);
    for hub in hubs {
        loop {
            let ended = hub
                .tau
                .audit()
                .iter()
                .filter(|l| l["type"] == "turn_end")
                .count();
            if ended >= hub.sessions.len() {
                break;
            }
            assert!(Instant::now() < deadline, "only {ended} turns ended");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    let (busy_now, all_now) = machine_cpu();
    Measured {
        seconds,
        busy: (busy_now - busy) as f64 / (all_now - all).max(1) as f64,
        hubs_cpu: cpu() - hubs_before,
    }
}

/// Stops each hub and checks its chain (against its own anchor in the store).
fn finish(hubs: Vec<Loaded>, url: Option<&str>) {
    let env: Vec<(&str, &str)> = url.map(|u| ("TAU_STATE_URL", u)).into_iter().collect();
    for hub in hubs {
        let (code, _) = hub.serve.terminate();
        assert_eq!(code, 0, "tau serve did not stop cleanly");
        let verified = hub.tau.run_env(&["audit", "verify"], &env, "");
        assert_eq!(verified.code, 0, "{}{}", verified.stdout, verified.stderr);
    }
}

/// Turns a second (all hubs together), how busy the cores were, and the hubs' own CPU
/// a turn in milliseconds.
fn measure(url: Option<&str>, hubs: usize, sessions: usize) -> (f64, f64, f64) {
    let loaded: Vec<Loaded> = (0..hubs).map(|_| hub(url, sessions)).collect();
    let measured = load(&loaded);
    finish(loaded, url);
    let turns = (hubs * sessions) as f64;
    (
        turns / measured.seconds,
        measured.busy,
        measured.hubs_cpu * 1000.0 / turns,
    )
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (mut sessions, mut rounds, mut fsync) = (300, 3, false);
    while let Some(arg) = args.next() {
        let mut value = || args.next().and_then(|n| n.parse().ok());
        match arg.as_str() {
            "--sessions" => sessions = value().unwrap_or(sessions),
            "--rounds" => rounds = value().unwrap_or(rounds),
            "--fsync" => fsync = true,
            // `cargo bench` passes `--bench`.
            _ => {}
        }
    }
    let server = if fsync {
        Postgres::start_flushing()
    } else {
        Postgres::start()
    }
    .unwrap();
    let (mut sqlite, mut one, mut two) = (Vec::new(), Vec::new(), Vec::new());
    // Alternated, so a machine that gets busier does not favour one.
    for _ in 0..rounds {
        sqlite.push(measure(None, 1, sessions));
        let url = server.fresh_database().unwrap();
        one.push(measure(Some(&url), 1, sessions));
        let url = server.fresh_database().unwrap();
        two.push(measure(Some(&url), 2, sessions));
    }
    let busy = |runs: &[(f64, f64, f64)]| median(runs.iter().map(|r| r.1).collect()) * 100.0;
    let (sqlite_busy, one_busy, two_busy) = (busy(&sqlite), busy(&one), busy(&two));
    let cpu = |runs: &[(f64, f64, f64)]| median(runs.iter().map(|r| r.2).collect());
    let (sqlite_cpu, one_cpu, two_cpu) = (cpu(&sqlite), cpu(&one), cpu(&two));
    let rate = |runs: Vec<(f64, f64, f64)>| median(runs.into_iter().map(|r| r.0).collect());
    let (sqlite, one, two) = (rate(sqlite), rate(one), rate(two));
    println!(
        "tau serve, {sessions} conversations a hub sending one message each at once ({SENDERS} clients a hub), one tier-0 call a turn, medians of {rounds} rounds; PostgreSQL {}",
        if fsync {
            "with fsync (every commit waits for the disk)"
        } else {
            "without fsync"
        }
    );
    println!();
    println!(
        "| store | hubs | turns/s (all hubs) | turns/s a hub | cores busy | a hub's CPU a turn |"
    );
    println!("| --- | ---: | ---: | ---: | ---: | ---: |");
    println!(
        "| state.db | 1 | {sqlite:.0} | {sqlite:.0} | {sqlite_busy:.0}% | {sqlite_cpu:.2} ms |"
    );
    println!("| PostgreSQL | 1 | {one:.0} | {one:.0} | {one_busy:.0}% | {one_cpu:.2} ms |");
    println!(
        "| PostgreSQL | 2 | {two:.0} | {:.0} | {two_busy:.0}% | {two_cpu:.2} ms |",
        two / 2.0
    );
    println!();
    println!(
        "each of two hubs keeps {:.0}% of one hub's rate on PostgreSQL; one hub on PostgreSQL does {:.0}% of one on state.db, at {:.2} times its CPU a turn",
        100.0 * two / 2.0 / one,
        100.0 * one / sqlite,
        one_cpu / sqlite_cpu
    );
}
