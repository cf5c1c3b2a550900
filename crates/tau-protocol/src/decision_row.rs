//! One decided tier-2 call as TauBar's history lists it (`GET /api/decisions`): read from
//! the audit log by its owner, served by the web channel, each field the log's own type.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ids::ApprovalId;
use crate::provenance::CallProvenance;
use crate::vocabulary::{CallStatus, DecidedBy, Decision};

/// How far back TauBar's history of decisions goes, in days.
pub const DECISION_HISTORY_DAYS: i64 = 30;

/// How a decision came out, in one word a person can filter by: the decision together
/// with who made it (a timeout is no person's no, a grant's yes is not asked again).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecisionOutcome {
    Approved,
    Rejected,
    Timeout,
    Cancelled,
    Granted,
    Exempt,
    Refused,
}

impl DecisionOutcome {
    /// Every outcome, in the order a filter offers them.
    pub const ALL: [Self; 7] = [
        Self::Approved,
        Self::Rejected,
        Self::Timeout,
        Self::Cancelled,
        Self::Granted,
        Self::Exempt,
        Self::Refused,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Approved => "approved",
            Self::Rejected => "rejected",
            Self::Timeout => "timeout",
            Self::Cancelled => "cancelled",
            Self::Granted => "granted",
            Self::Exempt => "exempt",
            Self::Refused => "refused",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|o| o.as_str() == text)
    }

    /// What `decision` made by `decided_by` comes to.
    pub fn of(decision: Decision, decided_by: &DecidedBy) -> Self {
        match decided_by {
            DecidedBy::Grant { .. } => Self::Granted,
            DecidedBy::Exemption { .. } => Self::Exempt,
            DecidedBy::Timeout => Self::Timeout,
            DecidedBy::Cancelled | DecidedBy::Superseded | DecidedBy::EndOfInput => Self::Cancelled,
            DecidedBy::ApproverFailed | DecidedBy::Policy => Self::Refused,
            DecidedBy::Person { .. } => match decision {
                Decision::Approved => Self::Approved,
                Decision::Rejected => Self::Rejected,
                Decision::Timeout => Self::Timeout,
            },
        }
    }
}

/// What ran once the call was decided: its `tool_call` line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecisionRan {
    pub status: CallStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_summary: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
}

/// One decided tier-2 call, as the audit log recorded it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecisionRow {
    /// When it was decided (RFC 3339), as the log says.
    pub at: String,
    pub tool: String,
    pub arguments: Value,
    pub decision: Decision,
    pub outcome: DecisionOutcome,
    pub decided_by: DecidedBy,
    /// The channel the question was put to (or the grant was made on), when known.
    pub channel: Option<String>,
    /// The conversation the call was made in.
    pub session: String,
    pub tool_use_id: String,
    /// The question that was asked, when one was.
    pub approval_id: Option<ApprovalId>,
    /// `None` when the log has no `tool_call` line for it: it did not run, or tau stopped
    /// before its result was stored.
    pub ran: Option<DecisionRan>,
    /// Where the call's values came from, as its question's card (or its `tool_call`
    /// line) said; `None` when the conversation had read nothing from outside.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<CallProvenance>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn each_outcome_reads_back_as_its_word() {
        for outcome in DecisionOutcome::ALL {
            assert_eq!(DecisionOutcome::parse(outcome.as_str()), Some(outcome));
            assert_eq!(
                serde_json::to_value(outcome).unwrap(),
                Value::String(outcome.as_str().into())
            );
        }
        assert_eq!(DecisionOutcome::parse("maybe"), None);
    }

    #[test]
    fn who_decided_matters_as_much_as_what() {
        let person = DecidedBy::person("web");
        let cases = [
            (
                Decision::Approved,
                person.clone(),
                DecisionOutcome::Approved,
            ),
            (
                Decision::Rejected,
                person.clone(),
                DecisionOutcome::Rejected,
            ),
            (Decision::Timeout, person, DecisionOutcome::Timeout),
            (
                Decision::Rejected,
                DecidedBy::Timeout,
                DecisionOutcome::Timeout,
            ),
            (
                Decision::Rejected,
                DecidedBy::Superseded,
                DecisionOutcome::Cancelled,
            ),
            (
                Decision::Rejected,
                DecidedBy::Policy,
                DecisionOutcome::Refused,
            ),
            (
                Decision::Approved,
                DecidedBy::Exemption {
                    name: "porch".into(),
                },
                DecisionOutcome::Exempt,
            ),
        ];
        for (decision, by, expected) in cases {
            assert_eq!(DecisionOutcome::of(decision, &by), expected, "{by:?}");
        }
    }
}
