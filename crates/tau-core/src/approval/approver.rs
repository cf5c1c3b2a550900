//! Approvers: whoever answers a tier-2 question on the conversation's channel.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::events::Decision;
use crate::tier::Tier;

/// The question put to a person.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalRequest {
    pub tool: String,
    pub tier: Tier,
    /// One line a person reads: what the call will do.
    pub effect: String,
    /// A copy of the arguments; changing it changes nothing that runs.
    pub arguments: Value,
    pub tool_use_id: String,
    pub channel: String,
}

/// An approver that could not produce an answer. The gate refuses the call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ApproverError {
    pub message: String,
}

impl ApproverError {
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }
}

/// Asks a person on one channel. `decide` must be cancel-safe: the gate drops the future
/// when its timeout runs out, and the question must then be withdrawn.
#[async_trait]
pub trait Approver: Send + Sync {
    fn name(&self) -> &str;

    async fn decide(&self, request: ApprovalRequest) -> Result<Decision, ApproverError>;

    /// How long this channel naturally waits for an answer; the gate's own timeout wins.
    fn timeout(&self) -> Option<Duration> {
        None
    }
}

/// The approver when a channel supplies none: every tier-2 call is refused.
#[derive(Debug, Clone, Copy, Default)]
pub struct AutoRejectApprover;

#[async_trait]
impl Approver for AutoRejectApprover {
    fn name(&self) -> &str {
        "auto_reject"
    }

    async fn decide(&self, _request: ApprovalRequest) -> Result<Decision, ApproverError> {
        Ok(Decision::Rejected)
    }
}

/// Plays scripted decisions in order and records every request, for tests. When the
/// script runs out it fails, and the gate refuses.
#[derive(Clone, Default)]
pub struct ScriptedApprover {
    decisions: Arc<Mutex<VecDeque<Decision>>>,
    requests: Arc<Mutex<Vec<ApprovalRequest>>>,
}

impl ScriptedApprover {
    pub fn new(decisions: impl IntoIterator<Item = Decision>) -> Self {
        Self {
            decisions: Arc::new(Mutex::new(decisions.into_iter().collect())),
            requests: Arc::default(),
        }
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<ApprovalRequest> {
        self.requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

#[async_trait]
impl Approver for ScriptedApprover {
    fn name(&self) -> &str {
        "scripted"
    }

    async fn decide(&self, request: ApprovalRequest) -> Result<Decision, ApproverError> {
        self.requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(request);
        self.decisions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop_front()
            .ok_or_else(|| ApproverError::new("the scripted approver has no decision left"))
    }
}
