//! The gate's grants: checked before a question is asked, offered on the question, made
//! from a person's "yes, and allow this again". What a grant covers is the gate's to say:
//! the tool, its tier, the SHA-256 of its input schema, of the arguments' canonical JSON
//! and of tau's card, on this channel, in this conversation or for this person. Nothing
//! the model writes widens it.

use jiff::{SignedDuration, Timestamp};
use serde_json::Value;
use std::sync::Arc;

use tau_protocol::{
    CallCard, DecidedBy, Grant, GrantId, GrantMade, GrantOffer, GrantRequest, GrantSuggestion,
    SUGGESTION_APPROVALS, SUGGESTION_DAYS, SessionId, Tier,
};

use super::approver::ApprovalQuestion;
use super::durable::{StateDb, canonical_arguments};
use super::gate::{Standing, TierGate};
use crate::audit::{AuditEvent, ErrorSite};
use crate::ids::random_id;

/// Where a gate's grants live and whose they are: the conversation's session, the person
/// on the channel (a Telegram user id; `None` on a one-person channel), how long a grant
/// lasts unless its maker says (`[approval] grant_hours`), and where the gate learns how
/// often the person approved a call before (for the card's suggestion).
#[derive(Clone)]
pub struct GateGrants {
    pub store: StateDb,
    pub session: SessionId,
    pub person: Option<String>,
    pub hours: u32,
    pub history: Option<Arc<dyn ApprovalHistory>>,
}

/// A person's earlier answers, as the audit log keeps them: what makes a card suggest a
/// grant. It is read, never acted on.
pub trait ApprovalHistory: Send + Sync {
    /// When a person approved exactly this call (the tool, the SHA-256 of its canonical
    /// arguments) since `since`. Unreadable history is no history.
    fn approved_at(&self, tool: &str, arguments_sha256: &str, since: Timestamp) -> Vec<Timestamp>;
}

/// How close in the day approvals must come to count as regular (a routine's job).
const REGULAR_WITHIN_SECONDS: i64 = 60 * 60;
const DAY_SECONDS: i64 = 24 * 60 * 60;

/// The card's suggestion from the times a person approved the same call, when there were
/// enough of them.
pub(crate) fn suggestion(approved: &[Timestamp]) -> Option<GrantSuggestion> {
    let count = u32::try_from(approved.len()).unwrap_or(u32::MAX);
    if count < SUGGESTION_APPROVALS {
        return None;
    }
    Some(GrantSuggestion {
        approved: count,
        regular: regular(approved),
    })
}

/// On at least [`SUGGESTION_APPROVALS`] different days, all within an hour of the same time
/// of day (UTC; midnight wraps): the largest gap around the clock leaves the rest inside
/// the hour.
fn regular(times: &[Timestamp]) -> bool {
    let days: std::collections::BTreeSet<i64> = times
        .iter()
        .map(|t| t.as_second().div_euclid(DAY_SECONDS))
        .collect();
    if days.len() < SUGGESTION_APPROVALS as usize {
        return false;
    }
    let mut of_day: Vec<i64> = times
        .iter()
        .map(|t| t.as_second().rem_euclid(DAY_SECONDS))
        .collect();
    of_day.sort_unstable();
    let (Some(first), Some(last)) = (of_day.first(), of_day.last()) else {
        return false;
    };
    let wrap = first + DAY_SECONDS - last;
    let largest_gap = of_day
        .windows(2)
        .filter_map(|pair| Some(pair.get(1)? - pair.first()?))
        .fold(wrap, i64::max);
    largest_gap >= DAY_SECONDS - REGULAR_WITHIN_SECONDS
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
            match grants
                .store
                .revoke_grant(&grant.id, &DecidedBy::Policy, now)
            {
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
            Standing::Invalid { reason } => {
                Some(format!("the tool's tier is not trusted: {reason}"))
            }
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
        let arguments_sha256 = canonical_arguments(arguments).1;
        let suggestion = grants.history.as_ref().and_then(|history| {
            let since = Timestamp::now()
                .checked_sub(SignedDuration::from_hours(24 * i64::from(SUGGESTION_DAYS)))
                .ok()?;
            suggestion(&history.approved_at(tool, &arguments_sha256, since))
        });
        Some(GrantOffer {
            schema_sha256: self.tiers.schema_sha256(tool)?,
            arguments_sha256,
            card_sha256: card_sha256(card),
            hours: grants.hours,
            suggestion,
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
            session: grants.session.clone(),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> Timestamp {
        text.parse().unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn three_approvals_suggest_a_grant_and_the_same_hour_on_three_days_a_routine() {
        assert_eq!(suggestion(&[]), None);
        let two = [at("2026-12-01T07:00:00Z"), at("2026-12-02T07:05:00Z")];
        assert_eq!(suggestion(&two), None);
        let at_seven = [
            at("2026-12-01T07:00:00Z"),
            at("2026-12-02T07:05:00Z"),
            at("2026-12-03T06:40:00Z"),
        ];
        assert_eq!(
            suggestion(&at_seven),
            Some(GrantSuggestion {
                approved: 3,
                regular: true
            })
        );
        // Around midnight, the hour wraps.
        let midnight = [
            at("2026-12-01T23:50:00Z"),
            at("2026-12-02T00:20:00Z"),
            at("2026-12-03T00:05:00Z"),
        ];
        assert!(suggestion(&midnight).is_some_and(|s| s.regular));
        for (name, times) in [
            (
                "one day",
                [
                    at("2026-12-01T07:00:00Z"),
                    at("2026-12-01T07:10:00Z"),
                    at("2026-12-01T07:20:00Z"),
                ],
            ),
            (
                "hours apart",
                [
                    at("2026-12-01T07:00:00Z"),
                    at("2026-12-02T12:00:00Z"),
                    at("2026-12-03T07:00:00Z"),
                ],
            ),
            (
                "just over the hour",
                [
                    at("2026-12-01T07:00:00Z"),
                    at("2026-12-02T07:30:00Z"),
                    at("2026-12-03T08:00:01Z"),
                ],
            ),
        ] {
            assert_eq!(
                suggestion(&times),
                Some(GrantSuggestion {
                    approved: 3,
                    regular: false
                }),
                "{name}"
            );
        }
    }
}
