//! The wall clock routines are scheduled by. Tests drive it from tokio's paused time, so a
//! day of cron runs takes no real time.

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};

/// Where "now" comes from.
pub trait Clock: Send + Sync {
    fn now(&self) -> Timestamp;
}

/// The system's clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }
}

/// A wall clock that starts at `start` and moves with tokio's clock: under paused time it
/// jumps when the runtime auto-advances, so schedules can be tested at full speed.
#[derive(Debug, Clone, Copy)]
pub struct TokioClock {
    start: Timestamp,
    origin: tokio::time::Instant,
}

impl TokioClock {
    pub fn starting_at(start: Timestamp) -> Self {
        Self {
            start,
            origin: tokio::time::Instant::now(),
        }
    }
}

impl Clock for TokioClock {
    fn now(&self) -> Timestamp {
        let elapsed =
            SignedDuration::try_from(self.origin.elapsed()).unwrap_or(SignedDuration::MAX);
        self.start.checked_add(elapsed).unwrap_or(Timestamp::MAX)
    }
}

/// The time from `now` until `then`, zero when it has passed.
pub(crate) fn until(now: Timestamp, then: Timestamp) -> Duration {
    Duration::try_from(then.duration_since(now)).unwrap_or(Duration::ZERO)
}
