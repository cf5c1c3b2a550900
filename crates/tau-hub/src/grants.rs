//! The grants a channel shows and revokes: those made on it ("yes, and allow this
//! again"), live ones listed, any of them revoked. A revoke is one write to `state.db`,
//! the same one the gate's use of a grant races with, so no call after it is covered;
//! its `grant_revoked` line goes to the audit log under the grant's conversation.

use jiff::Timestamp;
use tau_core::AuditEvent;
use tau_protocol::{DecidedBy, Grant, GrantId};
use tau_state::{Revoked, is_live};

use crate::HubError;
use crate::hub::Hub;

impl Hub {
    /// The live grants made on `channel`, oldest first.
    pub fn grants(&self, channel: &str) -> Result<Vec<Grant>, HubError> {
        let now = Timestamp::now();
        Ok(self
            .inner
            .state
            .grants()
            .grants(Some(now))?
            .into_iter()
            .filter(|g| g.channel == channel && is_live(g, now))
            .collect())
    }

    /// Revokes a grant made on `channel` by the person `by`; one of another channel is
    /// unknown here, as its questions are.
    pub fn revoke_grant(
        &self,
        channel: &str,
        id: &GrantId,
        by: &DecidedBy,
    ) -> Result<Revoked, HubError> {
        match self.inner.state.grants().grant(id)? {
            Some(grant) if grant.channel == channel => {}
            Some(_) | None => return Ok(Revoked::NotFound),
        }
        let revoked = self
            .inner
            .state
            .grants()
            .revoke_grant(id, by, Timestamp::now())?;
        if let Revoked::Revoked(grant) = &revoked {
            tracing::info!(grant = %grant.id, tool = %grant.tool, "grant revoked");
            let event = AuditEvent::GrantRevoked {
                grant_id: grant.id.clone(),
                tool: grant.tool.clone(),
                revoked_by: by.clone(),
                uses: grant.uses,
                reason: None,
            };
            // Under the conversation that made it.
            self.bus(&grant.session).emit(&event);
        }
        Ok(revoked)
    }
}
