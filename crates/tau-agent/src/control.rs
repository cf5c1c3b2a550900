//! Per-invocation controls: limits, throttling retries and cancellation.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::model::{AgentStop, Usage};

/// Budgets of one invocation; `None` is unlimited. Checked before each model call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    /// Model calls.
    pub max_turns: Option<u32>,
    pub max_output_tokens: Option<u64>,
    pub max_total_tokens: Option<u64>,
}

impl Limits {
    /// The stop reason when a budget is spent, before the next model call.
    pub(crate) fn exceeded(&self, calls: u32, usage: Usage) -> Option<AgentStop> {
        if self.max_turns.is_some_and(|max| calls >= max) {
            return Some(AgentStop::LimitTurns);
        }
        if self
            .max_output_tokens
            .is_some_and(|max| usage.output_tokens >= max)
        {
            return Some(AgentStop::LimitOutputTokens);
        }
        if self
            .max_total_tokens
            .is_some_and(|max| usage.total_tokens >= max)
        {
            return Some(AgentStop::LimitTotalTokens);
        }
        None
    }
}

/// How throttled model calls are retried: exponential backoff from `initial_delay`, capped
/// at `max_delay`; a provider's retry-after wins when it is shorter than the cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included. 1 means no retry.
    pub max_attempts: u32,
    pub initial_delay: Duration,
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 6,
            initial_delay: Duration::from_secs(4),
            max_delay: Duration::from_secs(240),
        }
    }
}

impl RetryPolicy {
    /// The wait before attempt `attempt + 1`, after `attempt` (1-based) was throttled.
    pub(crate) fn delay(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        let backoff = self
            .initial_delay
            .saturating_mul(2u32.saturating_pow(attempt.saturating_sub(1)));
        retry_after.unwrap_or(backoff).min(self.max_delay)
    }
}

/// Cancels whichever invocation of its agent is running.
#[derive(Debug, Clone, Default)]
pub struct CancelHandle {
    current: Arc<Mutex<CancellationToken>>,
}

impl CancelHandle {
    pub fn cancel(&self) {
        self.current
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .cancel();
    }

    /// A fresh token for a new invocation; a cancel from before it does not carry over.
    pub(crate) fn begin(&self) -> CancellationToken {
        let token = CancellationToken::new();
        *self.current.lock().unwrap_or_else(PoisonError::into_inner) = token.clone();
        token
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_stop_before_the_next_call() {
        let limits = Limits {
            max_turns: Some(2),
            max_output_tokens: Some(10),
            max_total_tokens: Some(50),
        };
        let used = |output, total| Usage {
            input_tokens: 0,
            output_tokens: output,
            total_tokens: total,
        };
        assert_eq!(limits.exceeded(1, used(9, 49)), None);
        assert_eq!(limits.exceeded(2, used(0, 0)), Some(AgentStop::LimitTurns));
        assert_eq!(
            limits.exceeded(1, used(10, 10)),
            Some(AgentStop::LimitOutputTokens)
        );
        assert_eq!(
            limits.exceeded(1, used(0, 50)),
            Some(AgentStop::LimitTotalTokens)
        );
        assert_eq!(
            Limits::default().exceeded(u32::MAX, used(u64::MAX, u64::MAX)),
            None
        );
    }

    #[test]
    fn backoff_doubles_and_is_capped() {
        let policy = RetryPolicy {
            max_attempts: 10,
            initial_delay: Duration::from_secs(4),
            max_delay: Duration::from_secs(20),
        };
        let delays: Vec<_> = (1..=5).map(|a| policy.delay(a, None).as_secs()).collect();
        assert_eq!(delays, vec![4, 8, 16, 20, 20]);
        assert_eq!(
            policy.delay(1, Some(Duration::from_secs(1))),
            Duration::from_secs(1)
        );
        assert_eq!(
            policy.delay(1, Some(Duration::from_secs(999))),
            Duration::from_secs(20)
        );
        assert_eq!(policy.delay(u32::MAX, None), Duration::from_secs(20));
    }
}
