//! How a question's row is stored and read back: every column checked, a row that does
//! not read an error, never a default.

use jiff::Timestamp;
use rusqlite::params;

use crate::sql::{Row, Sql};
use tau_protocol::{ApprovalId, DecidedBy, SessionId, Tier};

use super::{ApprovalRow, ApprovalState, CallOutcome};
use crate::db::StateDb;
use crate::error::StateError;

pub(super) const COLUMNS: &str = "id, session, call_id, tool, tier, effect, arguments, arguments_sha256, \
     channel, created_at, deadline, state, decided_by, decided_at, consumed_at, card, outcome, \
     outcome_at, grant_offer, grant_request";

/// A row's columns as stored, before they are checked.
pub(super) struct Raw {
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

pub(super) fn read_row(row: &Row<'_>) -> rusqlite::Result<Raw> {
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
pub(super) fn parse(raw: Raw) -> Result<ApprovalRow, StateError> {
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

pub(super) fn get(
    connection: &Sql<'_>,
    id: &ApprovalId,
) -> Result<Option<ApprovalRow>, StateError> {
    connection
        .query_optional(
            &format!("SELECT {COLUMNS} FROM approvals WHERE id = ?1"),
            params![id.as_str()],
            read_row,
        )?
        .map(parse)
        .transpose()
}

/// The rows `filter` (a `WHERE` clause, or nothing) selects, oldest first.
pub(super) fn select(
    db: &StateDb,
    filter: &str,
    values: crate::sql::Params<'_>,
) -> Result<Vec<ApprovalRow>, StateError> {
    let raws = db.read(|c| {
        c.query_map(
            &format!("SELECT {COLUMNS} FROM approvals {filter} ORDER BY created_at, id"),
            values,
            read_row,
        )
    })?;
    let mut rows = raws.into_iter().map(parse).collect::<Result<Vec<_>, _>>()?;
    // Timestamps are ordered as instants, not as the text they are stored in.
    rows.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
    Ok(rows)
}
