//! How the gate uses a grant. A live grant that covers exactly the call is used only when
//! (1) its row is what the audit log records of it (its `grant_created` line and the lines
//! after it: `tau-state`'s `cross_check_grant`, the start-up check's own), and (2) for a
//! tool that runs the workspace's files, the workspace is the tree the grant was last
//! pinned to (its `grant_created` or last `grant_pinned` line). A row that fails (1) is
//! revoked by `policy` with an `error` line; a call that fails (2) is asked, its card
//! saying why. After a call a grant let through (or whose yes made it) ran, the grant is
//! pinned to the tree as that call left it: its own effects were allowed.

use jiff::Timestamp;
use serde_json::Value;

use tau_protocol::{CardNote, DecidedBy, Grant, GrantId, Tier, TreeError, WorkspaceTree};
use tau_state::{GrantedCall, Grants, UntrustedGrant, canonical_arguments, cross_check_grant};

use super::gate::TierGate;
use super::grants::card_sha256;
use crate::audit::{AuditEvent, ErrorSite, EventBus};
use crate::pin::{GRANT_LABEL, asked_again_text, unpinned_text};
use tau_protocol::CallDecision;

/// Closes a stored grant that is not what tau wrote: revoked by `policy` (a `grant_revoked`
/// line with `why`), after an `error` line. The gate does this when it meets one, `tau
/// serve` at start for every live one. A log that could not be read revokes nothing: the
/// grant only covers nothing until it can be confirmed.
pub fn refuse_untrusted_grant(
    store: &Grants,
    events: &EventBus,
    grant: &Grant,
    why: &UntrustedGrant,
    tool_use_id: Option<&str>,
) {
    tracing::error!(grant = %grant.id, tool = %grant.tool, reason = %why, "a stored grant is not what tau wrote; it covers nothing");
    events.emit(&AuditEvent::Error {
        site: ErrorSite::TierGate,
        message: format!("grant {} refused: {why}", grant.id),
        tool: Some(grant.tool.clone()),
        tool_use_id: tool_use_id.map(str::to_owned),
    });
    if matches!(why, UntrustedGrant::NoRecord(_)) {
        return;
    }
    match store.revoke_grant(&grant.id, &DecidedBy::Policy, Timestamp::now()) {
        Ok(tau_state::Revoked::Revoked(revoked)) => events.emit(&AuditEvent::GrantRevoked {
            grant_id: revoked.id.clone(),
            tool: revoked.tool.clone(),
            revoked_by: DecidedBy::Policy,
            uses: revoked.uses,
            reason: Some(why.to_string()),
        }),
        Ok(tau_state::Revoked::AlreadyRevoked(_) | tau_state::Revoked::NotFound) => {}
        Err(error) => {
            tracing::error!(grant = %grant.id, %error, "an untrusted grant could not be revoked; it still covers nothing");
        }
    }
}

impl TierGate {
    /// The id of the live grant that covers exactly this tier-2 call, its use counted and
    /// its `grant_used` line written; otherwise the notes the question's card carries
    /// (why a grant that would have covered the call did not: empty when none would).
    /// Anything that fails asks the person, as without grants.
    pub(super) fn granted(
        &self,
        tool: &str,
        tier: Tier,
        arguments: &Value,
        tool_use_id: &str,
    ) -> Result<GrantId, Vec<CardNote>> {
        let Some(grants) = self.grants.as_ref() else {
            return Err(Vec::new());
        };
        let Some(schema_sha256) = self.tiers.schema_sha256(tool) else {
            return Err(Vec::new());
        };
        let card = self.tiers.card(tool, arguments);
        // A grant made before the first passkey was enrolled must not stand in for one.
        if let Some(step_up) = &grants.step_up
            && step_up.takes_passkey(tool, &card)
        {
            tracing::info!(
                tool,
                tool_use_id,
                "the call takes a passkey; no grant covers it, asking"
            );
            return Err(Vec::new());
        }
        let card_sha256 = card_sha256(&card);
        let (_, arguments_sha256) = canonical_arguments(arguments);
        let call = GrantedCall {
            tool,
            tier,
            schema_sha256: &schema_sha256,
            arguments_sha256: &arguments_sha256,
            card_sha256: &card_sha256,
            channel: &self.channel,
            session: &grants.session,
            person: grants.person.as_deref(),
        };
        let now = Timestamp::now();
        let candidates = match grants.store.grants_covering(&call, now) {
            Ok(candidates) => candidates,
            Err(error) => {
                self.grants_unreadable(tool, tool_use_id, &error.to_string());
                return Err(Vec::new());
            }
        };
        // Read once, and only when a grant would cover the call.
        let mut tree: Option<Option<Result<WorkspaceTree, TreeError>>> = None;
        let mut notes = Vec::new();
        for grant in candidates {
            // 1. the row is what the audit log records
            let recorded = grants.ledger.recorded(&grant.id);
            let record = recorded
                .as_ref()
                .map(Option::as_ref)
                .map_err(String::as_str);
            if let Err(why) = cross_check_grant(&grant, record) {
                refuse_untrusted_grant(
                    &grants.store,
                    &self.events,
                    &grant,
                    &why,
                    Some(tool_use_id),
                );
                continue;
            }
            let pinned = recorded
                .ok()
                .flatten()
                .and_then(|record| record.workspace_sha256);
            // 2. what the call runs is what the grant was pinned to
            let tree = tree.get_or_insert_with(|| self.tiers.workspace_tree(tool));
            if let Some(now_tree) = tree.as_ref()
                && let Some(note) = self.pin_differs(&grant, pinned.as_deref(), now_tree)
            {
                tracing::info!(tool, tool_use_id, grant = %grant.id, reason = %note.text, "a grant's workspace changed; asking");
                if notes.is_empty() {
                    notes.push(note);
                }
                continue;
            }
            // 3. the use, counted where a revoke cannot slip between
            match grants.store.use_this_grant(&grant.id, &call, now) {
                Ok(Some(used)) => {
                    tracing::info!(tool, tool_use_id, grant = %used.id, uses = used.uses, "call covered by a grant; nobody asked");
                    self.events.emit(&AuditEvent::GrantUsed {
                        grant_id: used.id.clone(),
                        tool: tool.to_owned(),
                        tool_use_id: tool_use_id.to_owned(),
                        session: grants.session.to_string(),
                        channel: self.channel.clone(),
                        use_number: used.uses,
                        max_uses: used.max_uses,
                    });
                    return Ok(used.id);
                }
                // Revoked, used up or expired since it was read.
                Ok(None) => {}
                Err(error) => {
                    self.grants_unreadable(tool, tool_use_id, &error.to_string());
                    return Err(notes);
                }
            }
        }
        Err(notes)
    }

    fn grants_unreadable(&self, tool: &str, tool_use_id: &str, error: &str) {
        tracing::error!(tool, tool_use_id, %error, "grants could not be read; asking");
        self.emit_error(
            ErrorSite::TierGate,
            format!("grants could not be read, the person is asked: {error}"),
            tool,
            tool_use_id,
        );
    }

    /// Why `grant` does not cover a call on the workspace as it is now (`now`): the card's
    /// note, or `None` when the tree is the one it was last pinned to (`pinned`).
    fn pin_differs(
        &self,
        grant: &Grant,
        pinned: Option<&str>,
        now: &Result<WorkspaceTree, TreeError>,
    ) -> Option<CardNote> {
        let now = match now {
            Ok(now) => now,
            Err(error) => return Some(CardNote::warning(GRANT_LABEL, unpinned_text(error))),
        };
        if pinned == Some(now.sha256.as_str()) {
            return None;
        }
        // Which files changed: from the listing kept with the grant, when it is the one
        // the audit log names; otherwise tau says only that something did.
        let changed = self
            .grants
            .as_ref()
            .and_then(|grants| grants.store.grant_pin(&grant.id).ok().flatten())
            .filter(|kept| Some(kept.sha256.as_str()) == pinned)
            .map(|kept| kept.changed_paths(now))
            .unwrap_or_default();
        Some(CardNote::warning(GRANT_LABEL, asked_again_text(&changed)))
    }

    /// After a call `decision` let through ran: the grant that covered it (or that its yes
    /// made) is pinned to the workspace as the call left it, with a `grant_pinned` line.
    /// A tree that cannot be read pins nothing: the grant's next call is then asked.
    pub(crate) fn pin_after_run(&self, decision: &CallDecision, tool: &str, tool_use_id: &str) {
        let (Some(id), Some(grants)) = (decision.verdict.grant(), &self.grants) else {
            return;
        };
        let tree = match self.tiers.workspace_tree(tool) {
            None => return,
            Some(Ok(tree)) => tree,
            Some(Err(error)) => {
                self.emit_error(
                    ErrorSite::TierGate,
                    format!("grant {id} not pinned to the workspace the call left ({error}); its next call is asked"),
                    tool,
                    tool_use_id,
                );
                return;
            }
        };
        if grants
            .store
            .grant_pin(id)
            .ok()
            .flatten()
            .is_some_and(|kept| kept.sha256 == tree.sha256)
        {
            return;
        }
        if let Err(error) = grants.store.pin_grant(id, &tree) {
            tracing::warn!(grant = %id, %error, "the pinned workspace could not be kept; only the names of changed files are lost");
        }
        self.events.emit(&AuditEvent::GrantPinned {
            grant_id: id.clone(),
            tool: tool.to_owned(),
            tool_use_id: tool_use_id.to_owned(),
            workspace_sha256: tree.sha256,
        });
    }
}
