//! Long polling. The offset moves past an update only once the update was handled, so a
//! restart sees again what was not handled and never what was (presses included: an answer
//! is never applied twice). 429 waits as long as Telegram asks; 409 (another poller with
//! the same token, or a webhook) and 401 (a refused token) end polling with one clear
//! error, which stops this channel alone; a lost connection is retried with growing
//! pauses.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio::time::{Instant, sleep};

use crate::api::{ApiError, BotApi};
use crate::updates::{self, Update};

/// The longest wait a 429 is granted; a larger `retry_after` is odd and capped.
const MAX_RETRY_AFTER: u64 = 3600;

/// Receives each update, in order; returns once it was handled.
#[async_trait]
pub(crate) trait Handler: Send + Sync {
    async fn handle(&self, update: Update);
    /// Every update before `offset` was handled (store it, so a restart starts there).
    fn handled_until(&self, offset: i64);
}

/// How polling paces itself.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pacing {
    /// The long poll's wait, in seconds.
    pub timeout_seconds: u32,
    /// The shortest time between two polls that brought nothing.
    pub min_interval: Duration,
    /// The first and the longest pause after a failure.
    pub backoff_min: Duration,
    pub backoff_max: Duration,
}

/// Why polling stopped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PollError {
    #[error(transparent)]
    Conflict(ApiError),
    #[error(transparent)]
    Unauthorized(ApiError),
}

/// Polls until a failure no retry can mend. `offset` is where the last run stopped.
pub(crate) async fn poll(
    api: &BotApi,
    handler: Arc<dyn Handler>,
    mut offset: Option<i64>,
    pacing: Pacing,
) -> PollError {
    let mut backoff = pacing.backoff_min;
    loop {
        let started = Instant::now();
        match api.get_updates(offset, pacing.timeout_seconds).await {
            Ok(batch) => {
                backoff = pacing.backoff_min;
                let empty = batch.is_empty();
                for value in batch {
                    let Some(update) = updates::read(&value) else {
                        tracing::warn!("telegram: an update without update_id was ignored");
                        continue;
                    };
                    if offset.is_some_and(|o| update.id < o) {
                        // Seen and handled already (a server that ignores the offset).
                        continue;
                    }
                    let next = update.id.saturating_add(1);
                    handler.handle(update).await;
                    offset = Some(next);
                    handler.handled_until(next);
                }
                let elapsed = started.elapsed();
                if empty && elapsed < pacing.min_interval {
                    sleep(pacing.min_interval - elapsed).await;
                }
            }
            Err(ApiError::TooManyRequests(seconds)) => {
                tracing::warn!(seconds, "telegram: too many requests; waiting as asked");
                sleep(Duration::from_secs(seconds.clamp(1, MAX_RETRY_AFTER))).await;
            }
            // The hub logs and audits a channel that stops, once.
            Err(error @ ApiError::Conflict(_)) => return PollError::Conflict(error),
            Err(error @ ApiError::Unauthorized { .. }) => return PollError::Unauthorized(error),
            Err(error) => {
                tracing::warn!(
                    retry_in_ms = backoff.as_millis() as u64,
                    "telegram: {error}"
                );
                sleep(backoff).await;
                backoff = (backoff * 2).min(pacing.backoff_max);
            }
        }
    }
}
