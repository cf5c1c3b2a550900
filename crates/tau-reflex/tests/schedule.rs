//! Time triggers under paused tokio time: the wall clock moves with tokio's, so days of
//! schedule run at full speed. Every run is a `routine_run` event.
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

use common::{FakeHost, Lamp, Rig, at, catalog, def};
use jiff::tz::TimeZone;
use pretty_assertions::assert_eq;
use serde_json::json;
use tau_core::RoutineOutcome;
use tau_reflex::{Clock, RunRecord, TokioClock};
use tokio_util::sync::CancellationToken;

const START: &str = "2026-01-01T00:00:00Z";

fn rig_with(lamp: Lamp) -> (Rig, Arc<Lamp>) {
    let lamp = Arc::new(lamp);
    let rig = Rig::new(catalog(Arc::clone(&lamp)), clock(), FakeHost::new());
    (rig, lamp)
}

fn clock() -> Arc<dyn Clock> {
    Arc::new(TokioClock::starting_at(at(START)))
}

/// Runs the engine for `span` of (paused) time, then stops it.
async fn run_for(rig: &Rig, config: Vec<tau_reflex::RoutineDef>, span: Duration) {
    let engine = rig.engine(config).unwrap();
    let stop = CancellationToken::new();
    let task = tokio::spawn({
        let stop = stop.clone();
        async move { engine.run(stop).await }
    });
    tokio::time::sleep(span).await;
    stop.cancel();
    task.await.unwrap();
}

fn lamp_on(name: &str, trigger: serde_json::Value) -> tau_reflex::RoutineDef {
    let mut value = json!({"name": name, "tool": "lamp", "arguments": {"state": "on"}});
    for (k, v) in trigger.as_object().unwrap() {
        value[k] = v.clone();
    }
    def(value)
}

#[tokio::test(start_paused = true)]
async fn an_every_routine_runs_once_per_period() {
    let (rig, lamp) = rig_with(Lamp::new(clock()));
    run_for(
        &rig,
        vec![lamp_on("porch", json!({"every": "10m"}))],
        Duration::from_secs(35 * 60),
    )
    .await;
    assert_eq!(
        lamp.times(),
        vec![
            at("2026-01-01T00:10:00Z"),
            at("2026-01-01T00:20:00Z"),
            at("2026-01-01T00:30:00Z")
        ]
    );
    let success = (
        "porch".to_owned(),
        "every 10m".to_owned(),
        "success".to_owned(),
        Some("lamp on".to_owned()),
    );
    assert_eq!(rig.runs(), vec![success.clone(), success.clone(), success]);
    let exempt = json!({"tool": "lamp", "status": "success", "approval": "exempt",
                        "decided_by": {"kind": "exemption", "name": "routine:porch"}});
    assert_eq!(rig.calls(), vec![exempt.clone(), exempt.clone(), exempt]);
}

#[tokio::test(start_paused = true)]
async fn a_cron_routine_fires_at_its_times_in_the_routine_zone() {
    let (mut rig, lamp) = rig_with(Lamp::new(clock()));
    rig.zone = TimeZone::get("Europe/Istanbul").unwrap();
    // 07:00 in Istanbul is 04:00Z; the clock starts at 03:00 there.
    run_for(
        &rig,
        vec![lamp_on("morning", json!({"cron": "0 7 * * *"}))],
        Duration::from_secs(53 * 3600),
    )
    .await;
    assert_eq!(
        lamp.times(),
        vec![
            at("2026-01-01T04:00:00Z"),
            at("2026-01-02T04:00:00Z"),
            at("2026-01-03T04:00:00Z")
        ]
    );
    assert!(
        rig.runs()
            .iter()
            .all(|r| r.1 == "cron 0 7 * * *" && r.2 == "success")
    );
}

#[tokio::test(start_paused = true)]
async fn an_at_routine_runs_once() {
    let (rig, lamp) = rig_with(Lamp::new(clock()));
    run_for(
        &rig,
        vec![lamp_on("once", json!({"at": "2026-01-01T02:30"}))],
        Duration::from_secs(5 * 3600),
    )
    .await;
    assert_eq!(lamp.times(), vec![at("2026-01-01T02:30:00Z")]);
}

#[tokio::test(start_paused = true)]
async fn a_routine_never_overlaps_itself() {
    let mut slow = Lamp::new(clock());
    slow.delay = Duration::from_secs(90);
    let (rig, lamp) = rig_with(slow);
    run_for(
        &rig,
        vec![lamp_on("slow", json!({"every": "1m"}))],
        Duration::from_secs(5 * 60 + 30),
    )
    .await;
    // Runs start at 1, 3 and 5 minutes; the triggers at 2 and 4 find it still running.
    assert_eq!(
        lamp.times(),
        vec![
            at("2026-01-01T00:01:00Z"),
            at("2026-01-01T00:03:00Z"),
            at("2026-01-01T00:05:00Z")
        ]
    );
    let outcomes: Vec<(String, Option<String>)> =
        rig.runs().into_iter().map(|r| (r.2, r.3)).collect();
    let still = Some("its previous run is still going".to_owned());
    assert_eq!(
        outcomes,
        vec![
            ("skipped".into(), still.clone()),
            ("success".into(), Some("lamp on".into())),
            ("skipped".into(), still),
            ("success".into(), Some("lamp on".into())),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_failing_routine_backs_off() {
    let mut broken = Lamp::new(clock());
    broken.broken = true;
    let (mut rig, lamp) = rig_with(broken);
    rig.settings.backoff_base = Duration::from_secs(120);
    rig.settings.backoff_max = Duration::from_secs(300);
    run_for(
        &rig,
        vec![lamp_on("flaky", json!({"every": "1m"}))],
        Duration::from_secs(15 * 60 + 30),
    )
    .await;
    // Fails at 1 (pause 2m), 3 (pause 4m), 7 and 12 (pause 5m, the most).
    assert_eq!(
        lamp.times(),
        vec![
            at("2026-01-01T00:01:00Z"),
            at("2026-01-01T00:03:00Z"),
            at("2026-01-01T00:07:00Z"),
            at("2026-01-01T00:12:00Z"),
        ]
    );
    let outcomes: Vec<String> = rig.runs().into_iter().map(|r| r.2).collect();
    assert_eq!(
        outcomes,
        [
            "error", "skipped", "error", "skipped", "skipped", "skipped", "error", "skipped",
            "skipped", "skipped", "skipped", "error", "skipped", "skipped", "skipped",
        ]
    );
    let first_skip = rig.runs()[1].3.clone().unwrap();
    assert_eq!(
        first_skip,
        "backing off after 1 failed runs, until 2026-01-01T00:03:00Z"
    );
}

#[tokio::test(start_paused = true)]
async fn runs_missed_while_tau_was_down_are_logged_and_not_replayed() {
    let (rig, lamp) = rig_with(Lamp::new(clock()));
    let routine = lamp_on("hourly", json!({"every": "1h"}));
    // The last run was at 20:30 the day before; tau then stopped until midnight.
    rig.store
        .mark(
            "hourly",
            &routine.content_hash(),
            at("2025-12-31T19:30:00Z"),
        )
        .unwrap();
    rig.store
        .record_run(&RunRecord {
            routine: "hourly".into(),
            trigger: "every 1h".into(),
            scheduled: true,
            outcome: RoutineOutcome::Success,
            detail: None,
            tool_use_id: None,
            started_at: at("2025-12-31T20:30:00Z"),
            duration_ms: Some(1),
        })
        .unwrap();
    run_for(&rig, vec![routine], Duration::from_secs(3600)).await;
    assert_eq!(
        lamp.times(),
        vec![at("2026-01-01T00:30:00Z")],
        "nothing is replayed"
    );
    assert_eq!(
        rig.runs(),
        vec![
            (
                "hourly".into(),
                "every 1h".into(),
                "missed".into(),
                Some("3 runs from 2025-12-31T21:30:00Z to 2025-12-31T23:30:00Z fell while tau was not running; missed runs are not replayed".into())
            ),
            ("hourly".into(), "every 1h".into(), "success".into(), Some("lamp on".into())),
        ]
    );
    let stored: Vec<RoutineOutcome> = rig
        .store
        .runs("hourly", 10)
        .unwrap()
        .into_iter()
        .map(|r| r.outcome)
        .collect();
    assert_eq!(
        stored,
        vec![
            RoutineOutcome::Success,
            RoutineOutcome::Missed,
            RoutineOutcome::Success
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_disabled_routine_does_not_run_and_switching_it_on_starts_it() {
    let (mut rig, lamp) = rig_with(Lamp::new(clock()));
    rig.settings.reload_every = Duration::from_secs(1);
    let mut routine = lamp_on("porch", json!({"every": "10m"}));
    routine.enabled = Some(false);
    let engine = rig.engine(vec![routine]).unwrap();
    let stop = CancellationToken::new();
    let task = tokio::spawn({
        let (engine, stop) = (engine.clone(), stop.clone());
        async move { engine.run(stop).await }
    });
    tokio::time::sleep(Duration::from_secs(25 * 60)).await;
    assert_eq!(lamp.count(), 0);
    assert!(engine.active().is_empty());
    rig.store
        .set_enabled("porch", true, rig.clock.now())
        .unwrap();
    tokio::time::sleep(Duration::from_secs(11 * 60)).await;
    assert_eq!(engine.active(), vec!["porch".to_owned()]);
    // Counted from when it was switched on (00:25), not replayed from 00:00.
    assert_eq!(lamp.times(), vec![at("2026-01-01T00:35:00Z")]);
    stop.cancel();
    task.await.unwrap();
}
