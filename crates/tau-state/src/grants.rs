//! Grants: a person's "yes, and allow exactly this again", stored.
//!
//! A grant covers a call only when everything it was made for is the same: the tool, its
//! tier, the SHA-256 of its input schema, the SHA-256 of the arguments' canonical JSON,
//! the SHA-256 of tau's card, the channel, and the conversation (scope `conversation`) or
//! the person on that channel (scope `channel`). Equality only: no prefix, no pattern.
//!
//! Using a grant and revoking it are each one write transaction that takes the write lock
//! at its start, so a use and a revoke racing in two processes have one order: a use that
//! comes after a revoke finds no live grant, and a use that came before is counted in the
//! revoke's row.

use jiff::Timestamp;
use rusqlite::params;

use crate::sql::{Row, Sql};
use tau_protocol::{ApprovalId, DecidedBy, Grant, GrantId, GrantScope, SessionId, Tier};

use crate::approvals::canonical_arguments;
use crate::error::StateError;
use crate::handles::Grants;

/// A call the gate asks the store about: does a live grant cover exactly this?
#[derive(Debug, Clone, Copy)]
pub struct GrantedCall<'a> {
    pub tool: &'a str,
    pub tier: Tier,
    pub schema_sha256: &'a str,
    pub arguments_sha256: &'a str,
    pub card_sha256: &'a str,
    pub channel: &'a str,
    pub session: &'a SessionId,
    /// The person on the channel (a Telegram user id); `None` on a one-person channel.
    pub person: Option<&'a str>,
}

/// What a revoke did.
#[derive(Debug, Clone, PartialEq)]
pub enum Revoked {
    /// This revoke ended it; the row as it is now.
    Revoked(Grant),
    /// It was revoked before; nothing changed.
    AlreadyRevoked(Grant),
    NotFound,
}

const COLUMNS: &str = "id, tool, tier, schema_sha256, arguments, arguments_sha256, \
     card_sha256, scope, channel, session, person, created_by, approval_id, created_at, \
     expires_at, uses, max_uses, last_used_at, revoked_at, revoked_by, workspace_sha256";

fn tier_number(tier: Tier) -> i64 {
    i64::from(tier.number())
}

fn read_row(row: &Row<'_>) -> rusqlite::Result<Raw> {
    Ok(Raw {
        id: row.get(0)?,
        tool: row.get(1)?,
        tier: row.get(2)?,
        schema_sha256: row.get(3)?,
        arguments: row.get(4)?,
        arguments_sha256: row.get(5)?,
        card_sha256: row.get(6)?,
        scope: row.get(7)?,
        channel: row.get(8)?,
        session: row.get(9)?,
        person: row.get(10)?,
        created_by: row.get(11)?,
        approval_id: row.get(12)?,
        created_at: row.get(13)?,
        expires_at: row.get(14)?,
        uses: row.get(15)?,
        max_uses: row.get(16)?,
        last_used_at: row.get(17)?,
        revoked_at: row.get(18)?,
        revoked_by: row.get(19)?,
        workspace_sha256: row.get(20)?,
    })
}

/// A row's columns as stored, before they are checked.
struct Raw {
    id: String,
    tool: String,
    tier: i64,
    schema_sha256: String,
    arguments: String,
    arguments_sha256: String,
    card_sha256: String,
    scope: String,
    channel: String,
    session: String,
    person: Option<String>,
    created_by: String,
    approval_id: Option<String>,
    created_at: String,
    expires_at: String,
    uses: i64,
    max_uses: Option<i64>,
    last_used_at: Option<String>,
    revoked_at: Option<String>,
    revoked_by: Option<String>,
    workspace_sha256: Option<String>,
}

/// A stored row, checked field by field: a row that does not read, or whose arguments do
/// not hash to its hash, is an error and covers nothing.
fn parse(raw: Raw) -> Result<Grant, StateError> {
    let bad =
        |what: &str| StateError::unreadable(format!("grant '{}'", raw.id), format!("its {what}"));
    let time = |text: &str, what: &str| {
        text.parse::<Timestamp>()
            .map(|t| t.to_string())
            .map_err(|_| bad(what))
    };
    let tier = match raw.tier {
        0 => Tier::Read,
        1 => Tier::Write,
        2 => Tier::Physical,
        _ => return Err(bad("tier")),
    };
    let arguments: serde_json::Value =
        serde_json::from_str(&raw.arguments).map_err(|_| bad("arguments"))?;
    let (canonical, hash) = canonical_arguments(&arguments);
    if canonical != raw.arguments || hash != raw.arguments_sha256 {
        return Err(bad("arguments (they do not hash to its hash)"));
    }
    let count = |n: i64, what: &str| u32::try_from(n).map_err(|_| bad(what));
    let by =
        |text: &str, what: &str| serde_json::from_str::<DecidedBy>(text).map_err(|_| bad(what));
    Ok(Grant {
        id: GrantId::parse(&raw.id).map_err(|_| bad("id"))?,
        tier,
        schema_sha256: raw.schema_sha256.clone(),
        arguments,
        arguments_sha256: raw.arguments_sha256.clone(),
        card_sha256: raw.card_sha256.clone(),
        workspace_sha256: raw.workspace_sha256.clone(),
        scope: GrantScope::parse(&raw.scope).ok_or_else(|| bad("scope"))?,
        session: SessionId::parse(&raw.session).map_err(|_| bad("session"))?,
        created_by: by(&raw.created_by, "created_by")?,
        created_at: time(&raw.created_at, "created_at")?,
        expires_at: time(&raw.expires_at, "expires_at")?,
        uses: count(raw.uses, "uses")?,
        max_uses: raw.max_uses.map(|n| count(n, "max_uses")).transpose()?,
        last_used_at: raw
            .last_used_at
            .as_deref()
            .map(|t| time(t, "last_used_at"))
            .transpose()?,
        revoked_at: raw
            .revoked_at
            .as_deref()
            .map(|t| time(t, "revoked_at"))
            .transpose()?,
        revoked_by: raw
            .revoked_by
            .as_deref()
            .map(|t| by(t, "revoked_by"))
            .transpose()?,
        tool: raw.tool,
        channel: raw.channel,
        person: raw.person,
        approval_id: raw
            .approval_id
            .as_deref()
            .map(|id| ApprovalId::parse(id).map_err(|_| bad("approval_id")))
            .transpose()?,
    })
}

/// Whether `grant` may still cover a call at `at`: not revoked, not expired, uses left.
pub fn is_live(grant: &Grant, at: Timestamp) -> bool {
    grant.revoked_at.is_none()
        && grant.max_uses.is_none_or(|max| grant.uses < max)
        && grant
            .expires_at
            .parse::<Timestamp>()
            .is_ok_and(|expires| at < expires)
}

fn get(connection: &Sql<'_>, id: &GrantId) -> Result<Option<Grant>, StateError> {
    connection
        .query_optional(
            &format!("SELECT {COLUMNS} FROM grants WHERE id = ?1"),
            params![id.as_str()],
            read_row,
        )?
        .map(parse)
        .transpose()
}

/// The oldest live grant that covers exactly `call` at `at`.
fn live_candidate(
    connection: &Sql<'_>,
    call: &GrantedCall<'_>,
    at: Timestamp,
) -> Result<Option<Grant>, StateError> {
    Ok(covering(connection, call, at, None)?.into_iter().next())
}

/// The live grants that cover exactly `call` at `at`, oldest first (only `only` when it
/// is given).
fn covering(
    connection: &Sql<'_>,
    call: &GrantedCall<'_>,
    at: Timestamp,
    only: Option<&GrantId>,
) -> Result<Vec<Grant>, StateError> {
    let rows = connection.query_map(
        &format!(
            "SELECT {COLUMNS} FROM grants WHERE tool = ?1 AND tier = ?2 \
         AND schema_sha256 = ?3 AND arguments_sha256 = ?4 AND card_sha256 = ?5 \
         AND channel = ?6 AND revoked_at IS NULL \
         AND ((scope = 'conversation' AND session = ?7) \
              OR (scope = 'channel' AND person IS NOT DISTINCT FROM ?8)) \
         AND (max_uses IS NULL OR uses < max_uses) \
         ORDER BY created_at, id"
        ),
        params![
            call.tool,
            tier_number(call.tier),
            call.schema_sha256,
            call.arguments_sha256,
            call.card_sha256,
            call.channel,
            call.session.as_str(),
            call.person,
        ],
        // A row that does not read is passed on to be left out below.
        |row| Ok(read_row(row)),
    )?;
    let mut found = Vec::new();
    for raw in rows {
        // A row that does not read covers nothing; the others still may.
        match parse(raw?) {
            Ok(grant) if is_live(&grant, at) && only.is_none_or(|id| *id == grant.id) => {
                found.push(grant);
            }
            Ok(_) => {}
            Err(error) => {
                tracing::error!(%error, "a stored grant does not read; it covers nothing");
            }
        }
    }
    Ok(found)
}

fn json(value: &impl serde::Serialize) -> Result<String, StateError> {
    serde_json::to_string(value).map_err(StateError::encode("who decided"))
}

impl Grants {
    /// Stores a new grant (its `uses` 0, not revoked). Its arguments are stored as their
    /// canonical JSON and must hash to its `arguments_sha256`; an id that exists already
    /// is an error.
    pub fn create_grant(&self, grant: &Grant) -> Result<(), StateError> {
        let (arguments, hash) = canonical_arguments(&grant.arguments);
        if hash != grant.arguments_sha256 {
            return Err(StateError::GrantHash(grant.id.clone()));
        }
        let time = |text: &str| {
            text.parse::<Timestamp>()
                .map(|t| t.to_string())
                .map_err(|_| StateError::GrantTime {
                    grant: grant.id.clone(),
                    time: text.to_owned(),
                })
        };
        let (created_at, expires_at) = (time(&grant.created_at)?, time(&grant.expires_at)?);
        let created_by = json(&grant.created_by)?;
        let inserted = self.db.write_durable(|tx| {
            tx.execute(
                &format!(
                    "INSERT INTO grants ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, \
                     ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, 0, ?16, NULL, NULL, NULL, ?17) ON CONFLICT DO NOTHING"
                ),
                params![
                    grant.id.as_str(),
                    grant.tool,
                    tier_number(grant.tier),
                    grant.schema_sha256,
                    arguments,
                    grant.arguments_sha256,
                    grant.card_sha256,
                    grant.scope.as_str(),
                    grant.channel,
                    grant.session.as_str(),
                    grant.person,
                    created_by,
                    grant.approval_id.as_ref().map(ApprovalId::as_str),
                    created_at,
                    expires_at,
                    grant.max_uses.map(i64::from),
                    grant.workspace_sha256,
                ],
            )
        })?;
        if inserted == 1 {
            Ok(())
        } else {
            Err(StateError::GrantExists(grant.id.clone()))
        }
    }

    pub fn grant(&self, id: &GrantId) -> Result<Option<Grant>, StateError> {
        self.db.read(|c| get(c, id))
    }

    /// Every grant, oldest first; only those live at `live_at` when it is given.
    pub fn grants(&self, live_at: Option<Timestamp>) -> Result<Vec<Grant>, StateError> {
        let raws = self.db.read(|c| {
            c.query_map(
                &format!("SELECT {COLUMNS} FROM grants ORDER BY created_at, id"),
                params![],
                read_row,
            )
        })?;
        let grants = raws.into_iter().map(parse).collect::<Result<Vec<_>, _>>()?;
        Ok(grants
            .into_iter()
            .filter(|g| live_at.is_none_or(|at| is_live(g, at)))
            .collect())
    }

    /// Uses the oldest live grant that covers exactly `call` at `at`, counting the use in
    /// the same transaction; `None` when none does. The grant is returned as it is after
    /// this use.
    pub fn use_grant(
        &self,
        call: &GrantedCall<'_>,
        at: Timestamp,
    ) -> Result<Option<Grant>, StateError> {
        // Most calls have no grant: a read says so without a write (and its flush).
        if self.db.read(|c| live_candidate(c, call, at))?.is_none() {
            return Ok(None);
        }
        self.db.write_durable(|tx| {
            let Some(grant) = live_candidate(tx, call, at)? else {
                return Ok(None);
            };
            let changed = tx.execute(
                "UPDATE grants SET uses = uses + 1, last_used_at = ?2 WHERE id = ?1 \
                     AND revoked_at IS NULL AND (max_uses IS NULL OR uses < max_uses)",
                params![grant.id.as_str(), at.to_string()],
            )?;
            if changed != 1 {
                return Ok(None);
            }
            get(tx, &grant.id)
        })
    }

    /// The live grants that cover exactly `call` at `at`, oldest first, unused: the gate
    /// checks each against the audit log before it uses one ([`Grants::use_this_grant`]).
    pub fn grants_covering(
        &self,
        call: &GrantedCall<'_>,
        at: Timestamp,
    ) -> Result<Vec<Grant>, StateError> {
        self.db.read(|c| covering(c, call, at, None))
    }

    /// Uses grant `id` for `call` at `at` when it still covers it (live, the same call),
    /// counting the use in the same transaction; `None` when it no longer does (revoked,
    /// used up or expired meanwhile). The grant is returned as it is after this use.
    pub fn use_this_grant(
        &self,
        id: &GrantId,
        call: &GrantedCall<'_>,
        at: Timestamp,
    ) -> Result<Option<Grant>, StateError> {
        self.db.write_durable(|tx| {
            if covering(tx, call, at, Some(id))?.is_empty() {
                return Ok(None);
            }
            let changed = tx.execute(
                "UPDATE grants SET uses = uses + 1, last_used_at = ?2 WHERE id = ?1 \
                     AND revoked_at IS NULL AND (max_uses IS NULL OR uses < max_uses)",
                params![id.as_str(), at.to_string()],
            )?;
            if changed != 1 {
                return Ok(None);
            }
            get(tx, id)
        })
    }

    /// Revokes a grant: from this commit on it covers nothing.
    pub fn revoke_grant(
        &self,
        id: &GrantId,
        by: &DecidedBy,
        at: Timestamp,
    ) -> Result<Revoked, StateError> {
        let by = json(by)?;
        self.db.write_durable(|tx| {
            let changed = tx.execute(
                "UPDATE grants SET revoked_at = ?2, revoked_by = ?3 \
                     WHERE id = ?1 AND revoked_at IS NULL",
                params![id.as_str(), at.to_string(), by],
            )?;
            Ok(match (changed, get(tx, id)?) {
                (_, None) => Revoked::NotFound,
                (1, Some(grant)) => Revoked::Revoked(grant),
                (_, Some(grant)) => Revoked::AlreadyRevoked(grant),
            })
        })
    }
}

/// Step 3 of the schema: the grants table.
pub(crate) const GRANTS_TABLE: &str = "
CREATE TABLE grants (
    id TEXT PRIMARY KEY,
    tool TEXT NOT NULL,
    tier INTEGER NOT NULL,
    schema_sha256 TEXT NOT NULL,
    arguments TEXT NOT NULL,
    arguments_sha256 TEXT NOT NULL,
    card_sha256 TEXT NOT NULL,
    scope TEXT NOT NULL CHECK (scope IN ('conversation', 'channel')),
    channel TEXT NOT NULL,
    session TEXT NOT NULL,
    person TEXT,
    created_by TEXT NOT NULL,
    approval_id TEXT,
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    uses INTEGER NOT NULL DEFAULT 0,
    max_uses INTEGER,
    last_used_at TEXT,
    revoked_at TEXT,
    revoked_by TEXT
);
CREATE INDEX grants_by_call ON grants (tool, arguments_sha256);
";
