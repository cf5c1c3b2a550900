//! `tau approvals`: every question that waits for the person, whichever channel asked it,
//! with its id and where it is answered. Only the channel that asked may answer a
//! question (the hub checks), so this command lists and never answers. Every field a
//! question holds (its tool, effect and arguments came from a model or an MCP server) is
//! shown through the display function, its lookalike words flagged as on its card; the
//! ids and the session are tau's own, plain ASCII by their types (see
//! `tau_core::waiting`).

use jiff::Timestamp;
use tau_core::waiting::waiting_text;
use tau_protocol::SessionId;
use tau_state::ApprovalState;

use crate::context::Context;

/// `tau approvals`.
pub(crate) fn list(ctx: &Context) -> anyhow::Result<String> {
    let zone = ctx.shown_zone();
    let Some(store) = ctx.existing_state()? else {
        return Ok(waiting_text(&[], &|_| None, Timestamp::now(), &zone));
    };
    let rows = store
        .approval_reader()
        .approvals(Some(ApprovalState::Pending))?;
    let sessions = store.sessions();
    let titles = |session: &SessionId| sessions.session_title(session).ok().flatten();
    Ok(waiting_text(&rows, &titles, Timestamp::now(), &zone))
}
