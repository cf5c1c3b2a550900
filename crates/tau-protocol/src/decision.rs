//! The record of a decision, carried whole: what the gate decided about one call
//! ([`Verdict`], inside a [`CallDecision`]), who decided a question and what
//! ([`Ruling`]), and how a call ended as its record says ([`CallFate`]). The gate builds
//! them once; the record, the audit log and every channel read these fields, never flags
//! or texts put back together.

use serde::{Deserialize, Serialize};

use crate::grant::GrantId;
use crate::ids::ApprovalId;
use crate::provenance::CallProvenance;
use crate::tier::Tier;
use crate::vocabulary::{Approval, CallStatus, DecidedBy, Decision};

/// What the gate decided about one call. Everything that is not a yes the call can stand
/// on is a refusal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Tier 0 or 1 and nothing from outside steered it: it runs, nobody is asked.
    Runs,
    /// A registered exemption (a routine's) let it through without asking.
    Exempt { name: String },
    /// A live grant a person made earlier covered exactly this call; nobody was asked.
    Granted { grant: GrantId },
    /// A person said yes to its question; `grant` is the grant that yes made, if it made
    /// one (pinned to the workspace once the call ran).
    Approved {
        by: DecidedBy,
        grant: Option<GrantId>,
    },
    /// Its question is stored and the turn pauses until it is answered; it does not run
    /// now.
    Asked,
    /// It does not run: why, and the text the model reads instead of a result.
    Refused { why: Refusal, text: String },
}

/// Why the gate refused a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// No tool of that name is registered.
    UnknownTool,
    /// The tool refused the arguments before anyone was asked.
    InvalidCall,
    /// tau's rules refused it without asking: a tier that cannot be trusted, a call
    /// stopped or swapped before the gate, a stored card its writers did not take back.
    Policy,
    /// Its question was answered no, withdrawn, superseded or cancelled; `by` says who or
    /// what.
    Rejected { by: DecidedBy },
    /// Its question's wait ended; `by` says how.
    Timeout { by: DecidedBy },
    /// The approver or the gate failed, or an answer could not count.
    Failed,
    /// A person's yes let it through before, and tau stopped before its result was
    /// stored: it may or may not have run, and it never runs again. `by` approved it.
    EffectUncertain { by: DecidedBy },
}

impl Verdict {
    /// A refusal for `why`, the model reading `text`.
    pub fn refused(why: Refusal, text: impl Into<String>) -> Self {
        Self::Refused {
            why,
            text: text.into(),
        }
    }

    /// True when the call may run now.
    pub fn runs(&self) -> bool {
        match self {
            Self::Runs | Self::Exempt { .. } | Self::Granted { .. } | Self::Approved { .. } => true,
            Self::Asked | Self::Refused { .. } => false,
        }
    }

    /// How the call got past (or did not get past) the gate, as its record says.
    pub fn approval(&self) -> Approval {
        match self {
            Self::Runs => Approval::NotRequired,
            Self::Exempt { .. } => Approval::Exempt,
            Self::Granted { .. } => Approval::Granted,
            Self::Approved { .. } => Approval::Approved,
            // A call still waiting on its question is recorded only if something failed.
            Self::Asked => Approval::Failed,
            Self::Refused { why, .. } => match why {
                Refusal::UnknownTool | Refusal::InvalidCall | Refusal::Policy => Approval::Refused,
                Refusal::Rejected { .. } => Approval::Rejected,
                Refusal::Timeout { .. } => Approval::Timeout,
                Refusal::Failed => Approval::Failed,
                // It was approved; it is the run that is in doubt.
                Refusal::EffectUncertain { .. } => Approval::Approved,
            },
        }
    }

    /// Who or what decided.
    pub fn decided_by(&self) -> DecidedBy {
        match self {
            Self::Runs => DecidedBy::Policy,
            Self::Exempt { name } => DecidedBy::Exemption { name: name.clone() },
            Self::Granted { grant } => DecidedBy::Grant { id: grant.clone() },
            Self::Approved { by, .. } => by.clone(),
            Self::Asked => DecidedBy::ApproverFailed,
            Self::Refused { why, .. } => match why {
                Refusal::UnknownTool | Refusal::InvalidCall | Refusal::Policy => DecidedBy::Policy,
                Refusal::Rejected { by }
                | Refusal::Timeout { by }
                | Refusal::EffectUncertain { by } => by.clone(),
                Refusal::Failed => DecidedBy::ApproverFailed,
            },
        }
    }

    /// The status a call that did not run is recorded with.
    pub fn refused_status(&self) -> CallStatus {
        match self {
            Self::Refused {
                why: Refusal::UnknownTool,
                ..
            } => CallStatus::UnknownTool,
            Self::Refused {
                why: Refusal::InvalidCall,
                ..
            } => CallStatus::Invalid,
            // It may have run; "refused" would say it did not.
            Self::Refused {
                why: Refusal::EffectUncertain { .. },
                ..
            } => CallStatus::Error,
            Self::Runs
            | Self::Exempt { .. }
            | Self::Granted { .. }
            | Self::Approved { .. }
            | Self::Asked
            | Self::Refused { .. } => CallStatus::Refused,
        }
    }

    /// The grant that let the call through, or that the yes to it made.
    pub fn grant(&self) -> Option<&GrantId> {
        match self {
            Self::Granted { grant } => Some(grant),
            Self::Approved { grant, .. } => grant.as_ref(),
            Self::Runs | Self::Exempt { .. } | Self::Asked | Self::Refused { .. } => None,
        }
    }

    /// The text the model reads instead of a result, for a refusal.
    pub fn refusal_text(&self) -> Option<&str> {
        match self {
            Self::Refused { text, .. } => Some(text),
            Self::Runs
            | Self::Exempt { .. }
            | Self::Granted { .. }
            | Self::Approved { .. }
            | Self::Asked => None,
        }
    }
}

/// The gate's decision about one call, built once and carried to its record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallDecision {
    pub verdict: Verdict,
    /// The tier the gate used; `None` when the tool is unknown or its tier invalid.
    pub tier: Option<Tier>,
    /// The question asked about this call, if one was.
    pub approval_id: Option<ApprovalId>,
    /// What the call's arguments owe to text from outside, and whether it was asked
    /// because of it; empty when the conversation read nothing from outside.
    pub provenance: CallProvenance,
}

impl CallDecision {
    /// `verdict` at `tier`, no question asked, nothing from outside.
    pub fn new(verdict: Verdict, tier: Option<Tier>) -> Self {
        Self {
            verdict,
            tier,
            approval_id: None,
            provenance: CallProvenance::default(),
        }
    }

    /// The same decision, about the question `id`.
    #[must_use]
    pub fn asked(mut self, id: &ApprovalId) -> Self {
        self.approval_id = Some(id.clone());
        self
    }

    /// The same decision, with the call's provenance.
    #[must_use]
    pub fn traced(mut self, provenance: CallProvenance) -> Self {
        self.provenance = provenance;
        self
    }

    pub fn allowed(&self) -> bool {
        self.verdict.runs()
    }

    /// How the call got past (or did not get past) the gate.
    pub fn approval(&self) -> Approval {
        self.verdict.approval()
    }

    /// Who or what decided.
    pub fn decided_by(&self) -> DecidedBy {
        self.verdict.decided_by()
    }

    /// How the call is recorded had it not run (or before its run is known).
    pub fn fate(&self) -> CallFate {
        CallFate {
            status: if self.verdict.runs() {
                CallStatus::Success
            } else {
                self.verdict.refused_status()
            },
            approval: self.verdict.approval(),
            decided_by: self.verdict.decided_by(),
        }
    }
}

/// Who decided a tier-2 question, and what: carried whole (its fields flattened) on the
/// `approval` audit line and the channel's `approval_decided`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Ruling {
    pub decision: Decision,
    pub decided_by: DecidedBy,
}

impl Ruling {
    pub fn new(decision: Decision, decided_by: DecidedBy) -> Self {
        Self {
            decision,
            decided_by,
        }
    }
}

/// How a call ended and how it got past the gate, as its `tool_call` line and the
/// channel's `tool_call_finished` carry it (its fields flattened).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CallFate {
    pub status: CallStatus,
    pub approval: Approval,
    pub decided_by: DecidedBy,
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn person() -> DecidedBy {
        DecidedBy::person("web")
    }

    #[test]
    fn each_verdict_is_recorded_as_one_status_approval_and_decider() {
        let grant = GrantId::parse("gr_0123456789abcdef").unwrap();
        let refused = |why| Verdict::refused(why, "no");
        let cases = [
            (
                Verdict::Runs,
                (
                    CallStatus::Success,
                    Approval::NotRequired,
                    DecidedBy::Policy,
                ),
            ),
            (
                Verdict::Exempt {
                    name: "lamp".into(),
                },
                (
                    CallStatus::Success,
                    Approval::Exempt,
                    DecidedBy::Exemption {
                        name: "lamp".into(),
                    },
                ),
            ),
            (
                Verdict::Granted {
                    grant: grant.clone(),
                },
                (
                    CallStatus::Success,
                    Approval::Granted,
                    DecidedBy::Grant { id: grant.clone() },
                ),
            ),
            (
                Verdict::Approved {
                    by: person(),
                    grant: None,
                },
                (CallStatus::Success, Approval::Approved, person()),
            ),
            (
                Verdict::Asked,
                (
                    CallStatus::Refused,
                    Approval::Failed,
                    DecidedBy::ApproverFailed,
                ),
            ),
            (
                refused(Refusal::UnknownTool),
                (
                    CallStatus::UnknownTool,
                    Approval::Refused,
                    DecidedBy::Policy,
                ),
            ),
            (
                refused(Refusal::InvalidCall),
                (CallStatus::Invalid, Approval::Refused, DecidedBy::Policy),
            ),
            (
                refused(Refusal::Policy),
                (CallStatus::Refused, Approval::Refused, DecidedBy::Policy),
            ),
            (
                refused(Refusal::Rejected { by: person() }),
                (CallStatus::Refused, Approval::Rejected, person()),
            ),
            (
                refused(Refusal::Timeout {
                    by: DecidedBy::Timeout,
                }),
                (CallStatus::Refused, Approval::Timeout, DecidedBy::Timeout),
            ),
            (
                refused(Refusal::Failed),
                (
                    CallStatus::Refused,
                    Approval::Failed,
                    DecidedBy::ApproverFailed,
                ),
            ),
            (
                refused(Refusal::EffectUncertain { by: person() }),
                (CallStatus::Error, Approval::Approved, person()),
            ),
        ];
        for (verdict, (status, approval, decided_by)) in cases {
            let decision = CallDecision::new(verdict.clone(), Some(Tier::Physical));
            assert_eq!(
                decision.fate(),
                CallFate {
                    status,
                    approval,
                    decided_by
                },
                "{verdict:?}"
            );
            assert_eq!(decision.allowed(), status == CallStatus::Success);
            assert_eq!(
                verdict.refusal_text().is_some(),
                matches!(verdict, Verdict::Refused { .. })
            );
        }
    }

    #[test]
    fn only_a_grant_or_a_yes_that_made_one_names_a_grant() {
        let grant = GrantId::parse("gr_0123456789abcdef").unwrap();
        assert_eq!(
            Verdict::Granted {
                grant: grant.clone()
            }
            .grant(),
            Some(&grant)
        );
        assert_eq!(
            Verdict::Approved {
                by: person(),
                grant: Some(grant.clone())
            }
            .grant(),
            Some(&grant)
        );
        assert_eq!(Verdict::Runs.grant(), None);
        assert_eq!(
            Verdict::refused(Refusal::Rejected { by: person() }, "no").grant(),
            None
        );
    }
}
