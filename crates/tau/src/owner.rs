//! One owner per conversation, across processes and restarts (the rule is tau-core's
//! `hub_hold`): a tau that opens a session of its own (`tau chat`, `tau tui`, `tau
//! routines run`, `tau sessions delete`) takes its lock, then refuses a conversation the
//! hub holds, saying why and what to do, before it touches anything. And what a crash
//! left: the calls a killed tau let through and never saw return are closed when the
//! next one opens the home (`close_cut_off_calls`).

use std::sync::Arc;

use jiff::tz::TimeZone;
use tau_agent::SessionId;
use tau_core::approval::ApprovalState;
use tau_core::{EventBus, HubHold, channel_name, display};
use tau_state::{ApprovalRow, StateDb};

use crate::audit::{AuditLog, SessionAudit};
use crate::context::Context;
use crate::errors::usage;
use tau_home::SessionLock;

/// The session's lock, once no other tau has it and the hub does not hold it (exit 2
/// otherwise, nothing touched).
pub(crate) fn open_own(ctx: &Context, id: &SessionId) -> anyhow::Result<SessionLock> {
    let lock = SessionLock::acquire(&ctx.home, id)?;
    if let Some(hold) = tau_core::hub_hold(&ctx.state()?, id)? {
        return Err(usage(refusal(id, &hold, &ctx.shown_zone())));
    }
    Ok(lock)
}

/// Why `tau chat` (and the rest) may not open session `id`, and what to do: one line.
pub(crate) fn refusal(id: &SessionId, hold: &HubHold, zone: &TimeZone) -> String {
    match hold {
        HubHold::Waiting(row) => {
            let channel = channel_name(&row.channel);
            format!(
                "session {id} is held by tau serve: its question {} ({}) waits for an answer on {channel} until {}, and only tau serve runs the call a yes approves. Answer it on {channel} or let it expire, then open the session again",
                row.id,
                display(&row.tool),
                tau_core::when(row.deadline, zone),
            )
        }
        HubHold::Paused { approval_id, row } => {
            let question = match row {
                Some(row) => format!("{approval_id} ({})", display(&row.tool)),
                None => approval_id.to_string(),
            };
            let state = match row.as_ref().map(|r| r.state) {
                Some(ApprovalState::Pending) => "not shown yet",
                Some(ApprovalState::Approved) => "approved",
                Some(ApprovalState::Rejected) => "rejected",
                Some(ApprovalState::Expired) => "expired",
                Some(ApprovalState::Superseded | ApprovalState::Cancelled) => "closed",
                None => "gone",
            };
            format!(
                "session {id} is held by tau serve: its turn is paused on question {question}, {state}, and goes on only in tau serve. Start tau serve (it goes on at once), then open the session again"
            )
        }
    }
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
        state.clone(),
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
    let found = tau_core::close_cut_off_calls(state, &bus_of, &may_close)?;
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
    use serde_json::json;
    use tau_core::{ApprovalId, CallCard, DecidedBy, Tier};
    use tau_state::NewApproval;

    use super::*;

    fn at(text: &str) -> jiff::Timestamp {
        text.parse().unwrap()
    }

    fn row(channel: &str, state: ApprovalState) -> ApprovalRow {
        let mut row = NewApproval {
            id: ApprovalId::parse("ap_00000000000000000000000000000001").unwrap(),
            session: SessionId::parse("web-20261203-080219-fda72d").unwrap(),
            call_id: "t1".into(),
            tool: "run_command\u{202e}".into(),
            tier: Tier::Physical,
            effect: "runs a shell command".into(),
            arguments: json!({"command": "echo made >> proof.txt"}),
            channel: channel.into(),
            created_at: at("2026-12-03T12:00:00Z"),
            deadline: at("2026-12-03T12:30:00Z"),
            card: CallCard::default(),
        }
        .into_row();
        row.state = state;
        if state != ApprovalState::Pending {
            row.decided_by = Some(DecidedBy::person(channel));
        }
        row
    }

    #[test]
    fn a_held_conversation_is_refused_with_why_and_what_to_do() {
        let id = SessionId::parse("web-20261203-080219-fda72d").unwrap();
        let zone = TimeZone::get("Europe/Istanbul").unwrap();
        let approved = row("web", ApprovalState::Approved);
        let lines = [
            refusal(
                &id,
                &HubHold::Waiting(row("web", ApprovalState::Pending)),
                &zone,
            ),
            refusal(
                &id,
                &HubHold::Waiting(row("telegram", ApprovalState::Pending)),
                &zone,
            ),
            refusal(
                &id,
                &HubHold::Paused {
                    approval_id: approved.id.clone(),
                    row: Some(approved.clone()),
                },
                &zone,
            ),
            refusal(
                &id,
                &HubHold::Paused {
                    approval_id: approved.id.clone(),
                    row: None,
                },
                &zone,
            ),
            closed_line(&approved),
        ];
        insta::assert_snapshot!(lines.join("\n"));
    }
}
