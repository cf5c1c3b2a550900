//! The log levels the record asks for: tool calls by tier, decisions, timeouts, failures.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::House;
use pretty_assertions::assert_eq;
use serde_json::json;
use tau_core::{
    Answer, Approver, ApproverError, EventBus, ScriptedApprover, TierGate, ToolCallRecord,
};
use tau_protocol::{Approval, ApprovalQuestion, CallStatus, DecidedBy, Decision, Tier};
use tracing::Level;
use tracing_subscriber::layer::SubscriberExt;

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<(Level, String)>>>);

struct MessageOf(String);

impl tracing::field::Visit for MessageOf {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Captured {
    fn on_event(
        &self,
        event: &tracing::Event<'_>,
        _ctx: tracing_subscriber::layer::Context<'_, S>,
    ) {
        let mut message = MessageOf(String::new());
        event.record(&mut message);
        self.0
            .lock()
            .unwrap()
            .push((*event.metadata().level(), message.0));
    }
}

fn captured<F: std::future::Future<Output = ()>>(run: impl FnOnce() -> F) -> Vec<(Level, String)> {
    let captured = Captured::default();
    let subscriber = tracing_subscriber::registry().with(captured.clone());
    tracing::subscriber::with_default(subscriber, || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .unwrap();
        runtime.block_on(run());
    });

    captured.0.lock().unwrap().clone()
}

fn gate(approver: Arc<dyn Approver>) -> TierGate {
    TierGate::new(Arc::new(House::new().catalog()), approver, EventBus::new())
}

fn record(tool: &str, tier: Option<Tier>) -> ToolCallRecord {
    ToolCallRecord {
        tool: tool.into(),
        tier,
        tool_use_id: "t1".into(),
        arguments: json!({}),
        fate: tau_protocol::CallFate {
            status: CallStatus::Success,
            approval: Approval::NotRequired,
            decided_by: DecidedBy::Policy,
        },
        approval_id: None,
        result_summary: None,
        duration: None,
        provenance: Default::default(),
    }
}

#[test]
fn tool_calls_log_at_debug_for_tier_0_info_for_tiers_1_and_2_warn_for_unknown_tools() {
    let lines = captured(|| async {
        let gate = gate(Arc::new(ScriptedApprover::new([])));
        gate.record(record("clock", Some(Tier::Read)));
        gate.record(record("notes", Some(Tier::Write)));
        gate.record(record("lights", Some(Tier::Physical)));
        gate.record(record("ghost", None));
    });
    assert_eq!(
        lines,
        vec![
            (Level::DEBUG, "tool_call".to_owned()),
            (Level::INFO, "tool_call".to_owned()),
            (Level::INFO, "tool_call".to_owned()),
            (Level::WARN, "tool_call to an unknown tool".to_owned()),
        ]
    );
}

struct Silent;

#[async_trait::async_trait]
impl Approver for Silent {
    fn name(&self) -> &str {
        "silent"
    }
    async fn decide(&self, _request: ApprovalQuestion) -> Result<Answer, ApproverError> {
        std::future::pending().await
    }
}

struct Broken;

#[async_trait::async_trait]
impl Approver for Broken {
    fn name(&self) -> &str {
        "broken"
    }
    async fn decide(&self, _request: ApprovalQuestion) -> Result<Answer, ApproverError> {
        Err(ApproverError::new("gone"))
    }
}

#[test]
fn decisions_log_at_info_timeouts_at_warn_failures_at_error() {
    let lines = captured(|| async {
        gate(Arc::new(ScriptedApprover::new([Decision::Approved])))
            .check("lights", &json!({}), "t1")
            .await;
        gate(Arc::new(Silent))
            .with_timeout(Some(Duration::from_secs(1)))
            .check("lights", &json!({}), "t2")
            .await;
        gate(Arc::new(Broken))
            .check("lights", &json!({}), "t3")
            .await;
        gate(Arc::new(ScriptedApprover::new([])))
            .check("ghost", &json!({}), "t4")
            .await;
    });
    assert_eq!(
        lines,
        vec![
            (Level::INFO, "approval decided".to_owned()),
            (Level::WARN, "approval timed out".to_owned()),
            (Level::ERROR, "approver failed; call refused".to_owned()),
            (Level::WARN, "call to an unknown tool refused".to_owned()),
        ]
    );
}
