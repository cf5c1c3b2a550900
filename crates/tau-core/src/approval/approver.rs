//! Approvers: whoever answers a tier-2 question on the conversation's channel.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use tau_protocol::{ApprovalQuestion, DecidedBy, Decision, GrantRequest};

/// What an approver says, and who said it. Only a person's yes approves: the gate refuses
/// an `Approved` from anyone else as a failed approver.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Answer {
    pub decision: Decision,
    pub decided_by: DecidedBy,
    /// What the person typed or pressed for the question's second step, when it asks for
    /// one ([`ConfirmStep`](tau_protocol::ConfirmStep)): the gate approves such a question
    /// only when this passes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmation: Option<String>,
    /// "Yes, and allow this again": the grant the person asked for with their yes. Only a
    /// person's yes to a question that offered a grant makes one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant: Option<GrantRequest>,
}

impl Answer {
    /// `decision`, decided by `decided_by`, with no second step.
    pub fn new(decision: Decision, decided_by: DecidedBy) -> Self {
        Self {
            decision,
            decided_by,
            confirmation: None,
            grant: None,
        }
    }

    /// A person on `channel` said yes.
    pub fn approved_by(channel: impl Into<String>) -> Self {
        Self::new(Decision::Approved, DecidedBy::person(channel))
    }

    /// A person on `channel` said "yes, and allow this again".
    pub fn approved_with_grant(channel: impl Into<String>, grant: GrantRequest) -> Self {
        Self {
            grant: Some(grant),
            ..Self::approved_by(channel)
        }
    }

    /// The call is refused; `decided_by` says by whom or why.
    pub fn rejected(decided_by: DecidedBy) -> Self {
        Self::new(Decision::Rejected, decided_by)
    }

    /// The answer with what the person typed or pressed for the second step.
    #[must_use]
    pub fn confirmed_with(mut self, confirmation: impl Into<String>) -> Self {
        self.confirmation = Some(confirmation.into());
        self
    }
}

/// An approver that could not produce an answer. The gate refuses the call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ApproverError {
    pub message: String,
    /// What the model reads instead of the refusal text, when the approver knows that
    /// nobody was asked (a channel that has no way to ask): "the user did not approve"
    /// would be untrue. A fixed text of the approver's crate, tested byte for byte there.
    pub model_text: Option<String>,
}

impl ApproverError {
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            model_text: None,
        }
    }

    /// Nobody could be asked: the model reads `model_text`, the audit log `message`.
    pub fn nobody_asked(message: impl Into<String>, model_text: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            model_text: Some(model_text.into()),
        }
    }
}

/// Asks a person on one channel. `decide` must be cancel-safe: the gate drops the future
/// when its timeout runs out, and the question must then be withdrawn.
#[async_trait]
pub trait Approver: Send + Sync {
    fn name(&self) -> &str;

    async fn decide(&self, request: ApprovalQuestion) -> Result<Answer, ApproverError>;

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

    async fn decide(&self, _request: ApprovalQuestion) -> Result<Answer, ApproverError> {
        Ok(Answer::rejected(DecidedBy::Policy))
    }
}

/// Plays scripted answers in order and records every request, for tests. When the
/// script runs out it fails, and the gate refuses.
#[derive(Clone, Default)]
pub struct ScriptedApprover {
    answers: Arc<Mutex<VecDeque<Answer>>>,
    requests: Arc<Mutex<Vec<ApprovalQuestion>>>,
}

impl ScriptedApprover {
    /// Decisions a person on the `scripted` channel makes.
    pub fn new(decisions: impl IntoIterator<Item = Decision>) -> Self {
        Self::answers(
            decisions
                .into_iter()
                .map(|decision| Answer::new(decision, DecidedBy::person("scripted"))),
        )
    }

    /// Whole answers, for a wait that ends without a person (`end_of_input`, ...).
    pub fn answers(answers: impl IntoIterator<Item = Answer>) -> Self {
        Self {
            answers: Arc::new(Mutex::new(answers.into_iter().collect())),
            requests: Arc::default(),
        }
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<ApprovalQuestion> {
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

    async fn decide(&self, request: ApprovalQuestion) -> Result<Answer, ApproverError> {
        self.requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(request);
        self.answers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop_front()
            .ok_or_else(|| ApproverError::new("the scripted approver has no decision left"))
    }
}
