//! Turn events: what the loop streams to its caller while an invocation runs.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

use crate::message::{ToolResult, ToolUse};
use crate::model::{AgentStop, Usage};

/// One thing that happened during a turn, in the order it happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum TurnEvent {
    /// A piece of the model's answer text.
    TextDelta { text: String },
    /// The model asked for a tool; sent once its input is complete.
    ToolUse { tool_use: ToolUse },
    /// A running tool's own progress message.
    ToolProgress {
        tool_use_id: String,
        name: String,
        message: String,
    },
    /// The result the model will read for one tool use.
    ToolResult { result: ToolResult },
    /// The provider throttled us; the call is retried after `delay`.
    Throttled {
        attempt: u32,
        #[serde(with = "duration_ms")]
        delay: Duration,
    },
    /// The conversation was too long; the oldest `removed` messages were dropped.
    ContextReduced { removed: usize },
    /// The invocation ended.
    Stop { reason: AgentStop, usage: Usage },
}

/// Where a turn's events go: a channel, or a callback that runs in the loop's own task,
/// so what it prints is in order with everything else the turn does (an approval prompt
/// never overtakes the tool call it is about). Sending never blocks and never fails the
/// turn; a callback must return quickly.
pub struct Sink<T> {
    deliver: Arc<dyn Fn(T) + Send + Sync>,
}

/// Where turn events go.
pub type EventSink = Sink<TurnEvent>;

impl<T: Send + 'static> Sink<T> {
    /// A sink and the receiver that reads it.
    pub fn channel() -> (Self, mpsc::UnboundedReceiver<T>) {
        let (sender, receiver) = mpsc::unbounded_channel();
        // A closed receiver means nobody watches this turn any more; the turn goes on.
        let sink = Self::from_fn(move |event| {
            let _ = sender.send(event);
        });
        (sink, receiver)
    }

    /// A sink that calls `deliver` for every event, in the loop's task.
    pub fn from_fn(deliver: impl Fn(T) + Send + Sync + 'static) -> Self {
        Self {
            deliver: Arc::new(deliver),
        }
    }

    pub fn send(&self, event: T) {
        (self.deliver)(event);
    }
}

impl<T> Clone for Sink<T> {
    fn clone(&self) -> Self {
        Self {
            deliver: Arc::clone(&self.deliver),
        }
    }
}

impl<T> std::fmt::Debug for Sink<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sink")
    }
}

pub(crate) mod duration_ms {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(
        value: &Duration,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.serialize_u64(u64::try_from(value.as_millis()).unwrap_or(u64::MAX))
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Duration, D::Error> {
        Ok(Duration::from_millis(u64::deserialize(deserializer)?))
    }
}
