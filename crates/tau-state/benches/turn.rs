//! What one turn asks of the store, on each store: a session's prompt and answer stored,
//! its agent state saved, one tier-2 question stored, shown, answered yes, its call let
//! through and finished, the session's questions settled, and the end-of-turn flush —
//! thirteen reads and writes, each its own transaction, as the hub makes them.
//!
//! `sqlite`: a file in a temporary folder. `postgres`: a fresh database on the server
//! `TAU_TEST_POSTGRES_URL` names (left out when it names none). Criterion reports the
//! time per turn; on a loopback server most of it is round trips, not CPU.
//!
//! `TAU_BENCH_CPU_TURNS=N` runs N turns on each store instead and prints the CPU a turn
//! costs: this process's, and the PostgreSQL server's (every process of the server the
//! store's connection is served by, its exited ones included, read from `/proc`; Linux
//! only), which is how a turn's cost on each store compares when the cores are full.
#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::print_stdout,
    reason = "a benchmark that cannot set up has nothing to measure; it prints what it measured"
)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group};
use jiff::Timestamp;
use serde_json::json;
use tau_protocol::{ApprovalId, CallCard, DecidedBy, SessionId, Tier};
use tau_state::{ApprovalState, NewApproval, StateDb};

#[path = "../src/test_stores.rs"]
mod test_stores;

fn turn(db: &StateDb, n: u64) {
    let session = SessionId::parse(&format!("web-{n}")).unwrap();
    let sessions = db.sessions();
    let approvals = db.approvals();
    sessions.ensure_session(&session).unwrap();
    sessions
        .append_message(
            &session,
            0,
            r#"{"role":"user","content":[{"text":"lights on"}]}"#,
        )
        .unwrap();
    let id = ApprovalId::parse(&format!("ap_{n}")).unwrap();
    let row = NewApproval {
        id: id.clone(),
        session: session.clone(),
        call_id: "t1".into(),
        tool: "lights".into(),
        tier: Tier::Physical,
        effect: "switches lights".into(),
        arguments: json!({"room": "kitchen", "on": true}),
        channel: "web".into(),
        created_at: Timestamp::now(),
        deadline: Timestamp::now() + jiff::SignedDuration::from_mins(30),
        card: CallCard::default(),
    }
    .into_row();
    approvals.create_hidden_approval(&row).unwrap();
    sessions
        .save_agent_state(&session, r#"{"paused":true}"#)
        .unwrap();
    approvals.show_approval(&id).unwrap();
    approvals
        .decide_approval(
            &id,
            ApprovalState::Approved,
            &DecidedBy::person("web"),
            Timestamp::now(),
        )
        .unwrap();
    // The stored yes is read back and checked before its call runs, then let through.
    assert!(approvals.approval(&id).unwrap().is_some());
    assert!(approvals.consume_approval(&id, Timestamp::now()).unwrap());
    approvals.finish_approval(&id, Timestamp::now()).unwrap();
    sessions
        .append_message(
            &session,
            1,
            r#"{"role":"assistant","content":[{"text":"done"}]}"#,
        )
        .unwrap();
    approvals.settle_session_approvals(&session, &[]).unwrap();
    db.flush().unwrap();
}

fn stores(c: &mut Criterion) {
    let mut group = c.benchmark_group("turn");
    for store in test_stores::stores() {
        let db = store.open();
        let next = AtomicU64::new(0);
        group.bench_function(store.kind, |b| {
            b.iter(|| turn(&db, next.fetch_add(1, Ordering::Relaxed)));
        });
    }
    group.finish();
}

/// Runs `turns` turns on each store and prints wall time and CPU a turn.
fn cpu_per_turn(turns: u64) {
    for store in test_stores::stores() {
        let db = store.open();
        let server = store.url().map(postmaster);
        turn(&db, u64::MAX); // the statements prepared, the tables warm
        let (wall, ours, theirs) = (Instant::now(), own_cpu(), server.map(tree_cpu));
        for n in 0..turns {
            turn(&db, n);
        }
        let wall = wall.elapsed() / u32::try_from(turns).unwrap();
        let ours = (own_cpu() - ours) / u32::try_from(turns).unwrap();
        let theirs = server
            .zip(theirs)
            .map(|(pid, before)| (tree_cpu(pid) - before) / u32::try_from(turns).unwrap());
        println!(
            "turn/{}: {turns} turns, wall {wall:.2?} a turn, CPU a turn: bench {ours:.2?}{}",
            store.kind,
            theirs.map_or(String::new(), |t| format!(", server {t:.2?}")),
        );
    }
}

/// The PostgreSQL server's main process: the parent of a connection's backend.
fn postmaster(url: &str) -> u32 {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let backend: i32 = runtime.block_on(async {
        let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(connection);
        client
            .query_one("SELECT pg_backend_pid()", &[])
            .await
            .unwrap()
            .get(0)
    });
    stat(u32::try_from(backend).unwrap()).unwrap()[1]
        .parse()
        .unwrap()
}

/// The fields of `/proc/PID/stat` from the state on (the name, which may hold spaces, cut).
fn stat(pid: u32) -> Option<Vec<String>> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = text.rsplit_once(')')?;
    Some(rest.split_whitespace().map(str::to_owned).collect())
}

/// Clock ticks (1/100 s) of the fields `from..to` of a `stat`.
fn ticks(fields: &[String], from: usize, to: usize) -> Duration {
    let sum: u64 = fields[from..to]
        .iter()
        .map(|f| f.parse::<u64>().unwrap())
        .sum();
    Duration::from_millis(sum * 10)
}

/// This process's user and system CPU.
fn own_cpu() -> Duration {
    ticks(&stat(std::process::id()).unwrap(), 11, 13)
}

/// The CPU of `root`, its exited children and its live ones.
fn tree_cpu(root: u32) -> Duration {
    let mut total = ticks(&stat(root).unwrap(), 11, 15);
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
            continue;
        };
        if let Some(fields) = stat(pid).filter(|f| f[1] == root.to_string()) {
            total += ticks(&fields, 11, 13);
        }
    }
    total
}

criterion_group!(benches, stores);

fn main() {
    match std::env::var("TAU_BENCH_CPU_TURNS") {
        Ok(turns) => cpu_per_turn(turns.parse().unwrap()),
        Err(_) => {
            benches();
            Criterion::default().configure_from_args().final_summary();
        }
    }
}
