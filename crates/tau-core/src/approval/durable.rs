//! Durable approvals: a tier-2 question that outlives the process that asked it.
//!
//! In a hub conversation the gate does not wait in memory. It writes an [`ApprovalRow`]
//! (an unguessable id, the call, its arguments as canonical JSON and their SHA-256, the
//! channel, a deadline, state `pending`), and the turn stops. A channel answers with a
//! compare-and-set on the row (the first answer wins); the hub resumes the turn, and
//! before the call runs the gate checks the row again — approved, not yet consumed
//! (consuming is a second compare-and-set), not past its deadline, the tool registered
//! with the same tier, the arguments hashing to the same SHA-256. So what was approved is
//! what runs, exactly once, however many restarts lie between question and answer.
//!
//! This module holds the rows' shape, the store trait and an in-memory store; the hub
//! keeps them in `state.db`.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::{Mutex, PoisonError};

use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use tau_protocol::{ApprovalQuestion, CallCard, DecidedBy, Tier};

use crate::display::sorted_json;

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

/// One durable question and its fate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalRow {
    pub id: String,
    pub session: String,
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
    /// When the approved call was let through; set once.
    pub consumed_at: Option<Timestamp>,
    /// What tau said about the call on its card when it asked.
    pub card: CallCard,
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
        }
    }
}

/// A question about to be stored.
#[derive(Debug, Clone, PartialEq)]
pub struct NewApproval {
    pub id: String,
    pub session: String,
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
        }
    }
}

/// Canonical JSON of `arguments` (keys sorted at every depth, no spaces) and its SHA-256.
pub fn canonical_arguments(arguments: &Value) -> (String, String) {
    let canonical = sorted_json(arguments);
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
}

/// The store could not be read or written; whatever was being decided is refused.
#[derive(Debug, thiserror::Error)]
#[error("approval store: {0}")]
pub struct StoreError(pub String);

/// Where durable questions live. Every write is a compare-and-set, durable when it
/// returns.
pub trait ApprovalStore: Send + Sync {
    /// Stores a new `pending` row. An id that exists already is an error.
    fn create(&self, row: ApprovalRow) -> Result<(), StoreError>;
    fn get(&self, id: &str) -> Result<Option<ApprovalRow>, StoreError>;
    /// `pending -> to` (to is not `pending`), recording who decided and when.
    fn decide(
        &self,
        id: &str,
        to: ApprovalState,
        decided_by: &DecidedBy,
        at: Timestamp,
    ) -> Result<Answered, StoreError>;
    /// Marks an approved, unconsumed row consumed; false when it was not both.
    fn consume(&self, id: &str, at: Timestamp) -> Result<bool, StoreError>;
    /// Rows in `state`, oldest first; all of them when `state` is `None`.
    fn list(&self, state: Option<ApprovalState>) -> Result<Vec<ApprovalRow>, StoreError>;
}

/// Rows in memory, for tests and one-off runs.
#[derive(Debug, Default)]
pub struct MemoryApprovals {
    rows: Mutex<BTreeMap<String, ApprovalRow>>,
}

impl MemoryApprovals {
    fn rows(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, ApprovalRow>> {
        self.rows.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Changes a stored row behind the gate's back, as an attacker with the database could.
    pub fn tamper(&self, id: &str, change: impl FnOnce(&mut ApprovalRow)) {
        if let Some(row) = self.rows().get_mut(id) {
            change(row);
        }
    }
}

impl ApprovalStore for MemoryApprovals {
    fn create(&self, row: ApprovalRow) -> Result<(), StoreError> {
        let mut rows = self.rows();
        if rows.contains_key(&row.id) {
            return Err(StoreError(format!("approval '{}' exists already", row.id)));
        }
        rows.insert(row.id.clone(), row);
        Ok(())
    }

    fn get(&self, id: &str) -> Result<Option<ApprovalRow>, StoreError> {
        Ok(self.rows().get(id).cloned())
    }

    fn decide(
        &self,
        id: &str,
        to: ApprovalState,
        decided_by: &DecidedBy,
        at: Timestamp,
    ) -> Result<Answered, StoreError> {
        if to == ApprovalState::Pending {
            return Err(StoreError("a question cannot be decided as pending".into()));
        }
        let mut rows = self.rows();
        let Some(row) = rows.get_mut(id) else {
            return Ok(Answered::NotFound);
        };
        if row.state != ApprovalState::Pending {
            return Ok(Answered::AlreadyDecided(row.clone()));
        }
        row.state = to;
        row.decided_by = Some(decided_by.clone());
        row.decided_at = Some(at);
        Ok(Answered::Decided(row.clone()))
    }

    fn consume(&self, id: &str, at: Timestamp) -> Result<bool, StoreError> {
        let mut rows = self.rows();
        match rows.get_mut(id) {
            Some(row) if row.state == ApprovalState::Approved && row.consumed_at.is_none() => {
                row.consumed_at = Some(at);
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    fn list(&self, state: Option<ApprovalState>) -> Result<Vec<ApprovalRow>, StoreError> {
        let mut rows: Vec<_> = self
            .rows()
            .values()
            .filter(|r| state.is_none_or(|s| r.state == s))
            .cloned()
            .collect();
        rows.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
        Ok(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn row(id: &str) -> ApprovalRow {
        NewApproval {
            id: id.into(),
            session: "s1".into(),
            call_id: "t1".into(),
            tool: "lights".into(),
            tier: Tier::Physical,
            effect: "switches lights".into(),
            arguments: json!({"room": "kitchen", "a": [2, 1]}),
            channel: "web".into(),
            created_at: Timestamp::UNIX_EPOCH,
            deadline: Timestamp::UNIX_EPOCH,
            card: Default::default(),
        }
        .into_row()
    }

    #[test]
    fn canonical_arguments_sort_keys_at_every_depth_and_hash_them() {
        let (text, hash) = canonical_arguments(&json!({"b": {"y": 1, "x": 2}, "a": "é"}));
        assert_eq!(text, r#"{"a":"é","b":{"x":2,"y":1}}"#);
        assert_eq!(hash.len(), 64);
        let (_, same) = canonical_arguments(&json!({"a": "é", "b": {"x": 2, "y": 1}}));
        assert_eq!(hash, same, "key order does not change the hash");
        let (_, other) = canonical_arguments(&json!({"a": "é", "b": {"x": 2, "y": 2}}));
        assert_ne!(hash, other);
    }

    #[test]
    fn the_first_answer_wins_and_later_ones_learn_the_final_state() {
        let store = MemoryApprovals::default();
        store.create(row("ap_1")).unwrap();
        let person = DecidedBy::person("web");
        let Answered::Decided(decided) = store
            .decide(
                "ap_1",
                ApprovalState::Approved,
                &person,
                Timestamp::UNIX_EPOCH,
            )
            .unwrap()
        else {
            panic!("the first answer decides");
        };
        assert_eq!(decided.state, ApprovalState::Approved);
        for to in [ApprovalState::Rejected, ApprovalState::Approved] {
            let again = store
                .decide("ap_1", to, &DecidedBy::Timeout, Timestamp::UNIX_EPOCH)
                .unwrap();
            assert_eq!(again, Answered::AlreadyDecided(decided.clone()));
        }
        assert_eq!(
            store
                .decide(
                    "nope",
                    ApprovalState::Approved,
                    &person,
                    Timestamp::UNIX_EPOCH
                )
                .unwrap(),
            Answered::NotFound
        );
        assert!(store.create(row("ap_1")).is_err(), "ids are never reused");
    }

    #[test]
    fn an_approved_row_is_consumed_once() {
        let store = MemoryApprovals::default();
        store.create(row("ap_1")).unwrap();
        assert!(
            !store.consume("ap_1", Timestamp::UNIX_EPOCH).unwrap(),
            "pending"
        );
        store
            .decide(
                "ap_1",
                ApprovalState::Approved,
                &DecidedBy::person("web"),
                Timestamp::UNIX_EPOCH,
            )
            .unwrap();
        assert!(store.consume("ap_1", Timestamp::UNIX_EPOCH).unwrap());
        assert!(!store.consume("ap_1", Timestamp::UNIX_EPOCH).unwrap());
    }
}
