//! Agent events: one serde enum for the audit log and every UI, and the bus that fans
//! them out. Imports nothing from the agent loop, so the gate can emit them anywhere.

use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::tier::Tier;

/// What the person decided about one tier-2 call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Approved,
    #[default]
    Rejected,
    /// The wait ended; never a person's answer.
    Timeout,
}

/// How a tool call got past (or did not get past) the gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Approval {
    /// Tier 0 or 1: nobody is asked.
    NotRequired,
    Approved,
    Rejected,
    Timeout,
    /// A registered routine's exemption let it through without asking.
    Exempt,
    /// Refused without asking: the tool is unknown or its tier is invalid.
    Refused,
    /// The approver or the gate failed; the call was refused.
    Failed,
}

/// What happened to a call, as recorded after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallStatus {
    Success,
    Error,
    /// The gate refused it; it did not run.
    Refused,
}

/// Where an error event comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorSite {
    TierGate,
    Approver,
    Exemption,
    Interrupt,
    Model,
    Session,
    Agent,
    /// An MCP server tau uses: it did not start, died or did not answer in time.
    McpServer,
}

/// One thing the hub did that a person may want to audit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AgentEvent {
    /// A tool call, whatever its tier and fate.
    ToolCall {
        tool: String,
        /// `None` when the tool is unknown or its tier is invalid.
        tier: Option<Tier>,
        tool_use_id: String,
        arguments: Value,
        status: CallStatus,
        approval: Approval,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        result_summary: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        duration_ms: Option<u64>,
    },
    /// An approver's answer, or the end of its wait.
    Approval {
        tool: String,
        tier: Tier,
        tool_use_id: String,
        arguments: Value,
        decision: Decision,
        approver: String,
        channel: String,
    },
    /// Something failed; whatever it touched was refused.
    Error {
        #[serde(rename = "where")]
        site: ErrorSite,
        message: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tool: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tool_use_id: Option<String>,
    },
    /// A turn used all its model calls.
    TurnLimit { max_turns: u32 },
    /// A turn ended.
    TurnEnd {
        stop_reason: String,
        model_calls: u32,
        input_tokens: u64,
        output_tokens: u64,
    },
}

impl AgentEvent {
    pub fn error(
        site: ErrorSite,
        message: impl Into<String>,
        tool: Option<&str>,
        tool_use_id: Option<&str>,
    ) -> Self {
        Self::Error {
            site,
            message: message.into(),
            tool: tool.map(str::to_owned),
            tool_use_id: tool_use_id.map(str::to_owned),
        }
    }
}

/// Receives every event; must be quick (the audit log appends and flushes a line).
pub trait EventSubscriber: Send + Sync {
    fn on_event(&self, event: &AgentEvent);
}

impl<F: Fn(&AgentEvent) + Send + Sync> EventSubscriber for F {
    fn on_event(&self, event: &AgentEvent) {
        self(event);
    }
}

/// Fans events out to its subscribers, in subscription order.
#[derive(Clone, Default)]
pub struct EventBus {
    subscribers: Arc<RwLock<Vec<Arc<dyn EventSubscriber>>>>,
}

impl EventBus {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn subscribe(&self, subscriber: Arc<dyn EventSubscriber>) {
        self.subscribers
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .push(subscriber);
    }

    /// Delivers `event` to every subscriber. A subscriber that panics is skipped, so it
    /// cannot take the gate down with it.
    pub fn emit(&self, event: &AgentEvent) {
        let subscribers = self
            .subscribers
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        for subscriber in subscribers {
            if std::panic::catch_unwind(AssertUnwindSafe(|| subscriber.on_event(event))).is_err() {
                tracing::error!("an event subscriber panicked");
            }
        }
    }
}

/// Keeps every event it receives, for tests and for showing a turn's events afterwards.
#[derive(Clone, Default)]
pub struct RecordedEvents {
    events: Arc<Mutex<Vec<AgentEvent>>>,
}

impl RecordedEvents {
    /// A recorder already subscribed to `bus`.
    pub fn subscribed_to(bus: &EventBus) -> Self {
        let recorder = Self::default();
        bus.subscribe(Arc::new(recorder.clone()));
        recorder
    }

    pub fn events(&self) -> Vec<AgentEvent> {
        self.events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub fn take(&self) -> Vec<AgentEvent> {
        std::mem::take(&mut *self.events.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

impl EventSubscriber for RecordedEvents {
    fn on_event(&self, event: &AgentEvent) {
        self.events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(event.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn events_serialize_as_tagged_lines() {
        let event = AgentEvent::ToolCall {
            tool: "mqtt_publish".into(),
            tier: Some(Tier::Physical),
            tool_use_id: "t1".into(),
            arguments: json!({"payload": "on", "topic": "home/light"}),
            status: CallStatus::Refused,
            approval: Approval::Rejected,
            result_summary: None,
            duration_ms: Some(3),
        };
        assert_eq!(
            serde_json::to_string(&event).unwrap(),
            r#"{"type":"tool_call","tool":"mqtt_publish","tier":2,"tool_use_id":"t1","arguments":{"payload":"on","topic":"home/light"},"status":"refused","approval":"rejected","duration_ms":3}"#
        );
        let error = AgentEvent::error(ErrorSite::TierGate, "boom", Some("x"), None);
        assert_eq!(
            serde_json::to_string(&error).unwrap(),
            r#"{"type":"error","where":"tier_gate","message":"boom","tool":"x"}"#
        );
        let back: AgentEvent =
            serde_json::from_str(&serde_json::to_string(&event).unwrap()).unwrap();
        assert_eq!(back, event);
    }

    #[test]
    fn a_panicking_subscriber_does_not_stop_the_others() {
        let bus = EventBus::new();
        bus.subscribe(Arc::new(|_: &AgentEvent| panic!("subscriber bug")));
        let recorded = RecordedEvents::subscribed_to(&bus);
        bus.emit(&AgentEvent::TurnLimit { max_turns: 3 });
        assert_eq!(
            recorded.events(),
            vec![AgentEvent::TurnLimit { max_turns: 3 }]
        );
    }
}
