//! One run of a routine's action, through the gate: a fixed call goes through
//! `gated_call` (or, asked on its `ask` channel, `stored_gated_call`) on a gate of its own
//! that holds only this routine's exemption; a prompt
//! goes to the host as one turn. Every run ends as a `RunRecord`, stored and audited.

use std::sync::Arc;
use std::time::Instant;

use jiff::Timestamp;
use tau_agent::ToolContext;
use tau_core::{
    AuditEvent, AutoRejectApprover, EventBus, RoutineOutcome, TierGate, ToolCatalog, gated_call,
    random_id, stored_gated_call,
};
use tau_protocol::{Approval, CallStatus};
use tokio_util::sync::CancellationToken;

use crate::ask::{Asking, origin_note};
use crate::exemption::add_exemption;
use crate::host::{PromptRun, PromptRunner};
use crate::store::{RoutineStore, RunRecord};
use crate::validate::{Action, Routine};

/// Longest detail kept for a run (a result's start, a refusal's reason).
const DETAIL_CHARS: usize = 200;

/// Everything one run needs.
pub struct ActionRun<'a> {
    pub routine: &'a Routine,
    /// What fired it, in words (`manual` for a person's `tau routines run`).
    pub trigger: String,
    pub scheduled: bool,
    /// The session its turns and questions belong to (`Routine::session` unless the host
    /// says otherwise).
    pub session: tau_protocol::SessionId,
    pub catalog: &'a Arc<ToolCatalog>,
    pub events: &'a EventBus,
    /// How a call the exemption does not cover is asked.
    pub asking: Asking<'a>,
    pub prompts: &'a dyn PromptRunner,
    pub cancel: CancellationToken,
    pub started_at: Timestamp,
}

fn approval_word(approval: Approval) -> &'static str {
    match approval {
        Approval::NotRequired => "not required",
        Approval::Approved => "approved",
        Approval::Rejected => "rejected",
        Approval::Timeout => "timed out",
        Approval::Exempt => "exempt",
        Approval::Granted => "granted",
        Approval::Refused => "refused",
        Approval::Failed => "failed",
    }
}

/// Runs the action once and returns its record (not yet stored).
pub async fn run_action(run: ActionRun<'_>) -> RunRecord {
    let started = Instant::now();
    let ActionRun {
        routine,
        trigger,
        scheduled,
        session,
        catalog,
        events,
        asking,
        prompts,
        cancel,
        started_at,
    } = run;
    let (outcome, detail, tool_use_id) = match &routine.action {
        Action::Tool { tool, arguments } => {
            let id = match random_id("rt") {
                Ok(id) => id,
                Err(error) => {
                    return RunRecord {
                        routine: routine.name().to_owned(),
                        trigger,
                        scheduled,
                        outcome: RoutineOutcome::Error,
                        detail: Some(error.to_string()),
                        tool_use_id: None,
                        started_at,
                        duration_ms: None,
                    };
                }
            };
            let context =
                ToolContext::new(id.clone(), tool.clone(), None).with_cancellation(cancel);
            let done = match asking {
                Asking::Now {
                    approver,
                    channel,
                    timeout,
                } => {
                    let gate = TierGate::new(Arc::clone(catalog) as _, approver, events.clone())
                        .with_timeout(timeout)
                        .with_channel(channel);
                    let _exemption = add_exemption(&gate, routine);
                    gated_call(&gate, catalog, tool, &id, arguments.clone(), context).await
                }
                Asking::Stored { questions, answers } => {
                    let nobody_now = Arc::new(AutoRejectApprover);
                    let gate = TierGate::new(Arc::clone(catalog) as _, nobody_now, events.clone())
                        .with_durable(questions)
                        .with_card_note(origin_note(routine));
                    let _exemption = add_exemption(&gate, routine);
                    let arguments = arguments.clone();
                    stored_gated_call(&gate, catalog, tool, &id, arguments, context, answers).await
                }
            };
            let (outcome, detail) = match done.status {
                CallStatus::Success => (
                    RoutineOutcome::Success,
                    tau_protocol::ellipsized(&done.result.text(), DETAIL_CHARS),
                ),
                CallStatus::Error | CallStatus::Cancelled => (
                    RoutineOutcome::Error,
                    tau_protocol::ellipsized(&done.result.text(), DETAIL_CHARS),
                ),
                CallStatus::Refused | CallStatus::UnknownTool | CallStatus::Invalid => (
                    RoutineOutcome::Refused,
                    format!(
                        "{}, decided by {}",
                        approval_word(done.decision.verdict.approval()),
                        serde_json::to_string(&done.decision.verdict.decided_by())
                            .unwrap_or_default()
                    ),
                ),
            };
            (outcome, Some(detail), Some(id))
        }
        Action::Prompt { prompt } => {
            let turn = prompts
                .run_prompt(PromptRun {
                    routine: routine.name().to_owned(),
                    session,
                    prompt: prompt.clone(),
                    ask: routine.ask,
                    trigger: trigger.clone(),
                })
                .await;
            match turn {
                Ok(done) => (
                    done.outcome,
                    done.detail
                        .map(|d| tau_protocol::ellipsized(&d, DETAIL_CHARS)),
                    None,
                ),
                Err(error) => (
                    RoutineOutcome::Error,
                    Some(tau_protocol::ellipsized(&error.to_string(), DETAIL_CHARS)),
                    None,
                ),
            }
        }
    };
    RunRecord {
        routine: routine.name().to_owned(),
        trigger,
        scheduled,
        outcome,
        detail,
        tool_use_id,
        started_at,
        duration_ms: Some(u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)),
    }
}

/// Stores a run and writes its `routine_run` audit event. A store that fails is logged:
/// the audit log still has the run.
pub fn record(store: &RoutineStore, events: &EventBus, run: &RunRecord) {
    record_counted(store, events, run, None);
}

/// [`record`] for a line that stands for `count` runs (triggers skipped in one window).
pub(crate) fn record_counted(
    store: &RoutineStore,
    events: &EventBus,
    run: &RunRecord,
    count: Option<u64>,
) {
    match run.outcome {
        RoutineOutcome::Success => {
            tracing::info!(routine = %run.routine, trigger = %run.trigger, "routine ran");
        }
        RoutineOutcome::Error
        | RoutineOutcome::Refused
        | RoutineOutcome::Skipped
        | RoutineOutcome::Missed => {
            tracing::warn!(routine = %run.routine, trigger = %run.trigger, outcome = run.outcome.as_str(), detail = ?run.detail, "routine did not run through");
        }
    }
    if let Err(error) = store.record_run(run) {
        tracing::error!(routine = %run.routine, %error, "could not store a routine run");
    }
    events.emit(&AuditEvent::RoutineRun {
        routine: run.routine.clone(),
        trigger: run.trigger.clone(),
        outcome: run.outcome,
        detail: run.detail.clone(),
        tool_use_id: run.tool_use_id.clone(),
        duration_ms: run.duration_ms,
        count,
    });
}
