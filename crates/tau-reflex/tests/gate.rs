//! A routine's calls go through the gate: its exemption covers exactly its own call while
//! its content is the approved one; anything else is asked on its `ask` channel as a
//! durable question, or refused.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::needless_pass_by_value
)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{Answering, FakeHost, Lamp, Rig, catalog, def};
use jiff::Timestamp;
use jiff::tz::TimeZone;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tau_agent::{ContentBlock, Message, Role, ScriptedModel, ToolUse};
use tau_core::{
    AuditEvent, CoreConfig, EventBus, RecordedEvents, RoutineOutcome, ScriptedApprover,
};
use tau_reflex::{
    ActionRun, AskChannel, Asking, Checks, Origin, PromptApprover, Routine, RunRecord, SystemClock,
    TurnPrompts, add_exemption, record, run_action, validate,
};
use tau_state::{ApprovalState, StateDb};
use tau_test_support::sorted_keys;
use tokio_util::sync::CancellationToken;

fn lamp() -> Arc<Lamp> {
    Arc::new(Lamp::new(Arc::new(SystemClock)))
}

fn routine(value: Value, origin: Origin, rig: &Rig) -> Routine {
    let env = |_: &str| None;
    let checks = Checks {
        tools: Some(&rig.catalog),
        zone: &TimeZone::UTC,
        env: &env,
        now: Timestamp::now(),
        at_must_be_future: false,
        webhooks: None,
        people: &tau_core::Household::default(),
    };
    validate(def(value), origin, &checks).unwrap()
}

async fn run_once(rig: &Rig, routine: &Routine, asking: Asking<'_>) -> RunRecord {
    run_until(rig, routine, asking, CancellationToken::new()).await
}

/// One run, stopped when `stop` is cancelled.
async fn run_until(
    rig: &Rig,
    routine: &Routine,
    asking: Asking<'_>,
    stop: CancellationToken,
) -> RunRecord {
    let run = run_action(ActionRun {
        routine,
        trigger: "manual".into(),
        scheduled: false,
        session: routine.session().clone(),
        catalog: &rig.catalog,
        events: &rig.events,
        asking,
        prompts: rig.host.as_ref(),
        cancel: stop,
        started_at: Timestamp::now(),
    })
    .await;
    record(&rig.store, &rig.events, &run);
    run
}

/// Asked in memory by `approver`, on the channel `routine`.
fn asked_now(approver: Arc<dyn tau_core::approval::Approver>) -> Asking<'static> {
    Asking::Now {
        approver,
        channel: "routine".into(),
        timeout: None,
    }
}

/// The recorded events as JSON, with what differs between runs (ids, durations) fixed.
fn events(rig: &Rig) -> Value {
    let mut value = serde_json::to_value(rig.recorded.events()).unwrap();
    tau_test_support::stable_ids(&mut value);
    for event in value.as_array_mut().unwrap() {
        let map = event.as_object_mut().unwrap();
        for key in ["tool_use_id", "duration_ms"] {
            if map.contains_key(key) {
                map.insert(key.into(), json!("<x>"));
            }
        }
    }
    sorted_keys(value)
}

const PORCH: fn() -> Value =
    || json!({"name": "porch", "every": "1h", "tool": "lamp", "arguments": {"state": "on"}});

#[tokio::test]
async fn an_exempt_tier2_call_is_audited_as_exempt_with_the_routine_name() {
    let lamp = lamp();
    let rig = Rig::new(
        catalog(Arc::clone(&lamp)),
        Arc::new(SystemClock),
        FakeHost::new(),
    );
    let porch = routine(PORCH(), Origin::Config, &rig);
    // The approver would refuse anything it is asked: the exemption is what lets it run.
    let run = run_once(&rig, &porch, asked_now(Arc::new(ScriptedApprover::new([])))).await;
    assert_eq!(run.outcome, RoutineOutcome::Success);
    assert_eq!(lamp.count(), 1);
    assert_eq!(
        events(&rig),
        sorted_keys(json!([
            {"type": "tool_call", "tool": "lamp", "tier": 2, "tool_use_id": "<x>",
             "arguments": {"state": "on"}, "status": "success", "approval": "exempt",
             "decided_by": {"kind": "exemption", "name": "routine:porch"},
             "result_summary": "lamp on", "duration_ms": "<x>"},
            {"type": "routine_run", "routine": "porch", "trigger": "manual", "outcome": "success",
             "detail": "lamp on", "tool_use_id": "<x>", "duration_ms": "<x>"},
        ]))
    );
}

#[tokio::test]
async fn the_exemption_covers_no_other_tool_and_no_other_arguments() {
    let rig = Rig::new(catalog(lamp()), Arc::new(SystemClock), FakeHost::new());
    let porch = routine(PORCH(), Origin::Config, &rig);
    let asked = ScriptedApprover::new([
        tau_protocol::Decision::Rejected,
        tau_protocol::Decision::Rejected,
    ]);
    let gate = tau_core::TierGate::new(
        Arc::clone(&rig.catalog) as _,
        Arc::new(asked.clone()),
        EventBus::new(),
    );
    let _handle = add_exemption(&gate, &porch).unwrap();
    let exempt = gate.check("lamp", &json!({"state": "on"}), "t1").await;
    assert_eq!(
        (exempt.allowed(), exempt.approval()),
        (true, tau_protocol::Approval::Exempt)
    );
    let off = gate.check("lamp", &json!({"state": "off"}), "t2").await;
    assert!(!off.allowed());
    let more = gate
        .check("lamp", &json!({"state": "on", "dim": 1}), "t3")
        .await;
    assert!(!more.allowed());
    let asked: Vec<Value> = asked.requests().into_iter().map(|r| r.arguments).collect();
    assert_eq!(
        asked,
        vec![json!({"state": "off"}), json!({"state": "on", "dim": 1})]
    );
}

#[tokio::test]
async fn a_routine_whose_arguments_were_edited_is_no_longer_exempt() {
    let lamp = lamp();
    let rig = Rig::new(
        catalog(Arc::clone(&lamp)),
        Arc::new(SystemClock),
        FakeHost::new(),
    );
    // Made in a conversation: the person approved exactly this content.
    let approved = def(PORCH());
    rig.store
        .create(&approved, &approved.content_hash(), None, Timestamp::now())
        .unwrap();
    // Then its arguments are changed without an approval.
    let mut edited = approved.clone();
    edited.arguments = Some(json!({"state": "off"}).as_object().unwrap().clone());
    assert!(rig.store.replace_definition(&edited).unwrap());

    let env = |_: &str| None;
    let checks = Checks {
        tools: Some(&rig.catalog),
        zone: &TimeZone::UTC,
        env: &env,
        now: Timestamp::now(),
        at_must_be_future: false,
        webhooks: None,
        people: &tau_core::Household::default(),
    };
    let book = tau_reflex::load(&[], &rig.store, &checks).unwrap();
    let porch = book.get("porch").unwrap();
    assert!(!porch.approved());
    let run = run_once(
        &rig,
        porch,
        asked_now(Arc::new(tau_core::AutoRejectApprover)),
    )
    .await;
    assert_eq!(run.outcome, RoutineOutcome::Refused);
    assert_eq!(
        run.detail.as_deref(),
        Some(r#"rejected, decided by {"kind":"policy"}"#)
    );
    assert_eq!(
        lamp.count(),
        0,
        "an edited routine's call does not run unasked"
    );
    assert_eq!(
        rig.calls(),
        vec![
            json!({"tool": "lamp", "status": "refused", "approval": "rejected", "decided_by": {"kind": "policy"}})
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn an_edit_reaches_the_running_engine_and_voids_the_exemption() {
    let lamp = lamp();
    let clock: Arc<dyn tau_reflex::Clock> = Arc::new(tau_reflex::TokioClock::starting_at(
        common::at("2026-01-01T00:00:00Z"),
    ));
    let mut rig = Rig::new(catalog(Arc::clone(&lamp)), clock, FakeHost::new());
    rig.settings.reload_every = Duration::from_secs(1);
    rig.settings.backoff_base = Duration::from_secs(1);
    let approved =
        def(json!({"name": "porch", "every": "10m", "tool": "lamp", "arguments": {"state": "on"}}));
    rig.store
        .create(&approved, &approved.content_hash(), None, Timestamp::now())
        .unwrap();
    let engine = rig.engine(Vec::new()).unwrap();
    let stop = CancellationToken::new();
    let task = tokio::spawn({
        let stop = stop.clone();
        async move { engine.run(stop).await }
    });
    tokio::time::sleep(Duration::from_secs(11 * 60)).await;
    let mut edited = approved.clone();
    edited.arguments = Some(json!({"state": "off"}).as_object().unwrap().clone());
    rig.store.replace_definition(&edited).unwrap();
    // The changed routine counts from its change (00:11): it fires at 00:21 and 00:31.
    tokio::time::sleep(Duration::from_secs(25 * 60)).await;
    stop.cancel();
    task.await.unwrap();
    assert_eq!(lamp.count(), 1, "only the approved content ran");
    let decided: Vec<Value> = rig
        .calls()
        .into_iter()
        .map(|c| json!([c["approval"], c["decided_by"]]))
        .collect();
    assert_eq!(
        decided,
        vec![
            json!(["exempt", {"kind": "exemption", "name": "routine:porch"}]),
            json!(["rejected", {"kind": "policy"}]),
            json!(["rejected", {"kind": "policy"}]),
        ]
    );
}

#[tokio::test]
async fn a_call_not_covered_is_asked_durably_on_the_ask_channel() {
    for (answering, outcome, state, runs) in [
        (
            Answering::Yes,
            RoutineOutcome::Success,
            ApprovalState::Approved,
            1,
        ),
        (
            Answering::No,
            RoutineOutcome::Refused,
            ApprovalState::Rejected,
            0,
        ),
    ] {
        let lamp = lamp();
        let mut rig = Rig::new(
            catalog(Arc::clone(&lamp)),
            Arc::new(SystemClock),
            FakeHost::with_web(answering),
        );
        rig.settings.reload_every = Duration::from_millis(20);
        rig.settings.backoff_base = Duration::from_secs(3600);
        // Approved with "on", edited to "off": not exempt, so the web channel is asked.
        let approved = def(json!({"name": "porch", "every": "1s", "tool": "lamp",
                                  "arguments": {"state": "on"}, "ask": "web"}));
        rig.store
            .create(&approved, &approved.content_hash(), None, Timestamp::now())
            .unwrap();
        let mut edited = approved.clone();
        edited.arguments = Some(json!({"state": "off"}).as_object().unwrap().clone());
        rig.store.replace_definition(&edited).unwrap();
        let engine = rig.engine(Vec::new()).unwrap();
        let stop = CancellationToken::new();
        let task = tokio::spawn({
            let stop = stop.clone();
            async move { engine.run(stop).await }
        });
        for _ in 0..300 {
            if !rig.runs().is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        stop.cancel();
        task.await.unwrap();
        assert_eq!(rig.runs()[0].2, outcome.as_str(), "{answering:?}");
        assert_eq!(lamp.count(), runs);
        let store = rig.host.approvals.as_ref().unwrap().db.clone();
        let rows = store.approvals().approvals(None).unwrap();
        assert_eq!(rows.len(), 1);
        let row = &rows[0];
        assert_eq!(
            (
                row.channel.as_str(),
                row.session.as_str(),
                row.tool.as_str(),
                row.arguments.as_str(),
                row.state
            ),
            ("web", "routine-porch", "lamp", r#"{"state":"off"}"#, state)
        );
        assert_eq!(
            row.consumed_at.is_some(),
            answering == Answering::Yes,
            "one yes runs one call"
        );
        let call = rig.calls()[0].clone();
        let person = json!({"kind": "person", "channel": "web", "user": "ada"});
        assert_eq!(call["decided_by"], person);
        let requested = rig.recorded.events().into_iter().find_map(|e| match e {
            AuditEvent::ApprovalRequested(question) => {
                Some((question.approval_id, question.channel))
            }
            _ => None,
        });
        assert_eq!(
            requested,
            Some((row.id.clone(), "web".to_owned())),
            "the row is the gate's question"
        );
    }
}

/// `porch` switching the lamp off, edited since its approval (so not exempt), asking on
/// the web; and the store its questions are kept in.
fn porch_asking_web(rig: &Rig) -> (Routine, StateDb) {
    let approved = def(
        json!({"name": "porch", "every": "1h", "tool": "lamp", "arguments": {"state": "on"}, "ask": "web"}),
    );
    let porch = routine(
        json!({"name": "porch", "every": "1h", "tool": "lamp", "arguments": {"state": "off"}, "ask": "web"}),
        Origin::Conversation {
            approved_hash: approved.content_hash(),
        },
        rig,
    );
    let store = rig.host.approvals.as_ref().unwrap().db.clone();
    (porch, store)
}

/// Asking on the web through the rig's host, each question waiting up to `timeout`.
fn on_the_web<'a>(rig: &'a Rig, porch: &Routine, store: &StateDb, timeout: Duration) -> Asking<'a> {
    tau_reflex::asking_on(
        rig.host.as_ref(),
        store.approvals(),
        AskChannel::Web,
        porch.session().clone(),
        timeout,
    )
}

/// A routine's stored yes passes the conversation gate's own re-check: a yes recorded on
/// another channel than the question's lets nothing run.
#[tokio::test]
async fn a_yes_recorded_on_another_channel_runs_nothing() {
    let lamp = lamp();
    let rig = Rig::new(
        catalog(Arc::clone(&lamp)),
        Arc::new(SystemClock),
        FakeHost::with_web(Answering::YesElsewhere),
    );
    let (porch, store) = porch_asking_web(&rig);
    let asking = on_the_web(&rig, &porch, &store, Duration::from_secs(30));
    let run = run_once(&rig, &porch, asking).await;
    // The approver fails on it (it never answers yes), so the gate refuses the call.
    assert_eq!(
        (run.outcome, run.detail.as_deref()),
        (
            RoutineOutcome::Refused,
            Some(r#"failed, decided by {"kind":"approver_failed"}"#)
        )
    );
    let said = rig
        .recorded
        .events()
        .into_iter()
        .filter_map(|e| match e {
            AuditEvent::Error { message, .. } => Some(message),
            _ => None,
        })
        .collect::<Vec<_>>();
    assert!(
        said.iter()
            .any(|m| m.contains("the stored approval was given on another channel")),
        "{said:?}"
    );
    assert_eq!(lamp.count(), 0);
    let rows = store.approvals().approvals(None).unwrap();
    assert_eq!(rows[0].consumed_at, None, "never let through");
}

#[tokio::test]
async fn an_unanswered_question_expires_and_refuses() {
    let lamp = lamp();
    let rig = Rig::new(
        catalog(Arc::clone(&lamp)),
        Arc::new(SystemClock),
        FakeHost::with_web(Answering::Never),
    );
    let (porch, store) = porch_asking_web(&rig);
    let asking = on_the_web(&rig, &porch, &store, Duration::from_millis(300));
    let run = run_once(&rig, &porch, asking).await;
    assert_eq!(run.outcome, RoutineOutcome::Refused);
    assert_eq!(
        run.detail.as_deref(),
        Some(r#"timed out, decided by {"kind":"timeout"}"#)
    );
    assert_eq!(lamp.count(), 0);
    let rows = store.approvals().approvals(None).unwrap();
    assert_eq!(rows[0].state, ApprovalState::Expired);
    assert_eq!(
        rig.host.withdrawn.lock().unwrap().len(),
        1,
        "the channel stops showing it"
    );
}

fn lamp_call(state: &str) -> Message {
    Message {
        role: Role::Assistant,
        content: vec![ContentBlock::ToolUse(ToolUse {
            tool_use_id: "m1".into(),
            name: "lamp".into(),
            input: json!({"state": state}),
        })],
        source: None,
    }
}

#[tokio::test]
async fn a_prompt_actions_tier2_call_is_refused_without_an_ask_channel() {
    let lamp = lamp();
    let mut host = FakeHost::new();
    let bus = EventBus::new();
    let turn_events = RecordedEvents::subscribed_to(&bus);
    host.prompts = Some(Arc::new(TurnPrompts {
        config: CoreConfig::default(),
        model: Arc::new(ScriptedModel::new([
            lamp_call("on"),
            Message::assistant_text("The lamp stays off."),
        ])),
        catalog: catalog(Arc::clone(&lamp)),
        sessions: None,
        events: bus,
        approver: PromptApprover::ByAsk(Arc::new(|_| panic!("no ask channel: nobody is asked"))),
        sink: None,
    }));
    let rig = Rig::new(catalog(Arc::clone(&lamp)), Arc::new(SystemClock), host);
    // The same call as an exempt routine's: a prompt action never gets that exemption.
    let evening = routine(
        json!({"name": "evening", "cron": "0 19 * * *", "prompt": "Switch the lamp on."}),
        Origin::Config,
        &rig,
    );
    let run = run_once(
        &rig,
        &evening,
        asked_now(Arc::new(ScriptedApprover::new([]))),
    )
    .await;
    assert_eq!(
        (run.outcome, run.detail.as_deref()),
        (RoutineOutcome::Refused, Some("refused: lamp"))
    );
    assert_eq!(lamp.count(), 0);
    let prompted = rig.host.prompted.lock().unwrap().clone();
    assert_eq!(
        (
            prompted[0].session.as_str(),
            prompted[0].ask,
            prompted[0].prompt.as_str()
        ),
        ("routine-evening", None, "Switch the lamp on.")
    );
    let call = turn_events.events().into_iter().find_map(|e| match e {
        AuditEvent::ToolCall {
            fate:
                tau_protocol::CallFate {
                    approval,
                    decided_by,
                    status,
                },
            ..
        } => Some((approval, decided_by, status)),
        _ => None,
    });
    assert_eq!(
        call,
        Some((
            tau_protocol::Approval::Rejected,
            tau_protocol::DecidedBy::Policy,
            tau_protocol::CallStatus::Refused
        ))
    );
}

#[tokio::test]
async fn a_question_open_when_the_routine_stops_is_withdrawn() {
    let lamp = lamp();
    let rig = Rig::new(
        catalog(Arc::clone(&lamp)),
        Arc::new(SystemClock),
        FakeHost::with_web(Answering::Never),
    );
    let porch = routine(
        json!({"name": "porch", "every": "1h", "tool": "lamp", "arguments": {"state": "off"}, "ask": "web"}),
        Origin::Conversation {
            approved_hash: "not this content".into(),
        },
        &rig,
    );
    let store = rig.host.approvals.as_ref().unwrap().db.clone();
    let stop = CancellationToken::new();
    let asking = on_the_web(&rig, &porch, &store, Duration::from_secs(3600));
    let cancel_soon = {
        let stop = stop.clone();
        async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            stop.cancel();
        }
    };
    let (run, ()) = tokio::join!(run_until(&rig, &porch, asking, stop.clone()), cancel_soon);
    assert_eq!(run.outcome, RoutineOutcome::Refused);
    assert_eq!(lamp.count(), 0);
    let rows = store.approvals().approvals(None).unwrap();
    assert_eq!(
        (rows[0].state, rows[0].decided_by.clone()),
        (
            ApprovalState::Cancelled,
            Some(tau_protocol::DecidedBy::Cancelled)
        )
    );
    assert_eq!(rig.host.withdrawn.lock().unwrap().len(), 1);
}
