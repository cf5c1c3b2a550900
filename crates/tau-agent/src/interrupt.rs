//! Interrupts: a before-tool-call hook pauses the invocation until the caller answers.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::message::{Message, ToolResult};

/// A question a hook asked; `response` is filled when the caller resumes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Interrupt {
    pub id: String,
    pub name: String,
    pub reason: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<Value>,
}

/// Returned by [`crate::BeforeToolCallEvent::interrupt`] when no answer exists yet; a hook
/// hands it back with `?`. Only the loop can make one.
#[derive(Debug)]
pub struct InterruptRaised(pub(crate) Box<Interrupt>);

/// The caller's answer to one interrupt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InterruptResponse {
    pub interrupt_id: String,
    pub response: Value,
}

/// What the loop keeps while an invocation waits on interrupts. Saved with the session.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InterruptState {
    pub activated: bool,
    pub interrupts: BTreeMap<String, Interrupt>,
    /// The assistant message whose tool uses were being executed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_use_message: Option<Message>,
    /// Results of the tool uses that finished before the pause; they do not run again.
    #[serde(default)]
    pub tool_results: Vec<ToolResult>,
}

impl InterruptState {
    /// Clears the state, leaving no pending question.
    pub fn deactivate(&mut self) {
        *self = Self::default();
    }

    /// Every interrupt of an invocation that has not finished, answered or not, in id
    /// order: an invocation resumed with its answers and cut off before it finished (the
    /// process died while the resumed calls ran) still waits on them.
    pub fn unfinished(&self) -> Vec<Interrupt> {
        if !self.activated {
            return Vec::new();
        }
        self.interrupts.values().cloned().collect()
    }

    /// The pending interrupts (no response yet), in id order.
    pub fn pending(&self) -> Vec<Interrupt> {
        self.interrupts
            .values()
            .filter(|i| i.response.is_none())
            .cloned()
            .collect()
    }

    pub(crate) fn responses(&self) -> BTreeMap<String, Value> {
        self.interrupts
            .iter()
            .filter_map(|(id, i)| i.response.clone().map(|r| (id.clone(), r)))
            .collect()
    }
}

/// The deterministic id of an interrupt raised for one tool use.
pub fn interrupt_id(tool_use_id: &str, name: &str) -> String {
    format!("v1:before_tool_call:{tool_use_id}:{name}")
}
