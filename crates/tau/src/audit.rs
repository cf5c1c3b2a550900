//! `tau audit verify`, `tau audit head` and `tau grants stats` as commands, TauBar's
//! history of decisions and the witness's daily send: the wiring of `tau-audit`, which
//! owns the log and what is read from it.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use tau_protocol::DecisionRow;
use tau_state::StateDb;
use tau_telegram::TelegramChannel;
use tau_web::DecisionsError;
use tokio_util::sync::CancellationToken;

use crate::context::Context;
use crate::errors::usage;

/// How often the head is sent while `tau serve` runs.
const EVERY: Duration = Duration::from_secs(24 * 60 * 60);
/// How soon a send that failed (the Bot API out of reach) is tried again.
const RETRY: Duration = Duration::from_secs(60);

/// The report of `tau audit verify`, and whether it vouches for the whole log.
pub(crate) fn verify_command(ctx: &Context, from: Option<&str>) -> anyhow::Result<(String, bool)> {
    let kept = from
        .map(tau_audit::parse_head)
        .transpose()
        .map_err(|error| usage(error.to_string()))?;
    let state = ctx.existing_state()?;
    Ok(tau_audit::verify_report(
        &ctx.home.audit_log(),
        state.as_ref(),
        kept.as_ref(),
    )?)
}

/// The head of an intact log, or the report of why there is none.
pub(crate) fn head_command(ctx: &Context) -> anyhow::Result<(String, bool)> {
    let state = ctx.existing_state()?;
    Ok(tau_audit::head_report(
        &ctx.home.audit_log(),
        state.as_ref(),
    )?)
}

/// `tau grants stats`.
pub(crate) fn grant_stats(ctx: &Context) -> anyhow::Result<String> {
    Ok(tau_audit::grant_stats(
        &ctx.home.audit_log(),
        Timestamp::now(),
    )?)
}

/// The audit log as TauBar's history of decisions.
pub(crate) struct Decisions(pub tau_audit::AuditDecisions);

impl tau_web::Decisions for Decisions {
    fn recent(&self) -> Result<Vec<DecisionRow>, DecisionsError> {
        self.0.recent().map_err(DecisionsError::Read)
    }
}

/// Sends the head of the log at `log` to Telegram's first owner now and every day, until
/// `stop`.
pub(crate) fn start_witness(
    log: PathBuf,
    state: StateDb,
    telegram: Arc<TelegramChannel>,
    stop: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            let path = log.clone();
            let state = state.clone();
            let text =
                tokio::task::spawn_blocking(move || tau_audit::witness_message(&path, &state))
                    .await
                    .unwrap_or_else(|error| {
                        format!("tau audit: the head could not be read: {error}")
                    });
            let wait = match telegram.tell_owner(&text).await {
                Ok(()) => EVERY,
                Err(error) => {
                    tracing::warn!(%error, "audit witness: cannot send the head to Telegram");
                    RETRY
                }
            };
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(wait) => {}
            }
        }
    })
}
