//! The gate's grants: checked before a question is asked, offered on the question, made
//! from a person's "yes, and allow this again". What a grant covers is the gate's to say:
//! the tool, its tier, the SHA-256 of its input schema, of the arguments' canonical JSON
//! and of tau's card, on this channel, in this conversation or for this person. Nothing
//! the model writes widens it.

use jiff::{SignedDuration, Timestamp};
use serde_json::Value;
use tau_protocol::{
    CallCard, DecidedBy, Grant, GrantId, GrantMade, GrantOffer, GrantRequest, SessionId, Tier,
};

use super::approver::ApprovalQuestion;
use super::durable::{StateDb, canonical_arguments};
use super::gate::{Standing, TierGate};
use crate::audit::{AuditEvent, ErrorSite};
use crate::ids::random_id;

/// Where a gate's grants live and whose they are: the conversation's session, the person
/// on the channel (a Telegram user id; `None` on a one-person channel), and how long a
/// grant lasts unless its maker says (`[approval] grant_hours`).
#[derive(Clone)]
pub struct GateGrants {
    pub store: StateDb,
    pub session: SessionId,
    pub person: Option<String>,
    pub hours: u32,
}

/// SHA-256 of tau's card for a call, as a grant records it.
fn card_sha256(card: &CallCard) -> String {
    let value = serde_json::to_value(card).unwrap_or(Value::Null);
    canonical_arguments(&value).1
}

impl TierGate {
    /// Lets this gate use and offer grants. Live grants whose tool this gate knows with
    /// another tier or input schema than they were made for are voided first, each with a
    /// `grant_revoked` line by `policy`: a grant never comes back when a tool changes back.
    pub fn with_grants(mut self, grants: GateGrants) -> Self {
        self.void_changed_grants(&grants);
        self.grants = Some(grants);
        self
    }

    fn void_changed_grants(&self, grants: &GateGrants) {
        let now = Timestamp::now();
        let live = match grants.store.grants(Some(now)) {
            Ok(live) => live,
            Err(error) => {
                tracing::error!(%error, "grants could not be read to void changed ones");
                return;
            }
        };
        for grant in live {
            let Some(reason) = self.changed_since(&grant) else {
                continue;
            };
            match grants.store.revoke_grant(&grant.id, &DecidedBy::Policy, now) {
                Ok(tau_state::Revoked::Revoked(grant)) => {
                    tracing::warn!(grant = %grant.id, tool = %grant.tool, %reason, "grant voided");
                    self.events.emit(&AuditEvent::GrantRevoked {
                        grant_id: grant.id.clone(),
                        tool: grant.tool.clone(),
                        revoked_by: DecidedBy::Policy,
                        uses: grant.uses,
                        reason: Some(reason),
                    });
                }
                // Revoked meanwhile by someone else: nothing left to void.
                Ok(tau_state::Revoked::AlreadyRevoked(_) | tau_state::Revoked::NotFound) => {}
                Err(error) => {
                    tracing::error!(grant = %grant.id, %error, "a changed tool's grant could not be voided; its hashes still keep it from covering a call");
                }
            }
        }
    }

    /// Why `grant` no longer fits its tool as this gate knows it; `None` when it does, or
    /// when the tool is not registered here (a server that is down changes nothing).
    fn changed_since(&self, grant: &Grant) -> Option<String> {
        match self.tiers.standing(&grant.tool) {
            Standing::Unknown => None,
            Standing::Invalid { reason } => Some(format!("the tool's tier is not trusted: {reason}")),
            Standing::Known { tier, .. } if tier != grant.tier => Some(format!(
                "the tool's tier changed from {} to {}",
                grant.tier.number(),
                tier.number()
            )),
            Standing::Known { .. } => match self.tiers.schema_sha256(&grant.tool) {
                Some(schema) if schema != grant.schema_sha256 => {
                    Some("the tool's input schema changed".to_owned())
                }
                Some(_) | None => None,
            },
        }
    }

    /// The id of the live grant that covers exactly this tier-2 call, its use counted; the
    /// `grant_used` audit line is written. `None` when none does or anything fails (then
    /// the person is asked, as without grants).
    pub(super) fn granted(
        &self,
        tool: &str,
        tier: Tier,
        arguments: &Value,
        tool_use_id: &str,
    ) -> Option<GrantId> {
        let grants = self.grants.as_ref()?;
        let schema_sha256 = self.tiers.schema_sha256(tool)?;
        let card_sha256 = card_sha256(&self.tiers.card(tool, arguments));
        let (_, arguments_sha256) = canonical_arguments(arguments);
        let call = tau_state::GrantedCall {
            tool,
            tier,
            schema_sha256: &schema_sha256,
            arguments_sha256: &arguments_sha256,
            card_sha256: &card_sha256,
            channel: &self.channel,
            session: &grants.session,
            person: grants.person.as_deref(),
        };
        match grants.store.use_grant(&call, Timestamp::now()) {
            Ok(Some(grant)) => {
                tracing::info!(tool, tool_use_id, grant = %grant.id, uses = grant.uses, "call covered by a grant; nobody asked");
                self.events.emit(&AuditEvent::GrantUsed {
                    grant_id: grant.id.clone(),
                    tool: tool.to_owned(),
                    tool_use_id: tool_use_id.to_owned(),
                    session: grants.session.to_string(),
                    channel: self.channel.clone(),
                    use_number: grant.uses,
                    max_uses: grant.max_uses,
                });
                Some(grant.id)
            }
            Ok(None) => None,
            Err(error) => {
                tracing::error!(tool, tool_use_id, %error, "grants could not be read; asking");
                self.emit_error(
                    ErrorSite::TierGate,
                    format!("grants could not be read, the person is asked: {error}"),
                    tool,
                    tool_use_id,
                );
                None
            }
        }
    }

    /// What a grant made from this question would cover, when this gate has grants and
    /// the tool's schema can be hashed.
    pub(super) fn grant_offer(
        &self,
        tool: &str,
        arguments: &Value,
        card: &CallCard,
    ) -> Option<GrantOffer> {
        let grants = self.grants.as_ref()?;
        // A call with a second step (a lock-class device) is asked every time: a grant
        // would let the next one through without it.
        if card.confirm.is_some() {
            return None;
        }
        Some(GrantOffer {
            schema_sha256: self.tiers.schema_sha256(tool)?,
            arguments_sha256: canonical_arguments(arguments).1,
            card_sha256: card_sha256(card),
            hours: grants.hours,
        })
    }

    /// Makes the grant a person asked for with their yes to `request`, exactly as the
    /// question offered it; writes `grant_created`. `None` (with an `error` line) when
    /// the question offered none, the request is out of bounds or the store failed: the
    /// yes still stands for this one call.
    pub(super) fn make_grant(
        &self,
        request: &ApprovalQuestion,
        wanted: &GrantRequest,
        decided_by: &DecidedBy,
    ) -> Option<GrantMade> {
        let fail = |message: String| {
            tracing::warn!(tool = %request.tool, %message, "no grant made");
            self.emit_error(
                ErrorSite::TierGate,
                format!("no grant made: {message}"),
                &request.tool,
                &request.call_id,
            );
            None
        };
        let (Some(grants), Some(offer)) = (&self.grants, &request.grant) else {
            return fail("this question offered no grant".into());
        };
        let hours = match wanted.checked_hours(offer.hours) {
            Ok(hours) => hours,
            Err(error) => return fail(error.to_string()),
        };
        let Some(id) = random_id("gr").ok().and_then(|id| GrantId::parse(&id).ok()) else {
            return fail("no randomness for a grant id".into());
        };
        let now = Timestamp::now();
        let Some(expires) = now
            .checked_add(SignedDuration::from_hours(i64::from(hours)))
            .ok()
        else {
            return fail("the grant's end is out of range".into());
        };
        let grant = Grant {
            id,
            tool: request.tool.clone(),
            tier: request.tier,
            schema_sha256: offer.schema_sha256.clone(),
            arguments: request.arguments.clone(),
            arguments_sha256: offer.arguments_sha256.clone(),
            card_sha256: offer.card_sha256.clone(),
            scope: wanted.scope,
            channel: self.channel.clone(),
            session: grants.session.to_string(),
            person: grants.person.clone(),
            created_by: decided_by.clone(),
            approval_id: Some(request.approval_id.clone()),
            created_at: now.to_string(),
            expires_at: expires.to_string(),
            uses: 0,
            max_uses: wanted.max_uses,
            last_used_at: None,
            revoked_at: None,
            revoked_by: None,
        };
        if let Err(error) = grants.store.create_grant(&grant) {
            return fail(error.to_string());
        }
        tracing::info!(tool = %grant.tool, grant = %grant.id, scope = grant.scope.as_str(), expires = %grant.expires_at, "grant made");
        self.events.emit(&AuditEvent::GrantCreated(grant.clone()));
        Some(GrantMade {
            id: grant.id,
            scope: grant.scope,
            expires_at: grant.expires_at,
            max_uses: grant.max_uses,
        })
    }
}
