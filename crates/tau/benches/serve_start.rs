//! How long `tau serve` takes to start over a full home: 10,000 stored sessions and 1,000
//! questions waiting on TauBar (each a real turn paused on a tier-2 call, made through the
//! API by an earlier `tau serve` that was then stopped). Each start is timed from the spawn
//! to TauBar answering `GET /api/approvals` with every question shown again; the median
//! and the worst of several starts are printed, with the figure the start must stay under.
//!
//! ```sh
//! cargo bench -p tau --bench serve_start                          # 10000 / 1000
//! cargo bench -p tau --bench serve_start -- --sessions 2000 --questions 200
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

use common::{Tau, answer, tool_call};
use serde_json::{Value, json};
use tau_agent::{ContentBlock, Message, Role, SessionRepository};
use tau_protocol::SessionId;

/// Starts measured after the home is made.
const STARTS: usize = 5;
/// What a start over this home must stay under.
const TARGET: Duration = Duration::from_secs(1);

/// `count` sessions of two messages each, written straight into the home's store (as
/// `tau chat` leaves them).
fn stored_sessions(tau: &Tau, count: usize) {
    std::fs::create_dir_all(tau.home()).unwrap();
    let db = tau_core::StoredSessions::new(
        tau_state::StateDb::open(&tau.home().join("state.db"))
            .unwrap()
            .sessions(),
    );
    for n in 0..count {
        let id = SessionId::parse(&format!("chat-{n:05}")).unwrap();
        db.ensure_session(&id).unwrap();
        for (index, (role, text)) in [(Role::User, "What time is it?"), (Role::Assistant, "Noon.")]
            .into_iter()
            .enumerate()
        {
            let message = Message {
                role,
                content: vec![ContentBlock::Text(text.to_owned())],
                source: None,
            };
            db.append_message(&id, index as u64, &message).unwrap();
        }
    }
}

/// `count` web conversations, each paused on a tier-2 question, asked through the API.
fn waiting_questions(tau: &Tau, model: &str, config: &std::path::Path, count: usize) {
    let serve = tau.serve(model, config);
    let sessions: Vec<String> = (0..count).map(|_| serve.new_session()).collect();
    for session in &sessions {
        let sent = serve.post(
            &format!("/api/sessions/{session}/messages"),
            r#"{"text": "make a file"}"#,
        );
        assert_eq!(sent.status, 202, "{sent:?}");
    }
    let deadline = Instant::now() + Duration::from_secs(900);
    loop {
        let pending = serve.get("/api/approvals?state=pending").json();
        if pending.as_array().map_or(0, Vec::len) >= count {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the questions were not all asked"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let (code, _) = serve.terminate();
    assert_eq!(code, 0);
}

fn main() {
    let sessions = common::bench_argument("--sessions", 10_000);
    let questions = common::bench_argument("--questions", 1_000);
    let tau = Tau::new();
    let call = json!({"command": "touch made.txt"});
    let model = tau.replay(&json!([
        tool_call("t1", "run_command", &call),
        answer("Made.")
    ]));
    let config = tau.serve_config("[approval]\nremote_timeout_seconds = 86400\n");

    let made = Instant::now();
    stored_sessions(&tau, sessions);
    waiting_questions(&tau, &model, &config, questions);
    println!(
        "home: {sessions} stored sessions and {questions} waiting questions, made in {:.1} s",
        made.elapsed().as_secs_f64()
    );

    let mut times = Vec::with_capacity(STARTS);
    for _ in 0..STARTS {
        let start = Instant::now();
        let serve = tau.serve(&model, &config);
        loop {
            let pending: Value = serve.get("/api/approvals?state=pending").json();
            if pending.as_array().map_or(0, Vec::len) == questions {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "the questions did not come back"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        times.push(start.elapsed());
        let (code, _) = serve.terminate();
        assert_eq!(code, 0);
    }
    times.sort();
    let median = times[times.len() / 2];
    let worst = times[times.len() - 1];
    println!(
        "tau serve, spawn to every question listed again: median {:.0} ms, worst {:.0} ms over {STARTS} starts (target under {} ms)",
        median.as_secs_f64() * 1000.0,
        worst.as_secs_f64() * 1000.0,
        TARGET.as_millis()
    );
    if median > TARGET {
        println!("over the target");
    }
}
