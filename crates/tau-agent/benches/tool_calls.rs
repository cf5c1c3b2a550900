//! Tool calls per second through the agent loop.
//!
//! `tool_calls`: one invocation whose scripted model asks for 64 calls of a no-op tool, one
//! call per model turn (64 turns) or 8 parallel calls per turn (8 turns), then answers.
//! What is measured is the loop's own cost per call: assembling the streamed message, the
//! tool-call hooks, the executor, the results message and the next request.
//!
//! `session_growth`: the same with tau's session store on a file (two commits per
//! call), for 100 and for 1000 calls in one invocation. Criterion reports the time per
//! call: the two should match, since nothing a call does may grow with the history.
//!
//! The gate, the hook that puts it in the loop and the event bus are benched with the rest
//! of tau's policy in tau-core (`cargo bench -p tau-core`).
#![allow(
    clippy::expect_used,
    reason = "a benchmark that cannot set up has nothing to measure"
)]

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use serde_json::{Value, json};
use tau_agent::{
    Agent, ContentBlock, Message, Role, ScriptedModel, SharedTool, Tool, ToolContext, ToolError,
    ToolOutput, ToolSpec, ToolUse,
};
use tau_protocol::SessionId;

const CALLS: usize = 64;

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

/// `calls / batch` turns of `batch` parallel calls each, then a final answer.
fn script(calls: usize, batch: usize) -> Vec<Message> {
    let turns = (0..calls / batch).map(|turn| Message {
        role: Role::Assistant,
        content: (0..batch)
            .map(|i| {
                ContentBlock::ToolUse(ToolUse {
                    tool_use_id: format!("t{turn}-{i}"),
                    name: "noop".into(),
                    input: json!({"turn": turn}),
                })
            })
            .collect(),
        source: None,
    });
    turns
        .chain(std::iter::once(Message::assistant_text("done")))
        .collect()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a tokio runtime")
}

fn noop() -> SharedTool {
    Arc::new(Noop {
        spec: ToolSpec {
            name: "noop".into(),
            description: "does nothing".into(),
            input_schema: json!({"type": "object"}),
            annotations: serde_json::Map::new(),
        },
    })
}

fn tool_calls(c: &mut Criterion) {
    let runtime = runtime();
    let noop = noop();
    let mut group = c.benchmark_group("tool_calls");
    group.throughput(Throughput::Elements(CALLS as u64));
    // Building each iteration's agent is not measured but takes time: allow for it.
    group.measurement_time(Duration::from_secs(10));
    for batch in [1, 8] {
        let script = script(CALLS, batch);
        group.bench_function(format!("{CALLS}_calls_in_batches_of_{batch}"), |b| {
            b.iter_batched(
                || {
                    let model = Arc::new(ScriptedModel::new(script.clone()));
                    runtime
                        .block_on(Agent::builder(model).tool(noop.clone()).build())
                        .expect("an agent")
                },
                |mut agent| {
                    let result = runtime
                        .block_on(agent.invoke("go", None))
                        .expect("the script plays to its end");
                    // Dropped after the measurement, not in it.
                    (agent, black_box(result))
                },
                BatchSize::SmallInput,
            );
        });
    }
    group.finish();
}

fn session_growth(c: &mut Criterion) {
    let runtime = runtime();
    let noop = noop();
    let id = SessionId::parse("bench").expect("a valid id");
    let mut group = c.benchmark_group("session_growth");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(15));
    for calls in [100, 1000] {
        let script = script(calls, 1);
        group.throughput(Throughput::Elements(calls as u64));
        group.bench_function(format!("{calls}_calls_stored"), |b| {
            b.iter_batched(
                || {
                    let dir = tempfile::tempdir().expect("a temporary folder");
                    let store = tau_state::StateDb::open(&dir.path().join("state.db"))
                        .expect("a session store");
                    let model = Arc::new(ScriptedModel::new(script.clone()));
                    let agent = runtime
                        .block_on(
                            Agent::builder(model)
                                .tool(noop.clone())
                                .session(
                                    Arc::new(tau_core::StoredSessions::new(store.sessions())),
                                    id.clone(),
                                )
                                .build(),
                        )
                        .expect("an agent");
                    (dir, agent)
                },
                |(dir, mut agent)| {
                    let result = runtime
                        .block_on(agent.invoke("go", None))
                        .expect("the script plays to its end");
                    (dir, agent, black_box(result))
                },
                BatchSize::PerIteration,
            );
        });
    }
    group.finish();
}

criterion_group!(benches, tool_calls, session_growth);
criterion_main!(benches);
