//! A question's life apart from its answer: stored (shown, or hidden until its turn is
//! saved), shown, let through once, its outcome recorded, settled by the hub.

use jiff::Timestamp;
use rusqlite::params;
use tau_protocol::{ApprovalId, SessionId};

use super::columns::{COLUMNS, get};
use super::{ApprovalRow, CallOutcome};
use crate::error::StateError;
use crate::handles::Approvals;

/// A dispatched call's outcome (`?2`, at `?3`), once: only a call let through and without
/// one.
const SET_OUTCOME: &str = "UPDATE approvals SET outcome = ?2, outcome_at = ?3 \
     WHERE id = ?1 AND consumed_at IS NOT NULL AND outcome IS NULL";

/// How a row is stored: listed and answerable, hidden until its turn is saved, or
/// answered already where it was asked (a terminal's yes, recorded as its call is let
/// through): never listed, never answered here, and nothing for the hub to settle.
#[derive(Clone, Copy)]
pub(super) enum Listed {
    Shown,
    Hidden,
    Answered,
}

impl Approvals {
    /// Stores a new `pending` row, shown at once (listed, answerable). An id that exists
    /// already is an error.
    pub fn create_approval(&self, row: &ApprovalRow) -> Result<(), StateError> {
        self.insert_approval(row, Listed::Shown)
    }

    /// Stores a new `pending` row that nobody is shown and nobody can answer until
    /// [`Approvals::show_approval`]: the conversation gate stores its question before the
    /// turn's paused state is saved, and shows it once that is on the disk. A kill in
    /// between leaves a question nobody saw, which the next start cancels.
    pub fn create_hidden_approval(&self, row: &ApprovalRow) -> Result<(), StateError> {
        self.insert_approval(row, Listed::Hidden)
    }

    /// Shows a question stored hidden; false when there is no such row. Flushed, so a
    /// question a person may see is never hidden again by a power cut.
    pub fn show_approval(&self, id: &ApprovalId) -> Result<bool, StateError> {
        Ok(self.db().write_statement(
            true,
            "UPDATE approvals SET shown = 1 WHERE id = ?1",
            params![id.as_str()],
        )? == 1)
    }

    /// Shows every pending question still hidden: at a start, once the questions of
    /// turns that were never paused are cancelled, those left have a saved turn waiting
    /// on them, and tau stopped before it showed them.
    pub fn show_waiting_approvals(&self) -> Result<usize, StateError> {
        self.db().write_statement(
            true,
            "UPDATE approvals SET shown = 1 WHERE shown = 0 AND state = 'pending'",
            params![],
        )
    }

    pub(super) fn insert_approval(
        &self,
        row: &ApprovalRow,
        listed: Listed,
    ) -> Result<(), StateError> {
        let (shown, settled) = match listed {
            Listed::Shown => (true, false),
            Listed::Hidden => (false, false),
            Listed::Answered => (false, true),
        };
        let decided_by = row
            .decided_by
            .as_ref()
            .map(serde_json::to_string)
            .transpose()
            .map_err(StateError::encode("who decided"))?;
        let card = serde_json::to_string(&row.card).map_err(StateError::encode("a card"))?;
        let grant_offer = row
            .grant_offer
            .as_ref()
            .map(serde_json::to_string)
            .transpose()
            .map_err(StateError::encode("a grant offer"))?;
        let grant_request = row
            .grant_request
            .as_ref()
            .map(serde_json::to_string)
            .transpose()
            .map_err(StateError::encode("a grant request"))?;
        let hub = self.db().hub();
        // Of a store several hubs share: this hub holds the question's turn (`asked_by`),
        // and a question stored as let through names the hub that runs it. One statement,
        // so one round trip on PostgreSQL; a question already there is left as it is.
        let dispatched_by = row.consumed_at.and(hub);
        let inserted = self.db().write_statement(
            true,
            &format!(
                "INSERT INTO approvals ({COLUMNS}, shown, settled, asked_by, dispatched_by) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, \
                 ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24) ON CONFLICT DO NOTHING"
            ),
            params![
                row.id.as_str(),
                row.session.as_str(),
                row.call_id,
                row.tool,
                i64::from(row.tier.number()),
                row.effect,
                row.arguments,
                row.arguments_sha256,
                row.channel,
                row.created_at.to_string(),
                row.deadline.to_string(),
                row.state.as_str(),
                decided_by,
                row.decided_at.map(|t| t.to_string()),
                row.consumed_at.map(|t| t.to_string()),
                card,
                row.outcome.map(CallOutcome::as_str),
                row.outcome_at.map(|t| t.to_string()),
                grant_offer,
                grant_request,
                shown,
                settled,
                hub,
                dispatched_by,
            ],
        )?;
        if inserted == 1 {
            Ok(())
        } else {
            Err(StateError::ApprovalExists(row.id.clone()))
        }
    }
    /// Marks an approved, unconsumed row consumed; false when it was not both.
    pub fn consume_approval(&self, id: &ApprovalId, at: Timestamp) -> Result<bool, StateError> {
        Ok(self.db().write_statement(
            true,
            "UPDATE approvals SET consumed_at = ?2, dispatched_by = ?3 \
                 WHERE id = ?1 AND state = 'approved' AND consumed_at IS NULL",
            params![id.as_str(), at.to_string(), self.db().hub()],
        )? == 1)
    }

    /// Records that a dispatched call's result was stored (`outcome = finished`); false
    /// when it was not dispatched or has an outcome already.
    pub fn finish_approval(&self, id: &ApprovalId, at: Timestamp) -> Result<bool, StateError> {
        Ok(self.db().write_statement(
            true,
            SET_OUTCOME,
            params![id.as_str(), CallOutcome::Finished.as_str(), at.to_string()],
        )? == 1)
    }

    /// Closes a dispatched call that has no outcome as `effect_uncertain`: tau stopped
    /// after letting it through and before its result was stored. The row when this call
    /// closed it; `None` when it was not dispatched or has an outcome already.
    pub fn close_effect_uncertain(
        &self,
        id: &ApprovalId,
        at: Timestamp,
    ) -> Result<Option<ApprovalRow>, StateError> {
        self.set_outcome(id, CallOutcome::EffectUncertain, at)
    }

    fn set_outcome(
        &self,
        id: &ApprovalId,
        outcome: CallOutcome,
        at: Timestamp,
    ) -> Result<Option<ApprovalRow>, StateError> {
        self.db().write_durable(|tx| {
            let changed = tx.execute(
                SET_OUTCOME,
                params![id.as_str(), outcome.as_str(), at.to_string()],
            )?;
            if changed == 1 { get(tx, id) } else { Ok(None) }
        })
    }
    /// Marks a decided question as dealt with: its turn was resumed or closed. Only the
    /// hub's own bookkeeping; the gate never reads it.
    pub fn mark_approval_settled(&self, id: &ApprovalId) -> Result<(), StateError> {
        self.db().write_statement(
            false,
            "UPDATE approvals SET settled = 1 WHERE id = ?1 AND state != 'pending'",
            params![id.as_str()],
        )?;
        Ok(())
    }

    /// Settles every decided question of `session` but those in `waiting` (its turn still
    /// waits on them), in one write; how many it settled. Only the questions not settled
    /// yet are read, so the cost follows what changed, not the session's length.
    pub fn settle_session_approvals(
        &self,
        session: &SessionId,
        waiting: &[ApprovalId],
    ) -> Result<usize, StateError> {
        // One statement: the questions still waiting are left out by id.
        let mut sql = "UPDATE approvals SET settled = 1 \
                       WHERE session = ?1 AND settled = 0 AND state != 'pending'"
            .to_owned();
        let ids: Vec<&str> = std::iter::once(session.as_str())
            .chain(waiting.iter().map(ApprovalId::as_str))
            .collect();
        let params: Vec<&dyn rusqlite::ToSql> =
            ids.iter().map(|id| id as &dyn rusqlite::ToSql).collect();
        if !waiting.is_empty() {
            let marks: Vec<String> = (2..waiting.len() + 2).map(|n| format!("?{n}")).collect();
            sql.push_str(&format!(" AND id NOT IN ({})", marks.join(", ")));
        }
        self.db().write_statement(false, &sql, &params)
    }
}
