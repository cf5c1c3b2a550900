//! One owner per conversation, across processes and restarts (the rule is tau-core's
//! `hub_hold`): a tau that opens a session of its own (`tau chat`, `tau tui`, `tau
//! routines run`, `tau sessions delete`) takes its lock, then refuses a conversation the
//! hub holds, saying why and what to do, before it touches anything. And what a crash
//! left: the calls a killed tau let through and never saw return are closed when the
//! next one opens the home (`close_cut_off_calls`).

use std::sync::Arc;
use tau_protocol::SessionId;

use tau_core::{EventBus, display};
use tau_state::{ApprovalRow, StateDb};

use crate::context::Context;
use crate::errors::usage;
use tau_audit::{AuditLog, SessionAudit};
use tau_home::SessionLock;

/// The session's lock, once no other tau has it and the hub does not hold it (exit 2
/// otherwise, nothing touched).
pub(crate) fn open_own(ctx: &Context, id: &SessionId) -> anyhow::Result<SessionLock> {
    let lock = SessionLock::acquire(&ctx.home, id)?;
    let state = ctx.state()?;
    if let Some(hold) = tau_core::hub_hold(&state.approval_reader(), &state.sessions(), id)? {
        return Err(usage(hold.refusal(id, &ctx.shown_zone())));
    }
    Ok(lock)
}

/// Closes, as `effect_uncertain`, every call a killed tau let through and never saw
/// return, in the sessions nobody has open now (the lock says), but `own`: the
/// conversation opening it answers its own calls and tells its model. One line for each,
/// to show on stderr.
pub(crate) fn close_cut_off_calls(
    ctx: &Context,
    state: &StateDb,
    own: &SessionId,
) -> anyhow::Result<Vec<String>> {
    let log = Arc::new(AuditLog::open(
        &ctx.home.audit_log(),
        own.as_str(),
        state.audit_anchor(),
    )?);
    let bus_of = |session: &SessionId| {
        let bus = EventBus::new();
        bus.subscribe(Arc::new(SessionAudit {
            log: Arc::clone(&log),
            session: session.to_string(),
        }));
        bus
    };
    let may_close = |row: &ApprovalRow| {
        // Held now means a tau that may still be running it; a dead one holds nothing.
        &row.session != own
            && matches!(
                SessionLock::try_acquire(&ctx.home, &row.session),
                Ok(Some(_))
            )
    };
    let found =
        tau_core::close_cut_off_calls(&state.approvals(), &state.sessions(), &bus_of, &may_close)?;
    Ok(found.closed.iter().map(closed_line).collect())
}

/// What the person reads about a call closed in another session.
fn closed_line(row: &ApprovalRow) -> String {
    format!(
        "tau: {} was running in session {} when tau stopped: it may or may not have run, and is not run again (question {})",
        display(&row.tool),
        row.session,
        row.id
    )
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use tau_protocol::{ApprovalId, CallCard, Tier};
    use tau_state::NewApproval;

    use super::*;

    #[test]
    fn a_call_closed_in_another_session_says_it_may_have_run() {
        let row = NewApproval {
            id: ApprovalId::parse("ap_00000000000000000000000000000001").unwrap(),
            session: SessionId::parse("web-20261203-080219-fda72d").unwrap(),
            call_id: "t1".into(),
            tool: "run_command\u{202e}".into(),
            tier: Tier::Physical,
            effect: "runs a shell command".into(),
            arguments: json!({"command": "echo made >> proof.txt"}),
            channel: "web".into(),
            created_at: "2026-12-03T12:00:00Z".parse().unwrap(),
            deadline: "2026-12-03T12:30:00Z".parse().unwrap(),
            card: CallCard::default(),
        }
        .into_row();
        assert_eq!(
            closed_line(&row),
            "tau: run_command\\u{202e} was running in session web-20261203-080219-fda72d when tau stopped: it may or may not have run, and is not run again (question ap_00000000000000000000000000000001)"
        );
    }
}
