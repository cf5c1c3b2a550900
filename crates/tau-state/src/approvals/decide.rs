//! The answer: `pending` to what was decided, once. Every answer a person gives, every
//! expiry and every question tau closes goes through this compare-and-set; only a holder
//! of [`Approvals`] reaches it.

use jiff::Timestamp;
use rusqlite::params;
use tau_protocol::{ApprovalId, DecidedBy, GrantRequest};

use super::columns::get;
use super::{Answered, ApprovalState};
use crate::error::StateError;
use crate::handles::Approvals;

impl Approvals {
    /// `pending -> to` (to is not `pending`), recording who decided and when; the first
    /// answer wins. A person's answer to a question not shown yet is `NotFound`: nobody
    /// can have seen it (tau's own closing of it, a cancel or an expiry, still works).
    pub fn decide_approval(
        &self,
        id: &ApprovalId,
        to: ApprovalState,
        decided_by: &DecidedBy,
        at: Timestamp,
    ) -> Result<Answered, StateError> {
        self.decide_approval_granting(id, to, decided_by, at, None)
    }

    /// [`Approvals::decide_approval`], keeping the grant a person asked for with their yes.
    /// The request is kept only with an approval, of a question that offered a grant.
    pub fn decide_approval_granting(
        &self,
        id: &ApprovalId,
        to: ApprovalState,
        decided_by: &DecidedBy,
        at: Timestamp,
        grant: Option<&GrantRequest>,
    ) -> Result<Answered, StateError> {
        if to == ApprovalState::Pending {
            return Err(StateError::DecidedAsPending);
        }
        let by = serde_json::to_string(decided_by).map_err(StateError::encode("who decided"))?;
        let grant = grant
            .filter(|_| to == ApprovalState::Approved)
            .map(serde_json::to_string)
            .transpose()
            .map_err(StateError::encode("a grant request"))?;
        self.db().write_durable(|tx| {
            let changed = tx.execute(
                "UPDATE approvals SET state = ?2, decided_by = ?3, decided_at = ?4, \
                     grant_request = CASE WHEN grant_offer IS NULL THEN NULL ELSE ?6 END \
                     WHERE id = ?1 AND state = 'pending' AND (shown = 1 OR ?5 = 0)",
                params![
                    id.as_str(),
                    to.as_str(),
                    by,
                    at.to_string(),
                    decided_by.is_person(),
                    grant
                ],
            )?;
            Ok(match (changed, get(tx, id)?) {
                (_, None) => Answered::NotFound,
                // Still pending after a person's answer: it was not shown.
                (0, Some(row)) if row.state == ApprovalState::Pending => Answered::NotFound,
                (1, Some(row)) => Answered::Decided(row),
                (_, Some(row)) => Answered::AlreadyDecided(row),
            })
        })
    }
}
