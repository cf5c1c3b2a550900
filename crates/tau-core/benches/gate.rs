//! What tau's policy costs per tool call.
//!
//! `gate`: one `TierGate::check`, for a tier-0 tool (allowed without asking), a tier-2
//! tool a scripted approver says yes to, and an unknown tool (refused, an error event).
//!
//! `full_stack`: one user turn of 100 and of 1000 calls of a tier-0 tool through
//! `build_agent`'s agent: the loop, the gate as a hook, `record` and its events on the
//! bus, and the SQLite session store on a file. Each event is serialized to a JSON line,
//! as the audit log does; the audit log's own append (its hash chain, file lock and write)
//! lives in the `tau` binary and is measured end to end by `scripts/bench-strands`.
//! Criterion reports the time per call: the two sizes should match.
#![allow(
    clippy::expect_used,
    reason = "a benchmark that cannot set up has nothing to measure"
)]

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use serde_json::{Value, json};
use tau_agent::{
    ContentBlock, Message, Role, ScriptedModel, SharedTool, Tool, ToolContext, ToolError,
    ToolOutput, ToolSpec, ToolUse,
};
use tau_core::{
    AgentParts, AuditEvent, AutoRejectApprover, CoreConfig, EventBus, EventSubscriber,
    ScriptedApprover, StoredSessions, TauToolSpec, TierGate, ToolCatalog, build_agent,
};
use tau_protocol::{Decision, SessionId, Tier};

struct Noop {
    spec: ToolSpec,
}

#[async_trait]
impl Tool for Noop {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn run(&self, _input: Value, _context: ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text("ok"))
    }
}

fn tool(name: &str, tier: Tier) -> SharedTool {
    Arc::new(Noop {
        spec: TauToolSpec::new(name, "does nothing", tier, format!("does nothing ({name})"))
            .build(),
    })
}

fn catalog() -> ToolCatalog {
    let mut catalog = ToolCatalog::new();
    catalog
        .extend([tool("look", Tier::Read), tool("lamp", Tier::Physical)])
        .expect("a catalog");
    catalog
}

/// Serializes every event to a JSON line, the part of an audit append that is not file work.
#[derive(Default)]
struct JsonLines {
    bytes: AtomicU64,
}

impl EventSubscriber for JsonLines {
    fn on_event(&self, event: &AuditEvent) {
        let line = serde_json::to_vec(event).expect("events serialize");
        self.bytes
            .fetch_add(line.len() as u64 + 1, Ordering::Relaxed);
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a tokio runtime")
}

fn gate(c: &mut Criterion) {
    let runtime = runtime();
    let arguments = json!({"room": "kitchen", "state": "on"});
    let mut group = c.benchmark_group("gate");
    let events = EventBus::new();
    events.subscribe(Arc::new(JsonLines::default()));
    let catalog = Arc::new(catalog());
    let refusing = TierGate::new(
        catalog.clone(),
        Arc::new(AutoRejectApprover),
        events.clone(),
    );
    group.bench_function("check_tier_0", |b| {
        b.iter(|| runtime.block_on(refusing.check("look", black_box(&arguments), "t1")));
    });
    group.bench_function("check_unknown_tool", |b| {
        b.iter(|| runtime.block_on(refusing.check("ghost", black_box(&arguments), "t1")));
    });
    group.bench_function("check_tier_2_approved", |b| {
        b.iter_batched(
            || {
                let approver = ScriptedApprover::new([Decision::Approved]);
                TierGate::new(catalog.clone(), Arc::new(approver), events.clone())
            },
            |gate| {
                let check = runtime.block_on(gate.check("lamp", black_box(&arguments), "t1"));
                (gate, check)
            },
            BatchSize::SmallInput,
        );
    });
    group.finish();
}

/// `calls` turns of one `look` call each, then an answer.
fn script(calls: usize) -> Vec<Message> {
    (0..calls)
        .map(|i| Message {
            role: Role::Assistant,
            content: vec![ContentBlock::ToolUse(ToolUse {
                tool_use_id: format!("t{i}"),
                name: "look".into(),
                input: json!({"at": i}),
            })],
            source: None,
        })
        .chain(std::iter::once(Message::assistant_text("done")))
        .collect()
}

fn full_stack(c: &mut Criterion) {
    let runtime = runtime();
    let id = SessionId::parse("bench").expect("a valid id");
    let mut group = c.benchmark_group("full_stack");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(15));
    for calls in [100, 1000] {
        let script = script(calls);
        let mut config = CoreConfig::default();
        config.agent.max_turns = u32::try_from(calls + 1).expect("a small number");
        group.throughput(Throughput::Elements(calls as u64));
        group.bench_function(format!("{calls}_calls_in_one_turn"), |b| {
            b.iter_batched(
                || {
                    let dir = tempfile::tempdir().expect("a temporary folder");
                    let store = tau_state::StateDb::open(&dir.path().join("state.db"))
                        .expect("a session store");
                    let events = EventBus::new();
                    events.subscribe(Arc::new(JsonLines::default()));
                    let agent = runtime
                        .block_on(build_agent(AgentParts {
                            config: config.clone(),
                            model: Arc::new(ScriptedModel::new(script.clone())),
                            catalog: catalog(),
                            approver: Arc::new(AutoRejectApprover),
                            hooks: Vec::new(),
                            plugins: Vec::new(),
                            session: Some((
                                Arc::new(StoredSessions::new(store.sessions())),
                                id.clone(),
                            )),
                            events,
                            durable: None,
                            grants: None,
                            dispatches: None,
                        }))
                        .expect("an agent");
                    (dir, agent)
                },
                |(dir, mut agent)| {
                    let outcome = runtime
                        .block_on(agent.stream("go", None))
                        .expect("the script plays to its end");
                    (dir, agent, black_box(outcome))
                },
                BatchSize::PerIteration,
            );
        });
    }
    group.finish();
}

criterion_group!(benches, gate, full_stack);
criterion_main!(benches);
