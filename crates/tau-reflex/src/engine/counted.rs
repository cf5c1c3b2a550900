//! What the engine counts instead of recording one by one: triggers skipped while their
//! routine ran or backed off, and webhook calls refused before their body. One run record
//! or one audit line a window says how many.

use std::sync::Arc;

use tau_core::flood::Sender;
use tau_core::{AuditEvent, EventBus, RoutineOutcome};

use crate::clock::Clock;
use crate::run::record_counted;
use crate::store::{RoutineStore, RunRecord};

/// Who a summary of counted events is about, as the log and the audit line say it.
fn named(sender: &Sender<(String, String)>) -> (String, String) {
    match sender {
        Sender::One((first, second)) => (first.clone(), second.clone()),
        Sender::Others => ("(others)".to_owned(), "(others)".to_owned()),
    }
}

/// The summary of triggers skipped in one window: one run record that counts them.
pub(super) fn skips_summary(
    store: Arc<RoutineStore>,
    events: EventBus,
    clock: Arc<dyn Clock>,
) -> impl Fn(&Sender<(String, String)>, u64) + Send + Sync + 'static {
    move |sender, count| {
        let (routine, trigger) = named(sender);
        let run = RunRecord {
            routine,
            trigger,
            scheduled: true,
            outcome: RoutineOutcome::Skipped,
            detail: Some(skipped_detail(count)),
            tool_use_id: None,
            started_at: clock.now(),
            duration_ms: None,
        };
        record_counted(&store, &events, &run, Some(count));
    }
}

/// What a run record of `count` skipped triggers says.
fn skipped_detail(count: u64) -> String {
    let count = usize::try_from(count).unwrap_or(usize::MAX);
    let skipped = tau_core::counted(count, "more trigger was", "more triggers were");
    format!("{skipped} skipped while it ran or backed off")
}

/// The summary of webhook calls refused in one window: one log line, one audit line.
pub(super) fn refusals_summary(
    events: EventBus,
) -> impl Fn(&Sender<(String, String)>, u64) + Send + Sync {
    move |sender, count| {
        let (routine, sender) = named(sender);
        tracing::warn!(routine = %routine, sender = %sender, count, "webhook calls refused: wrong or missing secret");
        events.emit(&AuditEvent::WebhookRefused {
            routine,
            sender,
            reason: REFUSED_SECRET.to_owned(),
            count: Some(count),
        });
    }
}

/// Why a webhook call was refused before its body.
pub(super) const REFUSED_SECRET: &str = "wrong or missing secret";

#[cfg(test)]
mod tests {
    use super::skipped_detail;

    #[test]
    fn skipped_triggers_are_counted_in_words() {
        assert_eq!(
            skipped_detail(1),
            "1 more trigger was skipped while it ran or backed off"
        );
        assert_eq!(
            skipped_detail(1200),
            "1,200 more triggers were skipped while it ran or backed off"
        );
    }
}
