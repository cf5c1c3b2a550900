//! What a hub conversation costs per turn as it grows: one web conversation of 200 turns
//! on `tau serve`, each a prompt, one tier-2 call (`run_command`) asked and approved over
//! TauBar's API, and the model's answer, from an OpenAI-compatible model server over HTTP
//! that answers from the request alone (so the model's own cost stays flat and small).
//! Per turn it measures tau's own CPU (user + system time of the `tau serve` process, from
//! `/proc`) and the latency from the prompt's POST to the question on the conversation's
//! event stream (what TauBar listens to). Prints
//! the 10th and the 200th turn (CPU as the mean of turns 6-15 and 191-200, latencies as
//! their medians), their ratio (the target is within 1.5x), and the prompt-to-question
//! latency (the target is under 20 ms).
//!
//! ```sh
//! cargo bench -p tau --bench serve_turns                 # 200 turns
//! cargo bench -p tau --bench serve_turns -- --turns 100
//! ```
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

use std::time::{Duration, Instant};

use common::Tau;
use common::model_server::ModelServer;
use serde_json::json;

/// User + system CPU of process `pid` so far (`/proc/PID/stat`, in clock ticks of 10 ms).
fn cpu(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command's closing parenthesis; utime and stime are the 12th and
    // 13th of them.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    Duration::from_millis(ticks * 10)
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let turns = common::bench_argument("--turns", 200).max(20);
    let tau = Tau::new();
    let server = ModelServer::start(
        "run_command",
        &json!({"command": "echo x >> turns.txt"}),
        "Done.",
    );
    let serve = tau.serve(&server.spec(), &tau.serve_config(""));
    let pid = serve.child.id();
    let session = serve.new_session();

    let mut events = common::serve::Events::open(&serve, &session);
    let mut cpu_ms = Vec::with_capacity(turns);
    let mut ask_ms = Vec::with_capacity(turns);
    let mut turn_ms = Vec::with_capacity(turns);
    for n in 1..=turns {
        let before = cpu(pid);
        let start = Instant::now();
        let body = json!({ "text": format!("turn {n}") }).to_string();
        let sent = serve.post(&format!("/api/sessions/{session}/messages"), &body);
        assert_eq!(sent.status, 202, "{sent:?}");
        // The question, as the page hears of it.
        let id = loop {
            let (name, data) = events.next();
            if name == "message" && data["type"] == "approval_requested" {
                break data["approval_id"].as_str().unwrap().to_owned();
            }
        };
        ask_ms.push(start.elapsed().as_secs_f64() * 1000.0);
        let answered = serve.approve(&id);
        assert_eq!(answered.status, 200, "{answered:?}");
        events.until_turn_ends("end_turn");
        turn_ms.push(start.elapsed().as_secs_f64() * 1000.0);
        cpu_ms.push((cpu(pid) - before).as_secs_f64() * 1000.0);
    }
    let ran = std::fs::read_to_string(tau.workspace().join("turns.txt")).unwrap();
    assert_eq!(ran.lines().count(), turns, "every approved call ran once");

    let window = |values: &[f64], last: usize| {
        let mut slice = values[last - 10..last].to_vec();
        median(&mut slice)
    };
    // CPU in 10 ms ticks: a median of ticks is 0, 10 or 20 ms; the window's total over
    // its ten turns is exact to a tick, so to 1 ms a turn.
    let mean = |values: &[f64], last: usize| values[last - 10..last].iter().sum::<f64>() / 10.0;
    let (cpu_early, cpu_late) = (mean(&cpu_ms, 15), mean(&cpu_ms, turns));
    let (ask_early, ask_late) = (window(&ask_ms, 15), window(&ask_ms, turns));
    let (turn_early, turn_late) = (window(&turn_ms, 15), window(&turn_ms, turns));
    println!("one conversation, {turns} turns, each with one tier-2 call approved over the API");
    println!(
        "tau serve's CPU per turn (mean of ten turns): {cpu_early:.0} ms at the 10th, {cpu_late:.0} ms at the {turns}th ({:.2}x; target within 1.5x)",
        cpu_late / cpu_early.max(1.0)
    );
    println!(
        "prompt to question on the page's event stream: {ask_early:.1} ms at the 10th, {ask_late:.1} ms at the {turns}th (target under 20 ms; includes the model server's round trip)"
    );
    println!(
        "prompt to turn end (approval over the API included): {turn_early:.1} ms at the 10th, {turn_late:.1} ms at the {turns}th ({:.2}x)",
        turn_late / turn_early
    );
    let requests = server.requests.lock().unwrap().len();
    println!("model requests: {requests} (two a turn)");
}
