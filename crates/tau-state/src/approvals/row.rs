//! What a stored question is: its row, its state, what became of its call, and what an
//! answer did to it.

use std::fmt::Write as _;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use tau_protocol::{
    ApprovalId, ApprovalQuestion, CallCard, DecidedBy, GrantOffer, GrantRequest, SessionId, Tier,
    canonical_json,
};

/// Where a question stands. Only `pending` can change, and only once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalState {
    Pending,
    Approved,
    Rejected,
    /// Its deadline passed unanswered.
    Expired,
    /// A newer message in the conversation replaced it.
    Superseded,
    /// The turn it belonged to was given up (its session deleted, the call gone).
    Cancelled,
}

impl ApprovalState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Approved => "approved",
            Self::Rejected => "rejected",
            Self::Expired => "expired",
            Self::Superseded => "superseded",
            Self::Cancelled => "cancelled",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        [
            Self::Pending,
            Self::Approved,
            Self::Rejected,
            Self::Expired,
            Self::Superseded,
            Self::Cancelled,
        ]
        .into_iter()
        .find(|s| s.as_str() == text)
    }
}

/// What became of an approved call after it was let through (`consumed_at`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallOutcome {
    /// It ran and its result was recorded.
    Finished,
    /// It was dispatched, and tau stopped before its result was stored: it may or may not
    /// have run. It is never run again.
    EffectUncertain,
}

impl CallOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Finished => "finished",
            Self::EffectUncertain => "effect_uncertain",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        [Self::Finished, Self::EffectUncertain]
            .into_iter()
            .find(|o| o.as_str() == text)
    }
}

/// One durable question and its fate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalRow {
    pub id: ApprovalId,
    pub session: SessionId,
    /// The tool use it is about.
    pub call_id: String,
    pub tool: String,
    pub tier: Tier,
    pub effect: String,
    /// The arguments as asked, in canonical JSON (sorted keys, no spaces).
    pub arguments: String,
    /// SHA-256 of `arguments`, lowercase hex.
    pub arguments_sha256: String,
    /// The channel that asked and the only one that may answer.
    pub channel: String,
    pub created_at: Timestamp,
    pub deadline: Timestamp,
    pub state: ApprovalState,
    pub decided_by: Option<DecidedBy>,
    pub decided_at: Option<Timestamp>,
    /// When the approved call was let through (dispatched); set once, before it runs.
    pub consumed_at: Option<Timestamp>,
    /// What tau said about the call on its card when it asked.
    pub card: CallCard,
    /// What became of the dispatched call; `None` before it was dispatched, and while it
    /// runs (or when tau stopped while it ran, until the next start closes it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<CallOutcome>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome_at: Option<Timestamp>,
    /// What a grant made from this question would cover ("yes, and allow this again"),
    /// when the gate offered one; its card says so in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant_offer: Option<GrantOffer>,
    /// The grant the person asked for with their yes; the gate makes it when the call is
    /// let through.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant_request: Option<GrantRequest>,
}

impl ApprovalRow {
    /// The arguments as a JSON value (for showing them).
    pub fn arguments_value(&self) -> Value {
        serde_json::from_str(&self.arguments).unwrap_or(Value::Null)
    }

    /// The question as it was asked, for a channel to show (again, after a restart).
    pub fn question(&self) -> ApprovalQuestion {
        ApprovalQuestion {
            approval_id: self.id.clone(),
            call_id: self.call_id.clone(),
            tool: self.tool.clone(),
            tier: self.tier,
            effect: self.effect.clone(),
            arguments: self.arguments_value(),
            channel: self.channel.clone(),
            deadline: Some(self.deadline.to_string()),
            card: self.card.clone(),
            grant: self.grant_offer.clone(),
        }
    }
}

/// A question about to be stored.
#[derive(Debug, Clone, PartialEq)]
pub struct NewApproval {
    pub id: ApprovalId,
    pub session: SessionId,
    pub call_id: String,
    pub tool: String,
    pub tier: Tier,
    pub effect: String,
    pub arguments: Value,
    pub channel: String,
    pub created_at: Timestamp,
    pub deadline: Timestamp,
    pub card: CallCard,
}

impl NewApproval {
    /// The row as stored: canonical arguments and their hash, `pending`.
    pub fn into_row(self) -> ApprovalRow {
        let (arguments, arguments_sha256) = canonical_arguments(&self.arguments);
        ApprovalRow {
            id: self.id,
            session: self.session,
            call_id: self.call_id,
            tool: self.tool,
            tier: self.tier,
            effect: self.effect,
            arguments,
            arguments_sha256,
            channel: self.channel,
            created_at: self.created_at,
            deadline: self.deadline,
            state: ApprovalState::Pending,
            decided_by: None,
            decided_at: None,
            consumed_at: None,
            card: self.card,
            outcome: None,
            outcome_at: None,
            grant_offer: None,
            grant_request: None,
        }
    }
}

/// Canonical JSON of `arguments` (keys sorted at every depth, no spaces) and its SHA-256,
/// lowercase hex.
pub fn canonical_arguments(arguments: &Value) -> (String, String) {
    let canonical = canonical_json(arguments);
    let digest = Sha256::digest(canonical.as_bytes());
    let mut hex = String::with_capacity(64);
    for byte in digest {
        let _ = write!(hex, "{byte:02x}");
    }
    (canonical, hex)
}

/// What an answer did to a row.
#[derive(Debug, Clone, PartialEq)]
pub enum Answered {
    /// This answer decided the question.
    Decided(ApprovalRow),
    /// It was already decided (or expired, superseded, cancelled); nothing changed. The row
    /// says how. Repeating the winning answer lands here too.
    AlreadyDecided(ApprovalRow),
    /// No question has that id.
    NotFound,
    /// A yes without the second step the question's card asks for (the device's name or
    /// its number); nothing changed, the question is still open.
    StepMissing(ApprovalRow),
    /// Nothing waited for the answer any more (no paused turn, no routine's run): it was
    /// not used, and the question was closed (`cancelled`) instead; the row says so. The
    /// hub's word: the store never answers this.
    NotUsed(ApprovalRow),
}
