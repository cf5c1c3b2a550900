//! Durable questions: a tier-2 call that waits for a person's answer, stored so it
//! outlives the process that asked it.
//!
//! Every change is a compare-and-set in one statement (`... WHERE state = 'pending'`,
//! `... WHERE consumed_at IS NULL`), committed durably (flushed to the disk) before it
//! returns, so two answers racing in two processes still have exactly one winner, an
//! answer survives a power cut, and an approval is let through exactly once.

use std::fmt::Write as _;

use jiff::Timestamp;
use rusqlite::{Connection, OptionalExtension, Row, params};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use tau_protocol::{
    ApprovalId, ApprovalQuestion, CallCard, DecidedBy, GrantOffer, GrantRequest, SessionId, Tier,
    canonical_json,
};

use crate::db::StateDb;
use crate::error::StateError;

mod check;
mod dispatch;
mod recheck;
pub use check::{RecordedAnswer, Untrusted, cross_check, needs_check};
pub use recheck::{CallToRun, Recheck, recheck};

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

/// What became of an approved call after it was let through (`consumed_at`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallOutcome {
    /// It ran and its result was recorded.
    Finished,
    /// It was dispatched, and tau stopped before its result was stored: it may or may not
    /// have run. It is never run again.
    EffectUncertain,
}

impl CallOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Finished => "finished",
            Self::EffectUncertain => "effect_uncertain",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        [Self::Finished, Self::EffectUncertain]
            .into_iter()
            .find(|o| o.as_str() == text)
    }
}

/// One durable question and its fate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalRow {
    pub id: ApprovalId,
    pub session: SessionId,
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
    /// When the approved call was let through (dispatched); set once, before it runs.
    pub consumed_at: Option<Timestamp>,
    /// What tau said about the call on its card when it asked.
    pub card: CallCard,
    /// What became of the dispatched call; `None` before it was dispatched, and while it
    /// runs (or when tau stopped while it ran, until the next start closes it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<CallOutcome>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome_at: Option<Timestamp>,
    /// What a grant made from this question would cover ("yes, and allow this again"),
    /// when the gate offered one; its card says so in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant_offer: Option<GrantOffer>,
    /// The grant the person asked for with their yes; the gate makes it when the call is
    /// let through.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant_request: Option<GrantRequest>,
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
            grant: self.grant_offer.clone(),
        }
    }
}

/// A question about to be stored.
#[derive(Debug, Clone, PartialEq)]
pub struct NewApproval {
    pub id: ApprovalId,
    pub session: SessionId,
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
            outcome: None,
            outcome_at: None,
            grant_offer: None,
            grant_request: None,
        }
    }
}

/// Canonical JSON of `arguments` (keys sorted at every depth, no spaces) and its SHA-256,
/// lowercase hex.
pub fn canonical_arguments(arguments: &Value) -> (String, String) {
    let canonical = canonical_json(arguments);
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
    /// Nothing waited for the answer any more (no paused turn, no routine's run): it was
    /// not used, and the question was closed (`cancelled`) instead; the row says so. The
    /// hub's word: the store never answers this.
    NotUsed(ApprovalRow),
}

/// How a row is stored: listed and answerable, hidden until its turn is saved, or
/// answered already where it was asked (a terminal's yes, recorded as its call is let
/// through): never listed, never answered here, and nothing for the hub to settle.
#[derive(Clone, Copy)]
enum Listed {
    Shown,
    Hidden,
    Answered,
}

const COLUMNS: &str = "id, session, call_id, tool, tier, effect, arguments, arguments_sha256, \
     channel, created_at, deadline, state, decided_by, decided_at, consumed_at, card, outcome, \
     outcome_at, grant_offer, grant_request";

/// A row's columns as stored, before they are checked.
struct Raw {
    text: [String; 12],
    tier: i64,
    decided_by: Option<String>,
    decided_at: Option<String>,
    consumed_at: Option<String>,
    outcome: Option<String>,
    outcome_at: Option<String>,
    grant_offer: Option<String>,
    grant_request: Option<String>,
}

fn read_row(row: &Row<'_>) -> rusqlite::Result<Raw> {
    let text = |i: usize| row.get::<_, String>(i);
    Ok(Raw {
        text: [
            text(0)?,
            text(1)?,
            text(2)?,
            text(3)?,
            text(5)?,
            text(6)?,
            text(7)?,
            text(8)?,
            text(9)?,
            text(10)?,
            text(11)?,
            text(15)?,
        ],
        tier: row.get(4)?,
        decided_by: row.get(12)?,
        decided_at: row.get(13)?,
        consumed_at: row.get(14)?,
        outcome: row.get(16)?,
        outcome_at: row.get(17)?,
        grant_offer: row.get(18)?,
        grant_request: row.get(19)?,
    })
}

/// A stored row, checked field by field: a row that does not parse is an error, never a
/// default (a default could look approved).
fn parse(raw: Raw) -> Result<ApprovalRow, StateError> {
    let Raw {
        text:
            [
                id,
                session,
                call_id,
                tool,
                effect,
                arguments,
                arguments_sha256,
                channel,
                created_at,
                deadline,
                state,
                card,
            ],
        tier,
        decided_by,
        decided_at,
        consumed_at,
        outcome,
        outcome_at,
        grant_offer,
        grant_request,
    } = raw;
    let bad =
        |what: &str| StateError::unreadable(format!("approval '{id}'"), format!("its {what}"));
    let time = |text: &str, what: &str| text.parse::<Timestamp>().map_err(|_| bad(what));
    let tier = match tier {
        0 => Tier::Read,
        1 => Tier::Write,
        2 => Tier::Physical,
        _ => return Err(bad("tier")),
    };
    Ok(ApprovalRow {
        id: ApprovalId::parse(&id).map_err(|_| bad("id"))?,
        session: SessionId::parse(&session).map_err(|_| bad("session"))?,
        state: ApprovalState::parse(&state).ok_or_else(|| bad("state"))?,
        decided_by: decided_by
            .map(|text| serde_json::from_str::<DecidedBy>(&text).map_err(|_| bad("decided_by")))
            .transpose()?,
        decided_at: decided_at.map(|t| time(&t, "decided_at")).transpose()?,
        consumed_at: consumed_at.map(|t| time(&t, "consumed_at")).transpose()?,
        outcome: outcome
            .map(|text| CallOutcome::parse(&text).ok_or_else(|| bad("outcome")))
            .transpose()?,
        outcome_at: outcome_at.map(|t| time(&t, "outcome_at")).transpose()?,
        grant_offer: grant_offer
            .map(|text| serde_json::from_str(&text).map_err(|_| bad("grant_offer")))
            .transpose()?,
        grant_request: grant_request
            .map(|text| serde_json::from_str(&text).map_err(|_| bad("grant_request")))
            .transpose()?,
        card: serde_json::from_str(&card).map_err(|_| bad("card"))?,
        created_at: time(&created_at, "created_at")?,
        deadline: time(&deadline, "deadline")?,
        call_id,
        tool,
        tier,
        effect,
        arguments,
        arguments_sha256,
        channel,
    })
}

fn get(connection: &Connection, id: &ApprovalId) -> Result<Option<ApprovalRow>, StateError> {
    connection
        .prepare_cached(&format!("SELECT {COLUMNS} FROM approvals WHERE id = ?1"))?
        .query_row(params![id.as_str()], read_row)
        .optional()?
        .map(parse)
        .transpose()
}

impl StateDb {
    /// Stores a new `pending` row, shown at once (listed, answerable). An id that exists
    /// already is an error.
    pub fn create_approval(&self, row: &ApprovalRow) -> Result<(), StateError> {
        self.insert_approval(row, Listed::Shown)
    }

    /// Stores a new `pending` row that nobody is shown and nobody can answer until
    /// [`StateDb::show_approval`]: the conversation gate stores its question before the
    /// turn's paused state is saved, and shows it once that is on the disk. A kill in
    /// between leaves a question nobody saw, which the next start cancels.
    pub fn create_hidden_approval(&self, row: &ApprovalRow) -> Result<(), StateError> {
        self.insert_approval(row, Listed::Hidden)
    }

    /// Shows a question stored hidden; false when there is no such row. Flushed, so a
    /// question a person may see is never hidden again by a power cut.
    pub fn show_approval(&self, id: &ApprovalId) -> Result<bool, StateError> {
        self.write_durable(|tx| {
            Ok(tx
                .prepare_cached("UPDATE approvals SET shown = 1 WHERE id = ?1")?
                .execute(params![id.as_str()])?
                == 1)
        })
    }

    /// True when the question was shown (or was stored shown); false for one stored
    /// hidden and not shown yet, and for no such row.
    pub fn approval_shown(&self, id: &ApprovalId) -> Result<bool, StateError> {
        self.read(|c| {
            Ok(
                c.prepare_cached("SELECT shown FROM approvals WHERE id = ?1")?
                    .query_row(params![id.as_str()], |row| row.get::<_, bool>(0))
                    .optional()?
                    .unwrap_or(false),
            )
        })
    }

    /// Shows every pending question still hidden: at a start, once the questions of
    /// turns that were never paused are cancelled, those left have a saved turn waiting
    /// on them, and tau stopped before it showed them.
    pub fn show_waiting_approvals(&self) -> Result<usize, StateError> {
        self.write_durable(|tx| {
            Ok(tx
                .prepare_cached(
                    "UPDATE approvals SET shown = 1 WHERE shown = 0 AND state = 'pending'",
                )?
                .execute([])?)
        })
    }

    fn insert_approval(&self, row: &ApprovalRow, listed: Listed) -> Result<(), StateError> {
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
            .map_err(|e| StateError::Invalid(e.to_string()))?;
        let card =
            serde_json::to_string(&row.card).map_err(|e| StateError::Invalid(e.to_string()))?;
        let grant_offer = row
            .grant_offer
            .as_ref()
            .map(serde_json::to_string)
            .transpose()
            .map_err(|e| StateError::Invalid(e.to_string()))?;
        let grant_request = row
            .grant_request
            .as_ref()
            .map(serde_json::to_string)
            .transpose()
            .map_err(|e| StateError::Invalid(e.to_string()))?;
        let inserted = self.write_durable(|tx| {
            Ok(tx.execute(
                &format!(
                    "INSERT OR IGNORE INTO approvals ({COLUMNS}, shown, settled) VALUES \
                     (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, \
                     ?17, ?18, ?19, ?20, ?21, ?22)"
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
                ],
            )?)
        })?;
        if inserted == 1 {
            Ok(())
        } else {
            Err(StateError::Invalid(format!(
                "approval '{}' exists already",
                row.id
            )))
        }
    }

    pub fn approval(&self, id: &ApprovalId) -> Result<Option<ApprovalRow>, StateError> {
        self.read(|c| get(c, id))
    }

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

    /// [`StateDb::decide_approval`], keeping the grant a person asked for with their yes.
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
            return Err(StateError::Invalid(
                "a question cannot be decided as pending".into(),
            ));
        }
        let by =
            serde_json::to_string(decided_by).map_err(|e| StateError::Invalid(e.to_string()))?;
        let grant = grant
            .filter(|_| to == ApprovalState::Approved)
            .map(serde_json::to_string)
            .transpose()
            .map_err(|e| StateError::Invalid(e.to_string()))?;
        self.write_durable(|tx| {
            let changed = tx
                .prepare_cached(
                    "UPDATE approvals SET state = ?2, decided_by = ?3, decided_at = ?4, \
                     grant_request = CASE WHEN grant_offer IS NULL THEN NULL ELSE ?6 END \
                     WHERE id = ?1 AND state = 'pending' AND (shown = 1 OR ?5 = 0)",
                )?
                .execute(params![
                    id.as_str(),
                    to.as_str(),
                    by,
                    at.to_string(),
                    decided_by.is_person(),
                    grant
                ])?;
            Ok(match (changed, get(tx, id)?) {
                (_, None) => Answered::NotFound,
                // Still pending after a person's answer: it was not shown.
                (0, Some(row)) if row.state == ApprovalState::Pending => Answered::NotFound,
                (1, Some(row)) => Answered::Decided(row),
                (_, Some(row)) => Answered::AlreadyDecided(row),
            })
        })
    }

    /// Marks an approved, unconsumed row consumed; false when it was not both.
    pub fn consume_approval(&self, id: &ApprovalId, at: Timestamp) -> Result<bool, StateError> {
        self.write_durable(|tx| {
            Ok(tx
                .prepare_cached(
                    "UPDATE approvals SET consumed_at = ?2 \
                     WHERE id = ?1 AND state = 'approved' AND consumed_at IS NULL",
                )?
                .execute(params![id.as_str(), at.to_string()])?
                == 1)
        })
    }

    /// Records that a dispatched call's result was stored (`outcome = finished`); false
    /// when it was not dispatched or has an outcome already.
    pub fn finish_approval(&self, id: &ApprovalId, at: Timestamp) -> Result<bool, StateError> {
        self.set_outcome(id, CallOutcome::Finished, at)
            .map(|row| row.is_some())
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
        self.write_durable(|tx| {
            let changed = tx
                .prepare_cached(
                    "UPDATE approvals SET outcome = ?2, outcome_at = ?3 \
                     WHERE id = ?1 AND consumed_at IS NOT NULL AND outcome IS NULL",
                )?
                .execute(params![id.as_str(), outcome.as_str(), at.to_string()])?;
            if changed == 1 { get(tx, id) } else { Ok(None) }
        })
    }

    /// Calls let through whose result was never stored (dispatched, no outcome), oldest
    /// first: at a start, each was running when tau stopped.
    pub fn dispatched_without_outcome(&self) -> Result<Vec<ApprovalRow>, StateError> {
        self.select_approvals(
            "WHERE consumed_at IS NOT NULL AND outcome IS NULL",
            params![],
        )
    }

    /// Rows in `state` that were shown, oldest first; all shown ones when `state` is
    /// `None`. What a person is listed.
    pub fn approvals(&self, state: Option<ApprovalState>) -> Result<Vec<ApprovalRow>, StateError> {
        match state {
            Some(state) => {
                self.select_approvals("WHERE state = ?1 AND shown = 1", params![state.as_str()])
            }
            None => self.select_approvals("WHERE shown = 1", params![]),
        }
    }

    /// Rows in `state`, shown or not, oldest first; all of them when `state` is `None`.
    /// For tau's own bookkeeping (start-up, expiry), never for a listing.
    pub fn all_approvals(
        &self,
        state: Option<ApprovalState>,
    ) -> Result<Vec<ApprovalRow>, StateError> {
        match state {
            Some(state) => self.select_approvals("WHERE state = ?1", params![state.as_str()]),
            None => self.select_approvals("", params![]),
        }
    }

    /// Decided questions whose turn was not resumed or closed yet (the hub stopped in
    /// between), oldest first.
    pub fn unsettled_approvals(&self) -> Result<Vec<ApprovalRow>, StateError> {
        self.select_approvals("WHERE state != 'pending' AND settled = 0", params![])
    }

    /// Marks a decided question as dealt with: its turn was resumed or closed. Only the
    /// hub's own bookkeeping; the gate never reads it.
    pub fn mark_approval_settled(&self, id: &ApprovalId) -> Result<(), StateError> {
        self.write(|tx| {
            tx.prepare_cached(
                "UPDATE approvals SET settled = 1 WHERE id = ?1 AND state != 'pending'",
            )?
            .execute(params![id.as_str()])?;
            Ok(())
        })
    }

    /// Settles every decided question of `session` but those in `waiting` (its turn still
    /// waits on them), in one write; how many it settled. Only the questions not settled
    /// yet are read, so the cost follows what changed, not the session's length.
    pub fn settle_session_approvals(
        &self,
        session: &SessionId,
        waiting: &[ApprovalId],
    ) -> Result<usize, StateError> {
        self.write(|tx| {
            let unsettled = tx
                .prepare_cached(
                    "SELECT id FROM approvals WHERE session = ?1 AND settled = 0 AND state != 'pending'",
                )?
                .query_map(params![session.as_str()], |row| row.get::<_, String>(0))?
                .collect::<Result<Vec<_>, _>>()?;
            let mut settle = tx.prepare_cached("UPDATE approvals SET settled = 1 WHERE id = ?1")?;
            let mut settled = 0;
            for id in unsettled
                .iter()
                .filter(|id| !waiting.iter().any(|w| w.as_str() == id.as_str()))
            {
                settled += settle.execute(params![id])?;
            }
            Ok(settled)
        })
    }

    fn select_approvals(
        &self,
        filter: &str,
        values: impl rusqlite::Params,
    ) -> Result<Vec<ApprovalRow>, StateError> {
        let raws = self.read(|c| {
            let mut statement = c.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM approvals {filter} ORDER BY created_at, id"
            ))?;
            let rows = statement.query_map(values, read_row)?;
            Ok(rows.collect::<Result<Vec<_>, _>>()?)
        })?;
        let mut rows = raws.into_iter().map(parse).collect::<Result<Vec<_>, _>>()?;
        // Timestamps are ordered as instants, not as the text they are stored in.
        rows.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
        Ok(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn open(dir: &tempfile::TempDir) -> StateDb {
        StateDb::open(&dir.path().join("state.db")).unwrap()
    }

    fn id(text: &str) -> ApprovalId {
        ApprovalId::parse(text).unwrap()
    }

    fn row(name: &str, created: i64) -> ApprovalRow {
        NewApproval {
            id: id(name),
            session: SessionId::parse("web-1").unwrap(),
            call_id: "t1".into(),
            tool: "lights".into(),
            tier: Tier::Physical,
            effect: "switches lights".into(),
            arguments: json!({"room": "kitchen", "a": [2, 1]}),
            channel: "web".into(),
            created_at: Timestamp::from_second(created).unwrap(),
            deadline: Timestamp::from_second(created + 1800).unwrap(),
            card: CallCard::default(),
        }
        .into_row()
    }

    #[test]
    fn canonical_arguments_sort_keys_at_every_depth_and_hash_them() {
        let (text, hash) = canonical_arguments(&json!({"b": {"y": 1, "x": 2}, "a": "é"}));
        assert_eq!(text, r#"{"a":"é","b":{"x":2,"y":1}}"#);
        assert_eq!(
            hash,
            "a88fe9c97e53b951a59cb2d20144f73e0e27319322a85ff3a56a926fdadc5f16"
        );
        let (_, same) = canonical_arguments(&json!({"a": "é", "b": {"x": 2, "y": 1}}));
        assert_eq!(hash, same, "key order does not change the hash");
        let (_, other) = canonical_arguments(&json!({"a": "é", "b": {"x": 2, "y": 2}}));
        assert_ne!(hash, other);
    }

    #[test]
    fn a_row_reads_back_exactly_as_it_was_written() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir);
        let mut written = row("ap_1", 10);
        written.created_at = "2026-12-02T21:44:52.123456789Z".parse().unwrap();
        store.create_approval(&written).unwrap();
        assert_eq!(store.approval(&id("ap_1")).unwrap(), Some(written));
        assert_eq!(store.approval(&id("ap_2")).unwrap(), None);
        assert!(
            store.create_approval(&row("ap_1", 11)).is_err(),
            "ids are never reused"
        );
    }

    #[test]
    fn a_card_is_stored_whole_with_its_question() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir);
        let mut written = row("ap_1", 10);
        written.card.headline = Some("switch ON · Kitchen light (kitchen)".into());
        written.card.push(
            tau_protocol::CardNote::warning("file", "setup.sh (8 bytes)").with_detail("echo hi\n"),
        );
        store.create_approval(&written).unwrap();
        let read = store.approval(&id("ap_1")).unwrap().unwrap();
        assert_eq!(read.question().card, written.card);
        assert_eq!(read, written);
    }

    #[test]
    fn the_first_answer_wins_and_repeats_change_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir);
        store.create_approval(&row("ap_1", 10)).unwrap();
        let person = DecidedBy::person("web");
        let at = Timestamp::from_second(20).unwrap();
        let Answered::Decided(decided) = store
            .decide_approval(&id("ap_1"), ApprovalState::Approved, &person, at)
            .unwrap()
        else {
            panic!("the first answer decides");
        };
        assert_eq!(
            (
                decided.state,
                decided.decided_by.clone(),
                decided.decided_at
            ),
            (ApprovalState::Approved, Some(person.clone()), Some(at))
        );
        for (to, by) in [
            (ApprovalState::Approved, person.clone()),
            (ApprovalState::Rejected, person.clone()),
            (ApprovalState::Expired, DecidedBy::Timeout),
        ] {
            let later = Timestamp::from_second(30).unwrap();
            assert_eq!(
                store.decide_approval(&id("ap_1"), to, &by, later).unwrap(),
                Answered::AlreadyDecided(decided.clone())
            );
        }
        assert_eq!(
            store
                .decide_approval(&id("ap_9"), ApprovalState::Approved, &person, at)
                .unwrap(),
            Answered::NotFound
        );
        assert!(
            store
                .decide_approval(&id("ap_1"), ApprovalState::Pending, &person, at)
                .is_err()
        );
    }

    #[test]
    fn only_an_approved_row_is_consumed_and_only_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir);
        store.create_approval(&row("ap_1", 10)).unwrap();
        store.create_approval(&row("ap_2", 11)).unwrap();
        let at = Timestamp::from_second(20).unwrap();
        assert!(!store.consume_approval(&id("ap_1"), at).unwrap(), "pending");
        let person = DecidedBy::person("web");
        store
            .decide_approval(&id("ap_2"), ApprovalState::Rejected, &person, at)
            .unwrap();
        assert!(
            !store.consume_approval(&id("ap_2"), at).unwrap(),
            "rejected"
        );
        store
            .decide_approval(&id("ap_1"), ApprovalState::Approved, &person, at)
            .unwrap();
        assert!(store.consume_approval(&id("ap_1"), at).unwrap());
        assert!(!store.consume_approval(&id("ap_1"), at).unwrap());
        assert_eq!(
            store.approval(&id("ap_1")).unwrap().unwrap().consumed_at,
            Some(at)
        );
    }

    #[test]
    fn a_dispatched_call_gets_one_outcome_and_only_after_it_was_dispatched() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir);
        for name in ["ap_1", "ap_2", "ap_3"] {
            store.create_approval(&row(name, 10)).unwrap();
        }
        let at = Timestamp::from_second(20).unwrap();
        assert!(!store.finish_approval(&id("ap_1"), at).unwrap(), "pending");
        assert_eq!(
            store.close_effect_uncertain(&id("ap_1"), at).unwrap(),
            None,
            "never dispatched: its effect is certain (none)"
        );
        let person = DecidedBy::person("web");
        for name in ["ap_1", "ap_2", "ap_3"] {
            store
                .decide_approval(&id(name), ApprovalState::Approved, &person, at)
                .unwrap();
        }
        assert!(store.dispatched_without_outcome().unwrap().is_empty());
        store.consume_approval(&id("ap_1"), at).unwrap();
        store.consume_approval(&id("ap_2"), at).unwrap();
        let open_ids = |store: &StateDb| {
            store
                .dispatched_without_outcome()
                .unwrap()
                .into_iter()
                .map(|r| r.id.to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(open_ids(&store), ["ap_1", "ap_2"]);
        assert!(store.finish_approval(&id("ap_1"), at).unwrap());
        let later = Timestamp::from_second(30).unwrap();
        let closed = store.close_effect_uncertain(&id("ap_2"), later).unwrap();
        assert_eq!(
            closed.map(|r| (r.outcome, r.outcome_at)),
            Some((Some(CallOutcome::EffectUncertain), Some(later)))
        );
        assert!(open_ids(&store).is_empty());
        // An outcome is set once: neither can replace the other, nor repeat.
        assert!(!store.finish_approval(&id("ap_2"), later).unwrap());
        assert!(!store.finish_approval(&id("ap_1"), later).unwrap());
        assert_eq!(
            store.close_effect_uncertain(&id("ap_1"), later).unwrap(),
            None
        );
        assert_eq!(
            store.close_effect_uncertain(&id("ap_2"), later).unwrap(),
            None
        );
        assert_eq!(
            store.approval(&id("ap_1")).unwrap().unwrap().outcome,
            Some(CallOutcome::Finished)
        );
        store
            .write(|tx| {
                tx.execute("UPDATE approvals SET outcome = 'ran' WHERE id = 'ap_1'", [])?;
                Ok(())
            })
            .unwrap();
        assert!(
            store.approval(&id("ap_1")).is_err(),
            "an unknown outcome is an error"
        );
    }

    #[test]
    fn lists_and_settling() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir);
        store.create_approval(&row("ap_b", 12)).unwrap();
        store.create_approval(&row("ap_a", 11)).unwrap();
        store.create_approval(&row("ap_c", 13)).unwrap();
        let at = Timestamp::from_second(20).unwrap();
        store
            .decide_approval(&id("ap_c"), ApprovalState::Expired, &DecidedBy::Timeout, at)
            .unwrap();
        let ids = |rows: Vec<ApprovalRow>| {
            rows.into_iter()
                .map(|r| r.id.to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            ids(store.approvals(Some(ApprovalState::Pending)).unwrap()),
            ["ap_a", "ap_b"],
            "oldest first"
        );
        assert_eq!(
            ids(store.approvals(None).unwrap()),
            ["ap_a", "ap_b", "ap_c"]
        );
        assert_eq!(ids(store.unsettled_approvals().unwrap()), ["ap_c"]);
        store.mark_approval_settled(&id("ap_a")).unwrap();
        assert_eq!(
            ids(store.approvals(Some(ApprovalState::Pending)).unwrap()),
            ["ap_a", "ap_b"],
            "a pending question is never settled"
        );
        store.mark_approval_settled(&id("ap_c")).unwrap();
        assert!(store.unsettled_approvals().unwrap().is_empty());
    }

    #[test]
    fn a_session_s_decided_questions_are_settled_at_once_but_those_its_turn_waits_on() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir);
        let session = SessionId::parse("web-1").unwrap();
        let at = Timestamp::from_second(20).unwrap();
        for (name, created) in [("ap_a", 11), ("ap_b", 12), ("ap_c", 13), ("ap_d", 14)] {
            store.create_approval(&row(name, created)).unwrap();
        }
        for name in ["ap_a", "ap_b", "ap_c"] {
            store
                .decide_approval(&id(name), ApprovalState::Rejected, &DecidedBy::Timeout, at)
                .unwrap();
        }
        // ap_c's turn still waits on it; ap_d is pending.
        assert_eq!(
            store
                .settle_session_approvals(&session, &[id("ap_c")])
                .unwrap(),
            2
        );
        let unsettled: Vec<String> = store
            .unsettled_approvals()
            .unwrap()
            .into_iter()
            .map(|r| r.id.to_string())
            .collect();
        assert_eq!(unsettled, ["ap_c"]);
        // Settled ones are not written again; another session's are not touched.
        assert_eq!(store.settle_session_approvals(&session, &[]).unwrap(), 1);
        assert_eq!(store.settle_session_approvals(&session, &[]).unwrap(), 0);
        let other = SessionId::parse("web-2").unwrap();
        assert_eq!(store.settle_session_approvals(&other, &[]).unwrap(), 0);
        assert_eq!(
            store.approval(&id("ap_d")).unwrap().unwrap().state,
            ApprovalState::Pending
        );
    }

    #[test]
    fn handles_on_one_file_race_to_one_winner() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.db");
        StateDb::open(&path)
            .unwrap()
            .create_approval(&row("ap_1", 10))
            .unwrap();
        let winners: usize = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..6)
                .map(|n| {
                    let path = &path;
                    scope.spawn(move || {
                        // Each its own connection, as each process has.
                        let store = StateDb::open(path).unwrap();
                        let to = if n % 2 == 0 {
                            ApprovalState::Approved
                        } else {
                            ApprovalState::Rejected
                        };
                        let by = DecidedBy::person("web");
                        let answered = store
                            .decide_approval(&id("ap_1"), to, &by, Timestamp::now())
                            .unwrap();
                        usize::from(matches!(answered, Answered::Decided(_)))
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).sum()
        });
        assert_eq!(winners, 1);
    }

    #[test]
    fn a_tampered_row_is_an_error_never_a_default() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir);
        store.create_approval(&row("ap_1", 10)).unwrap();
        for (column, value) in [
            ("state", "'yes'"),
            ("tier", "7"),
            ("tier", "'two'"),
            ("session", "'../x'"),
            ("decided_by", "'{\"kind\":\"model\"}'"),
            ("card", "'{\"notes\":[{\"level\":\"fine\"}]}'"),
        ] {
            store
                .write(|tx| {
                    tx.execute(
                        &format!("UPDATE approvals SET {column} = {value} WHERE id = 'ap_1'"),
                        [],
                    )?;
                    Ok(())
                })
                .unwrap();
            assert!(store.approval(&id("ap_1")).is_err(), "{column}");
            store
                .write(|tx| {
                    tx.execute("DELETE FROM approvals", [])?;
                    Ok(())
                })
                .unwrap();
            store.create_approval(&row("ap_1", 10)).unwrap();
        }
        store
            .write(|tx| {
                tx.execute("UPDATE approvals SET state = 'yes' WHERE id = 'ap_1'", [])?;
                Ok(())
            })
            .unwrap();
        assert_eq!(
            store.approval(&id("ap_1")).unwrap_err().to_string(),
            "state.db: approval 'ap_1' is unreadable: its state"
        );
    }
}
