//! Start-up's cross-check: before the hub resumes, expires or shows any stored question,
//! each one that could still lead to a call is checked against itself and the audit
//! log's `approval` lines (`tau-state`'s `cross_check`). One that fails is closed
//! (`cancelled`, decided by `approver_failed`), never run: an `error` and an `approval`
//! line say why and how it was closed, its card closes, and its turn goes on refused.
//! Every live grant is checked the same way against the audit log's grant lines
//! (`tau-state`'s `cross_check_grant`, the gate's own check before each use): one that
//! fails is revoked by `policy`, with an `error` and a `grant_revoked` line.

use jiff::Timestamp;
use tau_core::approval::stored_approval_event;
use tau_core::{AuditEvent, ErrorSite, channel_event};
use tau_protocol::{DecidedBy, Decision, Ruling};
use tau_state::{ApprovalState, RecordedAnswer, cross_check, needs_check};

use crate::HubError;
use crate::hub::{Hub, SessionEvent};
use crate::types::{Refused, RefusedGrant};

impl Hub {
    /// Revokes every live grant that is not what tau wrote; returns them with why.
    pub(crate) fn refuse_untrusted_grants(&self) -> Result<Vec<RefusedGrant>, HubError> {
        let Some(ledger) = self.inner.factory.grant_ledger() else {
            return Ok(Vec::new());
        };
        let mut refused = Vec::new();
        for grant in self.inner.state.grants().grants(Some(Timestamp::now()))? {
            let recorded = ledger.recorded(&grant.id);
            let record = recorded
                .as_ref()
                .map(Option::as_ref)
                .map_err(String::as_str);
            let Err(why) = tau_state::cross_check_grant(&grant, record) else {
                continue;
            };
            tau_core::approval::refuse_untrusted_grant(
                &self.inner.state.grants(),
                &self.bus(&grant.session),
                &grant,
                &why,
                None,
            );
            refused.push(RefusedGrant {
                grant,
                why: why.to_string(),
            });
        }
        Ok(refused)
    }

    /// Closes every stored question that is not what tau wrote; returns them with why.
    pub(crate) fn refuse_untrusted(&self) -> Result<Vec<Refused>, HubError> {
        let rows: Vec<_> = self
            .inner
            .state
            .approvals()
            .all_approvals(None)?
            .into_iter()
            .filter(needs_check)
            .collect();
        // The audit log is read only when an approval has to be confirmed.
        let record: Result<Vec<RecordedAnswer>, String> =
            if rows.iter().any(|row| row.state == ApprovalState::Approved) {
                self.inner
                    .factory
                    .recorded_answers()
                    .map_err(|e| e.to_string())
            } else {
                Ok(Vec::new())
            };
        let mut refused = Vec::new();
        for row in rows {
            let Err(why) = cross_check(&row, record.as_deref().map_err(String::as_str)) else {
                continue;
            };
            let Some(closed) = self
                .inner
                .state
                .approvals()
                .close_untrusted(&row.id, Timestamp::now())?
            else {
                continue;
            };
            let why = why.to_string();
            tracing::error!(approval_id = %row.id, session = %row.session, tool = %row.tool, reason = %why, "a stored question was refused at start");
            let bus = self.bus(&row.session);
            bus.emit(&AuditEvent::Error {
                site: ErrorSite::TierGate,
                message: format!("stored approval refused at start: {why}"),
                tool: Some(row.tool.clone()),
                tool_use_id: Some(row.call_id.clone()),
            });
            let ruling = Ruling::new(Decision::Rejected, DecidedBy::ApproverFailed);
            let decided = stored_approval_event(&closed, ruling, "start_check");
            bus.emit(&decided);
            if let Some(event) = channel_event(&decided) {
                self.publish(&row.session, SessionEvent::Turn(event));
            }
            let _ = self.inner.changes.send(closed.clone());
            refused.push(Refused { row: closed, why });
        }
        Ok(refused)
    }
}
