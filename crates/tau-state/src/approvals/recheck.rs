//! The one re-check a stored yes passes before the call it answers goes through, whoever
//! lets it through: the conversation gate resuming a turn, or a routine's approver whose
//! question was answered on its `ask` channel. One ladder, one order, so the two can never
//! disagree about what a stored answer still allows.

use jiff::Timestamp;
use tau_protocol::{DecidedBy, SessionId, Tier};

use super::{ApprovalRow, ApprovalState};

/// The call a stored answer is about to let through, as the one who runs it knows it.
#[derive(Debug, Clone, Copy)]
pub struct CallToRun<'a> {
    pub session: &'a SessionId,
    pub call_id: &'a str,
    pub tool: &'a str,
    /// SHA-256 of the arguments' canonical JSON, as they are now.
    pub arguments_sha256: &'a str,
    /// The channel the question had to be asked and answered on.
    pub channel: &'a str,
    /// The tool's tier as registered now; `None` when it is not registered or its tier is
    /// not trusted.
    pub registered_tier: Option<Tier>,
    pub now: Timestamp,
}

/// What the ladder found: the call may go through, or the first step it failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recheck {
    /// Every step passed: consume the row, then let the call through.
    Approved,
    /// The row is another call's (session, call id or tool).
    AnotherCall,
    /// The row was let through before: the call never runs a second time.
    AlreadyUsed,
    /// The row was asked on another channel than this call's.
    AnotherChannel,
    /// The tool is no longer registered with the tier it was asked at, or it was never one
    /// the gate asks for.
    TierChanged,
    /// Nobody answered yet.
    NotAnswered,
    /// The answer was no (rejected, expired, superseded or cancelled).
    Refused(ApprovalState),
    /// A yes that no person gave.
    NotByPerson,
    /// A person's yes given on another channel than the question's.
    AnsweredElsewhere,
    /// The yes came after the question's deadline, or the deadline has passed since.
    PastDeadline,
    /// The arguments are not the ones approved.
    ArgumentsChanged,
}

impl Recheck {
    /// Why the call does not go through, in a line for the log; empty for `Approved`.
    pub fn reason(self) -> &'static str {
        match self {
            Self::Approved => "",
            Self::AnotherCall => "the answer belongs to another call",
            Self::AlreadyUsed => "the approval was already used",
            Self::AnotherChannel => "the question was asked on another channel",
            Self::TierChanged => "the tool is no longer registered with the approved tier",
            Self::NotAnswered => "resumed before the question was answered",
            Self::Refused(_) => "the answer was no",
            Self::NotByPerson => "the stored approval was not given by a person",
            Self::AnsweredElsewhere => "the stored approval was given on another channel",
            Self::PastDeadline => "the approval's deadline has passed",
            Self::ArgumentsChanged => "the arguments differ from the approved ones",
        }
    }
}

/// The ladder, in order: the same call; not used yet; the same channel; the same tier-2
/// tool; answered; yes; by a person; on the question's own channel; before the deadline;
/// with exactly the approved arguments.
pub fn recheck(row: &ApprovalRow, call: &CallToRun<'_>) -> Recheck {
    if &row.session != call.session || row.call_id != call.call_id || row.tool != call.tool {
        return Recheck::AnotherCall;
    }
    if row.consumed_at.is_some() {
        return Recheck::AlreadyUsed;
    }
    if row.channel != call.channel {
        return Recheck::AnotherChannel;
    }
    // A tier-2 tool, or one below asked because outside text steered it (its card says
    // so, as stored): a stored yes is never for a tool the gate lets run unasked.
    let asked_tier = row.tier == Tier::Physical || row.card.provenance.escalated;
    if call.registered_tier != Some(row.tier) || !asked_tier {
        return Recheck::TierChanged;
    }
    match row.state {
        ApprovalState::Approved => {}
        ApprovalState::Pending => return Recheck::NotAnswered,
        state @ (ApprovalState::Rejected
        | ApprovalState::Expired
        | ApprovalState::Superseded
        | ApprovalState::Cancelled) => return Recheck::Refused(state),
    }
    match &row.decided_by {
        Some(DecidedBy::Person { channel, .. }) if channel == &row.channel => {}
        Some(DecidedBy::Person { .. }) => return Recheck::AnsweredElsewhere,
        _ => return Recheck::NotByPerson,
    }
    let answered_in_time = row.decided_at.is_none_or(|at| at <= row.deadline);
    if !answered_in_time || call.now > row.deadline {
        return Recheck::PastDeadline;
    }
    if row.arguments_sha256 != call.arguments_sha256 {
        return Recheck::ArgumentsChanged;
    }
    Recheck::Approved
}

#[cfg(test)]
mod tests {
    use tau_protocol::{ApprovalId, CallCard};

    use super::*;
    use crate::approvals::NewApproval;

    const ARGS: &str = "aa";

    fn at(text: &str) -> Timestamp {
        text.parse().unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    /// A yes on the web, in time, not used: what lets a call through.
    fn approved() -> ApprovalRow {
        let mut row = NewApproval {
            id: ApprovalId::parse("ap_1").unwrap_or_else(|e| panic!("{e}")),
            session: SessionId::parse("s1").unwrap_or_else(|e| panic!("{e}")),
            call_id: "t1".into(),
            tool: "run_command".into(),
            tier: Tier::Physical,
            effect: "runs a command".into(),
            arguments: serde_json::json!({"command": "ls"}),
            channel: "web".into(),
            created_at: at("2026-12-03T12:00:00Z"),
            deadline: at("2026-12-03T12:30:00Z"),
            card: CallCard::default(),
        }
        .into_row();
        row.arguments_sha256 = ARGS.into();
        row.state = ApprovalState::Approved;
        row.decided_by = Some(DecidedBy::person("web"));
        row.decided_at = Some(at("2026-12-03T12:01:00Z"));
        row
    }

    /// Every case of the ladder: a row changed one way, and the verdict it gets.
    pub(crate) fn cases() -> Vec<(&'static str, ApprovalRow, Recheck)> {
        let with = |change: &dyn Fn(&mut ApprovalRow)| {
            let mut row = approved();
            change(&mut row);
            row
        };
        vec![
            ("a yes in time", approved(), Recheck::Approved),
            (
                "another session",
                with(&|r| r.session = SessionId::parse("s2").unwrap_or_else(|e| panic!("{e}"))),
                Recheck::AnotherCall,
            ),
            (
                "another call",
                with(&|r| r.call_id = "t2".into()),
                Recheck::AnotherCall,
            ),
            (
                "another tool",
                with(&|r| r.tool = "write_file".into()),
                Recheck::AnotherCall,
            ),
            (
                "used before",
                with(&|r| r.consumed_at = Some(at("2026-12-03T12:02:00Z"))),
                Recheck::AlreadyUsed,
            ),
            (
                "asked on telegram",
                with(&|r| r.channel = "telegram".into()),
                Recheck::AnotherChannel,
            ),
            (
                "a tier-1 row",
                with(&|r| r.tier = Tier::Write),
                Recheck::TierChanged,
            ),
            (
                "still pending",
                with(&|r| r.state = ApprovalState::Pending),
                Recheck::NotAnswered,
            ),
            (
                "rejected",
                with(&|r| r.state = ApprovalState::Rejected),
                Recheck::Refused(ApprovalState::Rejected),
            ),
            (
                "expired",
                with(&|r| r.state = ApprovalState::Expired),
                Recheck::Refused(ApprovalState::Expired),
            ),
            (
                "cancelled",
                with(&|r| r.state = ApprovalState::Cancelled),
                Recheck::Refused(ApprovalState::Cancelled),
            ),
            (
                "superseded",
                with(&|r| r.state = ApprovalState::Superseded),
                Recheck::Refused(ApprovalState::Superseded),
            ),
            (
                "approved by the timeout",
                with(&|r| r.decided_by = Some(DecidedBy::Timeout)),
                Recheck::NotByPerson,
            ),
            (
                "approved by a routine's exemption",
                with(&|r| r.decided_by = Some(DecidedBy::Exemption { name: "x".into() })),
                Recheck::NotByPerson,
            ),
            (
                "approved by nobody",
                with(&|r| r.decided_by = None),
                Recheck::NotByPerson,
            ),
            (
                "approved on telegram for a web question",
                with(&|r| r.decided_by = Some(DecidedBy::person("telegram"))),
                Recheck::AnsweredElsewhere,
            ),
            (
                "a yes after the deadline",
                with(&|r| r.decided_at = Some(at("2026-12-03T12:31:00Z"))),
                Recheck::PastDeadline,
            ),
            (
                "changed arguments",
                with(&|r| r.arguments_sha256 = "bb".into()),
                Recheck::ArgumentsChanged,
            ),
        ]
    }

    fn call(session: &SessionId, now: Timestamp) -> CallToRun<'_> {
        CallToRun {
            session,
            call_id: "t1",
            tool: "run_command",
            arguments_sha256: ARGS,
            channel: "web",
            registered_tier: Some(Tier::Physical),
            now,
        }
    }

    #[test]
    fn each_step_of_the_ladder_refuses_what_it_must() {
        let session = SessionId::parse("s1").unwrap_or_else(|e| panic!("{e}"));
        let now = at("2026-12-03T12:05:00Z");
        for (name, row, verdict) in cases() {
            assert_eq!(recheck(&row, &call(&session, now)), verdict, "{name}");
        }
        // Now past the deadline; a tool registered at another tier, or not at all.
        let late = at("2026-12-03T12:30:01Z");
        assert_eq!(
            recheck(&approved(), &call(&session, late)),
            Recheck::PastDeadline
        );
        for tier in [None, Some(Tier::Write), Some(Tier::Read)] {
            let mut now_registered = call(&session, now);
            now_registered.registered_tier = tier;
            assert_eq!(
                recheck(&approved(), &now_registered),
                Recheck::TierChanged,
                "{tier:?}"
            );
        }
    }

    #[test]
    fn a_tier_one_row_passes_only_when_outside_text_made_it_asked() {
        let session = SessionId::parse("s1").unwrap_or_else(|e| panic!("{e}"));
        let now = at("2026-12-03T12:05:00Z");
        let mut tier_one = call(&session, now);
        tier_one.registered_tier = Some(Tier::Write);
        let mut row = approved();
        row.tier = Tier::Write;
        assert_eq!(recheck(&row, &tier_one), Recheck::TierChanged);
        row.card.provenance.escalated = true;
        assert_eq!(recheck(&row, &tier_one), Recheck::Approved);
        // Asked at tier 1, now registered at tier 2 (or 0): not this yes's call.
        for tier in [Some(Tier::Physical), Some(Tier::Read), None] {
            tier_one.registered_tier = tier;
            assert_eq!(recheck(&row, &tier_one), Recheck::TierChanged, "{tier:?}");
        }
    }
}
