//! Time triggers. Each keeps its own schedule from a reference point: when the engine
//! first kept this routine's content, its last scheduled run, or when it was switched on,
//! whichever is latest. Occurrences that fell between that point and now — while tau was
//! not running, or the machine slept — are recorded once as `missed` and not replayed.

use std::sync::Arc;
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use tau_core::RoutineOutcome;

use super::{Inner, Slot};
use crate::clock::until;
use crate::store::RunRecord;
use crate::trigger::{Trigger, next_cron};

/// Counting missed runs stops here ("at least").
const MAX_COUNTED: u32 = 100_000;
/// The longest single sleep, so a changed wall clock is noticed.
const MAX_SLEEP: Duration = Duration::from_secs(60);

/// The first occurrence strictly after `after`.
fn next_after(
    inner: &Inner,
    trigger: &Trigger,
    after: Timestamp,
    anchor: Timestamp,
) -> Option<Timestamp> {
    match trigger {
        Trigger::Every { period, .. } => {
            // Keeps the phase of `anchor`: anchor + k * period.
            let period = SignedDuration::try_from(*period).ok()?;
            let elapsed = after.duration_since(anchor);
            let periods = if elapsed.is_negative() {
                0
            } else {
                elapsed.as_nanos() / period.as_nanos().max(1)
            };
            let k = i32::try_from(periods.saturating_add(1)).ok()?;
            anchor.checked_add(period.checked_mul(k)?).ok()
        }
        Trigger::Cron { cron, .. } => next_cron(cron, &inner.zone, after),
        Trigger::At { at, .. } => (*at > after).then_some(*at),
        Trigger::Mqtt { .. } | Trigger::Webhook { .. } => None,
    }
}

/// Where this routine's schedule counts from.
fn reference(inner: &Inner, slot: &Slot, now: Timestamp) -> Timestamp {
    let name = slot.routine.name();
    let since = inner
        .store
        .mark(name, &slot.routine.content_hash, now)
        .unwrap_or(now);
    let last = inner.store.last_scheduled_run(name).ok().flatten();
    let switched = inner
        .store
        .switches()
        .ok()
        .and_then(|s| s.get(name).map(|s| s.changed_at));
    [Some(since), last, switched]
        .into_iter()
        .flatten()
        .max()
        .unwrap_or(now)
}

/// Sleeps until the wall clock reaches `target`; false when the routine was stopped.
async fn sleep_until(inner: &Inner, slot: &Slot, target: Timestamp) -> bool {
    loop {
        let now = inner.clock.now();
        if now >= target {
            return true;
        }
        let wait = until(now, target).min(MAX_SLEEP);
        tokio::select! {
            () = slot.cancel.cancelled() => return false,
            () = tokio::time::sleep(wait) => {}
        }
    }
}

/// Keeps one routine's time trigger until it is stopped (or, for `at`, has fired).
pub(super) async fn keep(inner: Arc<Inner>, slot: Arc<Slot>) {
    let trigger = slot.routine.trigger.clone();
    let now = inner.clock.now();
    let anchor = reference(&inner, &slot, now);
    let mut next = next_after(&inner, &trigger, anchor, anchor);
    if next.is_none()
        && let Trigger::At { at, .. } = &trigger
        && inner
            .store
            .last_scheduled_run(slot.routine.name())
            .ok()
            .flatten()
            .is_none()
    {
        tracing::warn!(routine = slot.routine.name(), %at, "its time passed before tau kept this routine; it will not run");
    }
    let late = SignedDuration::try_from(inner.settings.late_after).unwrap_or(SignedDuration::ZERO);
    loop {
        let Some(due) = next else {
            return;
        };
        // Occurrences already too late are missed, counted once and not run.
        let now = inner.clock.now();
        let mut missed = 0u32;
        let mut upcoming = Some(due);
        let first_missed = due;
        let mut last_missed = due;
        while let Some(at) = upcoming
            && now.duration_since(at) > late
            && missed < MAX_COUNTED
        {
            missed += 1;
            last_missed = at;
            upcoming = next_after(&inner, &trigger, at, anchor);
        }
        if missed > 0 {
            let count = if missed >= MAX_COUNTED {
                format!("at least {missed} runs")
            } else if missed == 1 {
                "1 run".to_owned()
            } else {
                format!("{missed} runs")
            };
            let span = if missed == 1 {
                format!("at {first_missed}")
            } else {
                format!("from {first_missed} to {last_missed}")
            };
            let detail = format!(
                "{count} {span} fell while tau was not running; missed runs are not replayed"
            );
            tracing::warn!(routine = slot.routine.name(), "{detail}");
            inner.record(&RunRecord {
                routine: slot.routine.name().to_owned(),
                trigger: trigger.describe(),
                scheduled: true,
                outcome: RoutineOutcome::Missed,
                detail: Some(detail),
                tool_use_id: None,
                started_at: now,
                duration_ms: None,
            });
            if missed >= MAX_COUNTED {
                upcoming = next_after(&inner, &trigger, now, anchor);
            }
        }
        let Some(due) = upcoming else {
            return;
        };
        if !sleep_until(&inner, &slot, due).await {
            return;
        }
        // A routine asking where this hub reaches nobody now is left to the hub that does:
        // it claims nothing, so that one runs it.
        if !inner.can_ask_now(&slot.routine) {
            next = next_after(&inner, &trigger, due, anchor);
            continue;
        }
        // One run per occurrence across the hubs sharing the store: the first to claim
        // it runs it. A claim that fails runs nothing (the store is not answering).
        match inner.store.claim_tick(slot.routine.name(), due) {
            Ok(true) => {
                inner.fire(&slot, trigger.describe());
            }
            Ok(false) => {}
            Err(error) => {
                tracing::warn!(routine = slot.routine.name(), %error, "cannot claim this run; it is not run");
            }
        }
        next = next_after(&inner, &trigger, due, anchor);
    }
}
