//! The gate's grants: checked before a question is asked, offered on the question, made
//! from a person's "yes, and allow this again". What a grant covers is the gate's to say:
//! the tool, its tier, the SHA-256 of its input schema, of the arguments' canonical JSON
//! and of tau's card, on this channel, in this conversation or for this person. Nothing
//! the model writes widens it.

use jiff::{SignedDuration, Timestamp};
use serde_json::Value;
use std::sync::Arc;

use tau_protocol::{
    ApprovalQuestion, CallCard, CardNote, DecidedBy, Grant, GrantId, GrantMade, GrantOffer,
    GrantRequest, GrantSuggestion, SUGGESTION_APPROVALS, SUGGESTION_DAYS, SessionId,
};

use super::gate::TierGate;
use super::grant_record::GrantLedger;
use super::lookup::Standing;
use crate::audit::{AuditEvent, ErrorSite};
use crate::ids::random_id;
use crate::pin::{GRANT_LABEL, no_grant_text};
use tau_state::{Conversations, Grants, canonical_arguments};

/// Where a gate's grants live and whose they are: the conversation's session, the person
/// on the channel (a Telegram user id; `None` on a one-person channel), how long a grant
/// lasts unless its maker says (`[approval] grant_hours`), and where the gate learns how
/// often the person approved a call before (for the card's suggestion).
#[derive(Clone)]
pub struct GateGrants {
    pub store: Grants,
    /// Where the gate reads whose conversation it is (a routine's takes no grant).
    pub conversations: Conversations,
    pub session: SessionId,
    pub person: Option<String>,
    pub hours: u32,
    pub history: Option<Arc<dyn ApprovalHistory>>,
    /// What the audit log records of grants: a grant covers a call only as it records it.
    pub ledger: Arc<dyn GrantLedger>,
    /// Which calls take a passkey now (`None`: no channel here can ask for one). A grant
    /// never covers such a call, whenever it was made: only the passkey approves it.
    pub step_up: Option<Arc<dyn StepUp>>,
}

/// Whether a call's yes takes a passkey now: a lock-class device's (its card asks for a
/// second step) or a `[tools.step_up]` tool's, once anyone has enrolled one. A store that
/// cannot say answers `true`: a failure never lowers the step.
pub trait StepUp: Send + Sync {
    fn takes_passkey(&self, tool: &str, card: &CallCard) -> bool;
}

/// A person's earlier answers, as the audit log keeps them: what makes a card suggest a
/// grant. It is read, never acted on.
pub trait ApprovalHistory: Send + Sync {
    /// When a person approved exactly this call (the tool, the SHA-256 of its canonical
    /// arguments) since `since`. Unreadable history is no history.
    fn approved_at(&self, tool: &str, arguments_sha256: &str, since: Timestamp) -> Vec<Timestamp>;
}

/// Why the conversation of `grants` is not one of a person's chats (and takes no grant):
/// a routine's, or one whose owner cannot be read. `None` for a person's.
fn no_persons_chat(grants: &GateGrants) -> Option<String> {
    if grants
        .session
        .as_str()
        .starts_with(tau_state::ROUTINE_SESSION_PREFIX)
    {
        return Some("a routine's own session".to_owned());
    }
    match grants.conversations.conversation_of(&grants.session) {
        Ok(Some(conversation)) => conversation
            .routine()
            .map(|routine| format!("routine {routine}'s conversation")),
        Ok(None) => None,
        Err(error) => Some(format!("its conversation could not be read: {error}")),
    }
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
pub(super) fn card_sha256(card: &CallCard) -> String {
    let value = serde_json::to_value(card).unwrap_or(Value::Null);
    canonical_arguments(&value).1
}

impl TierGate {
    /// Lets this gate use and offer grants. Live grants whose tool this gate knows with
    /// another tier or input schema than they were made for are voided first, each with a
    /// `grant_revoked` line by `policy`: a grant never comes back when a tool changes back.
    ///
    /// A routine's conversation (`routine:NAME` on its `ask` channel, or its own
    /// `routine-NAME` session) is no person's chat: its gate uses no grant and offers none,
    /// whoever built it, so a grant made in a person's chats never reaches a call a webhook
    /// or an MQTT message fired. A routine runs unasked only by its own exemption.
    pub fn with_grants(mut self, grants: GateGrants) -> Self {
        if let Some(why) = no_persons_chat(&grants) {
            tracing::info!(session = %grants.session, %why, "no grants in this conversation");
            return self;
        }
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

    /// What a grant made from this question would cover, when this gate has grants and
    /// the tool's schema can be hashed. `Err` is the card's note saying why none is
    /// offered where one would be: the workspace a tool that runs its files would be
    /// pinned to is too big or cannot be read.
    pub(super) fn grant_offer(
        &self,
        tool: &str,
        arguments: &Value,
        card: &CallCard,
    ) -> Result<Option<GrantOffer>, CardNote> {
        let Some(grants) = self.grants.as_ref() else {
            return Ok(None);
        };
        // A call with a second step (a lock-class device) is asked every time: a grant
        // would let the next one through without it.
        if card.confirm.is_some() {
            return Ok(None);
        }
        // A word of the arguments a reader could take for another (the card flags it): a
        // yes to what was misread once must not stand for every call after it.
        if card
            .notes
            .iter()
            .any(|note| note.label == crate::card::LOOKALIKE)
        {
            return Ok(None);
        }
        let pins_workspace = match self.tiers.workspace_tree(tool) {
            None => false,
            Some(Ok(_)) => true,
            Some(Err(error)) => return Err(CardNote::warning(GRANT_LABEL, no_grant_text(&error))),
        };
        let arguments_sha256 = canonical_arguments(arguments).1;
        let suggestion = grants.history.as_ref().and_then(|history| {
            let since = Timestamp::now()
                .checked_sub(SignedDuration::from_hours(24 * i64::from(SUGGESTION_DAYS)))
                .ok()?;
            suggestion(&history.approved_at(tool, &arguments_sha256, since))
        });
        let Some(schema_sha256) = self.tiers.schema_sha256(tool) else {
            return Ok(None);
        };
        Ok(Some(GrantOffer {
            schema_sha256,
            arguments_sha256,
            // The tools' own card, as a covered call's is hashed (`granted`): what tau adds
            // for this one question (where values came from, whose question it is) is not
            // part of what a grant covers.
            card_sha256: card_sha256(&self.tiers.card(tool, arguments)),
            hours: grants.hours,
            pins_workspace,
            suggestion,
        }))
    }

    /// The grant this question offers, worked out on the card as the tools wrote it; then
    /// the gate's own notes go on the card: why a grant did not cover the call (`notes`),
    /// why none is offered.
    pub(super) fn offer_on(
        &self,
        tool: &str,
        arguments: &Value,
        card: &mut CallCard,
        notes: Vec<CardNote>,
    ) -> Option<tau_protocol::GrantOffer> {
        let offer = self.grant_offer(tool, arguments, card);
        card.notes.extend(notes);
        match offer {
            Ok(offer) => offer,
            Err(note) => {
                card.notes.push(note);
                None
            }
        }
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
        // A tool that runs the workspace's files: the grant pins them as they are now,
        // right before the call it was asked with runs.
        let tree = match self.tiers.workspace_tree(&request.tool) {
            None => None,
            Some(Ok(tree)) => Some(tree),
            Some(Err(error)) => return fail(error.to_string()),
        };
        let grant = Grant {
            id,
            tool: request.tool.clone(),
            tier: request.tier,
            schema_sha256: offer.schema_sha256.clone(),
            arguments: request.arguments.clone(),
            arguments_sha256: offer.arguments_sha256.clone(),
            card_sha256: offer.card_sha256.clone(),
            workspace_sha256: tree.as_ref().map(|tree| tree.sha256.clone()),
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
        if let Some(tree) = &tree
            && let Err(error) = grants.store.pin_grant(&grant.id, tree)
        {
            // Only the names of the files that change later are lost: the audit line
            // below carries the tree's hash, which is what a use is checked against.
            tracing::warn!(grant = %grant.id, %error, "the pinned workspace could not be kept");
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
