//! What a holder of an [`ApprovalReader`] can see: one question by id, the lists. Nothing
//! here changes a row.

use rusqlite::params;
use tau_protocol::ApprovalId;

use super::columns::{get, select};
use super::{ApprovalRow, ApprovalState};
use crate::error::StateError;
use crate::handles::ApprovalReader;

impl ApprovalReader {
    pub fn approval(&self, id: &ApprovalId) -> Result<Option<ApprovalRow>, StateError> {
        self.db.read(|c| get(c, id))
    }

    /// True when the question was shown (or was stored shown); false for one stored
    /// hidden and not shown yet, and for no such row.
    pub fn approval_shown(&self, id: &ApprovalId) -> Result<bool, StateError> {
        self.db.read(|c| {
            Ok(c.query_optional(
                "SELECT shown FROM approvals WHERE id = ?1",
                params![id.as_str()],
                |row| row.get::<_, bool>(0),
            )?
            .unwrap_or(false))
        })
    }

    /// Calls let through whose result was never stored (dispatched, no outcome), oldest
    /// first: at a start, each was running when tau stopped. Of a store several hubs
    /// share, only those this hub let through (see [`crate::StateDb::for_hub`]), those of
    /// hubs whose lease ran out, and those from before hubs were recorded: never a call a
    /// live hub is running.
    pub fn dispatched_without_outcome(&self) -> Result<Vec<ApprovalRow>, StateError> {
        select(
            &self.db,
            "WHERE consumed_at IS NOT NULL AND outcome IS NULL AND (dispatched_by IS NULL \
             OR dispatched_by = ?1 OR NOT EXISTS (SELECT 1 FROM leases \
             WHERE leases.name = 'hub:' || approvals.dispatched_by AND leases.expires_at > ?2))",
            params![self.db.hub(), crate::leases::now_millis()],
        )
    }

    /// Rows in `state` that were shown, oldest first; all shown ones when `state` is
    /// `None`. What a person is listed.
    pub fn approvals(&self, state: Option<ApprovalState>) -> Result<Vec<ApprovalRow>, StateError> {
        match state {
            Some(state) => select(
                &self.db,
                "WHERE state = ?1 AND shown = 1",
                params![state.as_str()],
            ),
            None => select(&self.db, "WHERE shown = 1", params![]),
        }
    }

    /// Rows in `state`, shown or not, oldest first; all of them when `state` is `None`.
    /// For tau's own bookkeeping (start-up, expiry), never for a listing.
    pub fn all_approvals(
        &self,
        state: Option<ApprovalState>,
    ) -> Result<Vec<ApprovalRow>, StateError> {
        match state {
            Some(state) => select(&self.db, "WHERE state = ?1", params![state.as_str()]),
            None => select(&self.db, "", params![]),
        }
    }

    /// Decided questions whose turn was not resumed or closed yet (the hub stopped in
    /// between, or another hub took the answer), oldest first. Of a store several hubs
    /// share, never one another live hub asked (it resumes its own turns) nor one whose
    /// call another live hub let through (that hub is running its turn).
    pub fn unsettled_approvals(&self) -> Result<Vec<ApprovalRow>, StateError> {
        select(
            &self.db,
            "WHERE state != 'pending' AND settled = 0 AND NOT (consumed_at IS NOT NULL \
             AND dispatched_by IS NOT NULL AND dispatched_by != COALESCE(?1, '') \
             AND EXISTS (SELECT 1 FROM leases \
             WHERE leases.name = 'hub:' || approvals.dispatched_by AND leases.expires_at > ?2)) \
             AND NOT (asked_by IS NOT NULL AND asked_by != COALESCE(?1, '') \
             AND EXISTS (SELECT 1 FROM leases \
             WHERE leases.name = 'hub:' || approvals.asked_by AND leases.expires_at > ?2))",
            params![self.db.hub(), crate::leases::now_millis()],
        )
    }
}
