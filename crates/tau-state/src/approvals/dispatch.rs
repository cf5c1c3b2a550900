//! Calls a person approved where they were asked (a terminal, the TUI), recorded as they
//! are let through: the question's row, stored approved and consumed at once, so a crash
//! before the call's outcome is recorded leaves what a stored question's crash leaves, a
//! dispatch without an outcome, closed at the next start as `effect_uncertain`.

use jiff::Timestamp;
use rusqlite::params;
use tau_protocol::SessionId;

use super::columns::{COLUMNS, parse, read_row};
use super::lifecycle::Listed;
use super::{ApprovalRow, ApprovalState};
use crate::error::StateError;
use crate::handles::Approvals;

impl Approvals {
    /// Records that the call a person approved in memory (`row`, its question as asked,
    /// decided by them) is let through now: stored `approved` and consumed at `at`, flushed
    /// to the disk before it returns. Never listed and never answerable: it was answered
    /// where it was asked. An id that exists already is an error, and nothing runs.
    pub fn record_dispatch(&self, row: &ApprovalRow, at: Timestamp) -> Result<(), StateError> {
        if row.state != ApprovalState::Approved || row.decided_by.is_none() {
            return Err(StateError::NotApproved(row.id.clone()));
        }
        let mut dispatched = row.clone();
        dispatched.consumed_at = Some(at);
        dispatched.outcome = None;
        dispatched.outcome_at = None;
        self.insert_approval(&dispatched, Listed::Answered)
    }

    /// The row of the call `call_id` of `session` that was let through (dispatched), if
    /// one was; the newest when a call id was reused.
    pub fn dispatched_call(
        &self,
        session: &SessionId,
        call_id: &str,
    ) -> Result<Option<ApprovalRow>, StateError> {
        self.db().read(|c| {
            c.query_optional(
                &format!(
                    "SELECT {COLUMNS} FROM approvals WHERE session = ?1 AND call_id = ?2 \
                 AND consumed_at IS NOT NULL ORDER BY consumed_at DESC, id DESC LIMIT 1"
                ),
                params![session.as_str(), call_id],
                read_row,
            )?
            .map(parse)
            .transpose()
        })
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;
    use tau_protocol::{ApprovalId, CallCard, DecidedBy, Tier};

    use super::*;
    use crate::approvals::{CallOutcome, NewApproval};

    fn asked(id: &str, call: &str) -> ApprovalRow {
        NewApproval {
            id: ApprovalId::parse(id).unwrap(),
            session: SessionId::parse("s1").unwrap(),
            call_id: call.into(),
            tool: "run_command".into(),
            tier: Tier::Physical,
            effect: "runs a command".into(),
            arguments: json!({"command": "echo made"}),
            channel: "terminal".into(),
            created_at: Timestamp::from_second(10).unwrap(),
            deadline: Timestamp::from_second(10).unwrap(),
            card: CallCard::default(),
        }
        .into_row()
    }

    fn approved(id: &str, call: &str) -> ApprovalRow {
        let mut row = asked(id, call);
        row.state = ApprovalState::Approved;
        row.decided_by = Some(DecidedBy::person("terminal"));
        row.decided_at = Some(Timestamp::from_second(11).unwrap());
        row
    }

    #[test]
    fn a_dispatch_is_a_consumed_approval_nobody_lists_and_a_crash_leaves_it_open() {
        for dir in crate::test_stores::stores() {
            let store = dir.open();
            let at = Timestamp::from_second(12).unwrap();
            store
                .approvals()
                .record_dispatch(&approved("ap_1", "t1"), at)
                .unwrap();
            assert!(
                store.approvals().approvals(None).unwrap().is_empty(),
                "listed nowhere"
            );
            assert!(store.approvals().unsettled_approvals().unwrap().is_empty());
            let session = SessionId::parse("s1").unwrap();
            let found = store
                .approvals()
                .dispatched_call(&session, "t1")
                .unwrap()
                .unwrap();
            assert_eq!(
                (found.state, found.consumed_at, found.outcome),
                (ApprovalState::Approved, Some(at), None)
            );
            assert_eq!(
                store
                    .approvals()
                    .dispatched_without_outcome()
                    .unwrap()
                    .into_iter()
                    .map(|r| r.id.to_string())
                    .collect::<Vec<_>>(),
                ["ap_1"]
            );
            // Its outcome is set once, as a stored question's is.
            assert!(store.approvals().finish_approval(&found.id, at).unwrap());
            assert!(
                store
                    .approvals()
                    .close_effect_uncertain(&found.id, at)
                    .unwrap()
                    .is_none()
            );
            assert_eq!(
                store
                    .approvals()
                    .dispatched_call(&session, "t1")
                    .unwrap()
                    .unwrap()
                    .outcome,
                Some(CallOutcome::Finished)
            );
            assert_eq!(
                store.approvals().dispatched_call(&session, "t2").unwrap(),
                None
            );
            assert!(
                store
                    .approvals()
                    .record_dispatch(&approved("ap_1", "t1"), at)
                    .is_err(),
                "ids are never reused"
            );
        }
    }

    #[test]
    fn only_a_person_s_yes_is_let_through() {
        for dir in crate::test_stores::stores() {
            let store = dir.open();
            let at = Timestamp::from_second(12).unwrap();
            assert!(
                store
                    .approvals()
                    .record_dispatch(&asked("ap_1", "t1"), at)
                    .is_err()
            );
            let mut rejected = approved("ap_2", "t1");
            rejected.state = ApprovalState::Rejected;
            assert!(store.approvals().record_dispatch(&rejected, at).is_err());
            assert!(store.approvals().all_approvals(None).unwrap().is_empty());
        }
    }
}
