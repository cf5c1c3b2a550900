//! What one turn asks of the store, on each store: a session's prompt and answer stored,
//! its agent state saved, one tier-2 question stored, shown, answered yes, its call let
//! through and finished, the session's questions settled, and the end-of-turn flush —
//! thirteen reads and writes, each its own transaction, as the hub makes them.
//!
//! `sqlite`: a file in a temporary folder. `postgres`: a fresh database on the server
//! `TAU_TEST_POSTGRES_URL` names (left out when it names none). Criterion reports the
//! time per turn; on a loopback server most of it is round trips, not CPU.
#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::panic,
    reason = "a benchmark that cannot set up has nothing to measure"
)]

use std::sync::atomic::{AtomicU64, Ordering};

use criterion::{Criterion, criterion_group, criterion_main};
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

criterion_group!(benches, stores);
criterion_main!(benches);
