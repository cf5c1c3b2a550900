//! What the audit log records of grants, as the gate reads it before a grant covers a
//! call: a grant is used only while its row is what its `grant_created` line (and the
//! `grant_used`, `grant_pinned`, `grant_revoked` lines after it) made it, in a chain the
//! log vouches for. The binary reads `audit.jsonl` (verified); [`RecordedGrants`] folds
//! the lines as a process emits them (tests, and hosts without a log file).

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

use tau_protocol::GrantId;
use tau_state::RecordedGrant;

use crate::audit::{AuditEvent, EventSubscriber};

/// Where the gate reads what the audit log records of a grant.
pub trait GrantLedger: Send + Sync {
    /// The grant lines of grant `id` in the verified audit log: `Ok(None)` when there are
    /// none, `Err` (why) when the log cannot be read or vouched for.
    fn recorded(&self, id: &GrantId) -> Result<Option<RecordedGrant>, String>;
}

/// Folds one audit line into what is recorded of the grants. Lines about a grant whose
/// `grant_created` line came first are counted; a use, pin or revoke of a grant nobody
/// made counts for nothing.
pub fn fold_grant_line(grants: &mut BTreeMap<GrantId, RecordedGrant>, event: &AuditEvent) {
    match event {
        AuditEvent::GrantCreated(grant) => {
            // A second line for the same id is not tau's (ids are drawn at random): the
            // grant then matches neither.
            if grants.contains_key(&grant.id) {
                grants.remove(&grant.id);
                tracing::error!(grant = %grant.id, "two grant_created lines for one grant");
            } else {
                grants.insert(grant.id.clone(), RecordedGrant::created(grant.clone()));
            }
        }
        AuditEvent::GrantUsed {
            grant_id,
            use_number,
            ..
        } => {
            if let Some(grant) = grants.get_mut(grant_id) {
                grant.uses = grant.uses.max(*use_number);
            }
        }
        AuditEvent::GrantPinned {
            grant_id,
            workspace_sha256,
            ..
        } => {
            if let Some(grant) = grants.get_mut(grant_id) {
                grant.workspace_sha256 = Some(workspace_sha256.clone());
            }
        }
        AuditEvent::GrantRevoked { grant_id, .. } => {
            if let Some(grant) = grants.get_mut(grant_id) {
                grant.revoked = true;
            }
        }
        AuditEvent::ToolCall { .. }
        | AuditEvent::ApprovalRequested(_)
        | AuditEvent::Approval { .. }
        | AuditEvent::Error { .. }
        | AuditEvent::TurnLimit { .. }
        | AuditEvent::TurnEnd { .. }
        | AuditEvent::RoutineRun { .. }
        | AuditEvent::AnswerRefused { .. }
        | AuditEvent::WebhookRefused { .. }
        | AuditEvent::EffectUncertain { .. }
        | AuditEvent::ChannelStopped { .. } => {}
    }
}

/// The grant lines one process emitted, folded as they pass: a [`GrantLedger`] for gates
/// whose events never reach a file (tests), subscribed to every bus whose gates make or
/// use grants.
#[derive(Default)]
pub struct RecordedGrants {
    grants: Mutex<BTreeMap<GrantId, RecordedGrant>>,
}

impl EventSubscriber for RecordedGrants {
    fn on_event(&self, event: &AuditEvent) {
        fold_grant_line(
            &mut self.grants.lock().unwrap_or_else(PoisonError::into_inner),
            event,
        );
    }
}

impl GrantLedger for RecordedGrants {
    fn recorded(&self, id: &GrantId) -> Result<Option<RecordedGrant>, String> {
        Ok(self
            .grants
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id)
            .cloned())
    }
}
