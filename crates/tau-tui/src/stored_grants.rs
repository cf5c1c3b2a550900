//! `/grants` and `/revoke` over the grants kept in `state.db`: the same list as `tau
//! grants list` (tau-core's words), and a revoke by the TUI's person, written on the
//! conversation's audit bus.

use jiff::Timestamp;
use jiff::tz::TimeZone;
use tau_core::grants::{render, revoke_grant, revoked_line};
use tau_core::{EventBus, display};
use tau_protocol::{DecidedBy, GrantId, RoutineAllowance};
use tau_state::{Grants, Revoked, Sessions};

use crate::GrantCommands;

/// The grants of `state.db` as the TUI lists and revokes them.
pub struct StoredGrants {
    pub grants: Grants,
    /// For each grant's conversation title.
    pub sessions: Sessions,
    pub events: EventBus,
    pub zone: TimeZone,
    /// The routines' own calls, read when the TUI started (listing them starts no tool).
    pub routines: Vec<RoutineAllowance>,
}

impl GrantCommands for StoredGrants {
    fn list(&self) -> Vec<String> {
        match self.grants.grants(None) {
            Ok(grants) => render(
                &grants,
                &self.routines,
                &|session| self.sessions.session_title(session).ok().flatten(),
                Timestamp::now(),
                &self.zone,
            )
            .lines()
            .map(str::to_owned)
            .collect(),
            Err(error) => vec![format!("grants could not be read: {error}")],
        }
    }

    fn revoke(&self, id: &str) -> String {
        let Ok(id) = GrantId::parse(id) else {
            return format!("{} is not a grant id (/grants lists them)", display(id));
        };
        match revoke_grant(&self.grants, &self.events, &id, DecidedBy::person("tui")) {
            Ok(Revoked::Revoked(grant)) => revoked_line(&grant).trim_end().to_owned(),
            Ok(Revoked::AlreadyRevoked(grant)) => format!("{} was revoked already", grant.id),
            Ok(Revoked::NotFound) => format!("no grant {id}"),
            Err(error) => format!("{id} could not be revoked: {error:#}"),
        }
    }
}
