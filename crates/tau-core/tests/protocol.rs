//! The channel protocol: the whole event sequence a channel receives for each kind of
//! call, and the audit events beside it, pinned as JSON. A channel renders from these
//! fields alone, so they must say what happened, and who decided, exactly.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use std::sync::Arc;

use async_trait::async_trait;
use common::{House, Setup, calls, text, tool_use};
use serde_json::{Value, json};
use tau_core::{
    Answer, Approver, ApproverError, ChannelSink, CoreConfig, ScriptedApprover, ToolCatalog,
    gated_call,
};
use tau_protocol::{ApprovalQuestion, ChannelEvent, DecidedBy, Decision};

/// A turn's channel events and audit events, as stable JSON.
struct Seen {
    channel: Value,
    audit: Value,
}

fn stable(value: impl serde::Serialize) -> Value {
    let mut value = serde_json::to_value(value).unwrap();
    drop_durations(&mut value);
    tau_test_support::stable_ids(&mut value);
    tau_test_support::sorted_keys(value)
}

fn drop_durations(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.remove("duration_ms");
            map.values_mut().for_each(drop_durations);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_durations),
        _ => {}
    }
}

async fn turn(approver: Arc<dyn Approver>, config: CoreConfig, call: Value) -> Seen {
    let house = House::new();
    let name = call["name"].as_str().unwrap().to_owned();
    let mut setup = Setup::new(house.catalog(), approver);
    setup.config = config;
    let mut built = setup
        .build(vec![
            calls(vec![tool_use("t1", &name, call["input"].clone())]),
            text("Done."),
        ])
        .await;
    let (sink, mut receiver) = ChannelSink::channel();
    built.agent.stream("go", Some(&sink)).await.unwrap();
    let mut channel = Vec::new();
    while let Ok(event) = receiver.try_recv() {
        channel.push(event);
    }
    Seen {
        channel: stable(channel),
        audit: stable(built.events.events()),
    }
}

async fn lights(approver: Arc<dyn Approver>) -> Seen {
    turn(
        approver,
        CoreConfig::default(),
        json!({"name": "lights", "input": {"room": "kitchen"}}),
    )
    .await
}

#[tokio::test]
async fn a_refused_call() {
    let seen = lights(Arc::new(ScriptedApprover::new([Decision::Rejected]))).await;
    insta::assert_json_snapshot!("refused_channel", seen.channel);
    insta::assert_json_snapshot!("refused_audit", seen.audit);
}

#[tokio::test]
async fn an_approved_call() {
    let seen = lights(Arc::new(ScriptedApprover::new([Decision::Approved]))).await;
    insta::assert_json_snapshot!("approved_channel", seen.channel);
    insta::assert_json_snapshot!("approved_audit", seen.audit);
}

/// Never answers.
struct Silent;

#[async_trait]
impl Approver for Silent {
    fn name(&self) -> &str {
        "silent"
    }
    async fn decide(&self, _request: ApprovalQuestion) -> Result<Answer, ApproverError> {
        std::future::pending().await
    }
}

#[tokio::test(start_paused = true)]
async fn a_timed_out_call() {
    let config = CoreConfig::from_toml("[approval]\ntimeout_seconds = 5\n").unwrap();
    let seen = turn(
        Arc::new(Silent),
        config,
        json!({"name": "lights", "input": {"room": "kitchen"}}),
    )
    .await;
    insta::assert_json_snapshot!("timed_out_channel", seen.channel);
    insta::assert_json_snapshot!("timed_out_audit", seen.audit);
}

#[tokio::test]
async fn an_end_of_input_call() {
    let approver = ScriptedApprover::answers([Answer::rejected(DecidedBy::EndOfInput)]);
    let seen = lights(Arc::new(approver)).await;
    insta::assert_json_snapshot!("end_of_input_channel", seen.channel);
    insta::assert_json_snapshot!("end_of_input_audit", seen.audit);
}

#[tokio::test]
async fn an_unknown_tool_call() {
    let seen = turn(
        Arc::new(ScriptedApprover::new([])),
        CoreConfig::default(),
        json!({"name": "open_door", "input": {}}),
    )
    .await;
    insta::assert_json_snapshot!("unknown_tool_channel", seen.channel);
    insta::assert_json_snapshot!("unknown_tool_audit", seen.audit);
}

#[tokio::test]
async fn an_invalid_input_call() {
    let seen = turn(
        Arc::new(ScriptedApprover::new([])),
        CoreConfig::default(),
        json!({"name": "lights", "input": "kitchen, please"}),
    )
    .await;
    insta::assert_json_snapshot!("invalid_input_channel", seen.channel);
    insta::assert_json_snapshot!("invalid_input_audit", seen.audit);
}

#[tokio::test]
async fn an_invalid_name_call_is_recorded_with_its_name_cut_short() {
    let name = format!("lights; rm -rf /{}", "x".repeat(500));
    let seen = turn(
        Arc::new(ScriptedApprover::new([])),
        CoreConfig::default(),
        json!({"name": name, "input": {}}),
    )
    .await;
    let audit = seen.audit.as_array().unwrap();
    assert_eq!(audit[0]["type"], "tool_call");
    assert_eq!(audit[0]["status"], "invalid");
    assert_eq!(audit[0]["decided_by"], json!({"kind": "policy"}));
    assert!(audit[0]["tool"].as_str().unwrap().chars().count() <= 201);
    let finished: Vec<_> = seen
        .channel
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "tool_call_finished")
        .collect();
    assert_eq!(finished.len(), 1);
    assert_eq!(finished[0]["status"], "invalid");
}

/// Writes the refusal text as its own successful output.
struct Mimic;

#[async_trait]
impl tau_agent::Tool for Mimic {
    fn spec(&self) -> &tau_agent::ToolSpec {
        static SPEC: std::sync::OnceLock<tau_agent::ToolSpec> = std::sync::OnceLock::new();
        SPEC.get_or_init(|| {
            tau_core::TauToolSpec::new("mimic", "m", tau_protocol::Tier::Read, "reads nothing")
                .build()
        })
    }
    async fn run(
        &self,
        _input: Value,
        _context: tau_agent::ToolContext,
    ) -> Result<tau_agent::ToolOutput, tau_agent::ToolError> {
        Ok(tau_agent::ToolOutput::text(tau_core::refusal_text("mimic")))
    }
}

#[tokio::test]
async fn a_result_that_reads_like_a_refusal_is_still_a_success() {
    let mut catalog = ToolCatalog::new();
    catalog.extend([Arc::new(Mimic) as _]).unwrap();
    let mut built = Setup::new(catalog, Arc::new(ScriptedApprover::new([])))
        .build(vec![
            calls(vec![tool_use("t1", "mimic", json!({}))]),
            text("ok"),
        ])
        .await;
    let (sink, mut receiver) = ChannelSink::channel();
    built.agent.stream("go", Some(&sink)).await.unwrap();
    let mut statuses = Vec::new();
    while let Ok(event) = receiver.try_recv() {
        if let ChannelEvent::ToolCallFinished {
            fate: tau_protocol::CallFate { status, .. },
            ..
        } = event
        {
            statuses.push(status);
        }
    }
    assert_eq!(statuses, vec![tau_protocol::CallStatus::Success]);
}

/// The MCP server and the routine engine call `gated_call`; the loop splits it across its
/// hooks. Both must write the same audit fields for the same call.
#[tokio::test]
async fn the_gated_call_and_the_loop_record_the_same_fields() {
    for decision in [Decision::Approved, Decision::Rejected] {
        let house = House::new();
        let bus = tau_core::EventBus::new();
        let direct = tau_core::RecordedEvents::subscribed_to(&bus);
        let catalog = Arc::new(house.catalog());
        let gate = tau_core::TierGate::new(
            Arc::clone(&catalog) as _,
            Arc::new(ScriptedApprover::new([decision])),
            bus,
        );
        gated_call(
            &gate,
            &catalog,
            "lights",
            "t1",
            json!({"room": "kitchen"}),
            tau_agent::ToolContext::new("t1", "lights", None),
        )
        .await;
        let through_loop = lights(Arc::new(ScriptedApprover::new([decision]))).await;
        let mut direct = stable(direct.events());
        let looped: Vec<Value> = through_loop
            .audit
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["type"] != "turn_end")
            .cloned()
            .collect();
        // Only the model's text differs: the loop's tool result says what the model read.
        for events in [&mut direct] {
            for event in events.as_array_mut().unwrap() {
                event.as_object_mut().unwrap().remove("result_summary");
            }
        }
        let mut looped = Value::Array(looped);
        for event in looped.as_array_mut().unwrap() {
            event.as_object_mut().unwrap().remove("result_summary");
        }
        assert_eq!(direct, looped, "{decision:?}");
    }
}

#[tokio::test]
async fn a_cancelled_turn_records_the_calls_it_never_started() {
    let house = House::new();
    let mut built = Setup::new(house.catalog(), Arc::new(ScriptedApprover::new([])))
        .build(vec![
            calls(vec![
                tool_use("t1", "clock", json!({})),
                tool_use("t2", "notes", json!({"text": "x"})),
            ]),
            text("never"),
        ])
        .await;
    let cancel = built.agent.cancel_handle();
    // Cancel as soon as the first tool is asked for: neither call starts.
    let sink = ChannelSink::from_fn(move |event| {
        if matches!(event, ChannelEvent::ToolCallStarted { .. }) {
            cancel.cancel();
        }
    });
    built.agent.stream("go", Some(&sink)).await.unwrap();
    let audit = stable(built.events.events());
    let calls: Vec<_> = audit
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "tool_call")
        .map(|e| {
            (
                e["tool_use_id"].clone(),
                e["status"].clone(),
                e["decided_by"].clone(),
            )
        })
        .collect();
    assert_eq!(
        calls,
        vec![
            (
                json!("t1"),
                json!("cancelled"),
                json!({"kind": "cancelled"})
            ),
            (
                json!("t2"),
                json!("cancelled"),
                json!({"kind": "cancelled"})
            ),
        ]
    );
    assert_eq!(house.clock.runs() + house.notes.runs(), 0);
}
