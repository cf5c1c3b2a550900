//! Which hub holds a question's turn, of a store several hubs share: the hub that asked
//! (`asked_by`), while its lease (`hub:<id>`) holds. Another hub that takes the answer
//! only stores it; the asking hub sees the question decided and resumes the turn itself,
//! so the call runs in its workspace. Once the asking hub's lease ran out, the first hub
//! to claim the question (a compare-and-set on `asked_by`) holds the turn instead: exactly
//! one resumes it. A store that is one hub's (a file) names no hub: every turn is its own.

use rusqlite::params;
use tau_protocol::ApprovalId;

use crate::error::StateError;
use crate::handles::{ApprovalReader, Approvals};
use crate::leases::now_millis;

impl ApprovalReader {
    /// True when another hub asked question `id` and is alive (its lease holds): that hub
    /// holds the question's turn, and this one neither opens nor resumes it.
    pub fn turn_held_elsewhere(&self, id: &ApprovalId) -> Result<bool, StateError> {
        let Some(hub) = self.db.hub() else {
            return Ok(false);
        };
        self.db.read(|c| {
            c.exists(
                "SELECT 1 FROM approvals WHERE id = ?1 AND asked_by IS NOT NULL \
                 AND asked_by != ?2 AND EXISTS (SELECT 1 FROM leases \
                 WHERE leases.name = 'hub:' || approvals.asked_by AND leases.expires_at > ?3)",
                params![id.as_str(), hub, now_millis()],
            )
        })
    }
}

impl Approvals {
    /// Takes the turn of question `id` for this hub: true when it is this hub's to resume
    /// (it asked, no hub was recorded, or the hub that asked is gone and this claim came
    /// first); false when another live hub holds it, or the question is unknown.
    pub fn claim_turn(&self, id: &ApprovalId) -> Result<bool, StateError> {
        let Some(hub) = self.db().hub() else {
            return Ok(true);
        };
        self.db().write(|tx| {
            Ok(tx.execute(
                "UPDATE approvals SET asked_by = ?2 WHERE id = ?1 AND (asked_by IS NULL \
                 OR asked_by = ?2 OR NOT EXISTS (SELECT 1 FROM leases \
                 WHERE leases.name = 'hub:' || approvals.asked_by AND leases.expires_at > ?3))",
                params![id.as_str(), hub, now_millis()],
            )? == 1)
        })
    }
}
