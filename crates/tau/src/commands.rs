//! The small commands: sessions (their tables are tau-core's).

use tau_agent::{Message, SessionRepository};
use tau_core::{StoredSessions, display, json_for_terminal, session_transcript, sessions_table};
use tau_protocol::SessionId;
use tau_state::{ApprovalState, StateDb};

use crate::context::Context;
use crate::errors::{no_session, usage};

/// A session name from the command line; names with path characters exit 2.
pub(crate) fn session_id(name: &str) -> anyhow::Result<SessionId> {
    SessionId::parse(name).map_err(|e| usage(e.to_string()))
}

/// The home's `state.db`; `None` (and nothing created) before the first run.
fn open_store(ctx: &Context) -> anyhow::Result<Option<StateDb>> {
    ctx.existing_state()
}

/// `tau sessions list` (`all`: with the empty ones too) and `tau sessions search TEXT`
/// (`search`): one line per session with its title (a person's, else its first prompt's,
/// through the display function) and what waits in it.
pub(crate) fn sessions_list(
    ctx: &Context,
    all: bool,
    search: Option<&str>,
) -> anyhow::Result<String> {
    let nothing = if search.is_some() {
        "no session holds that\n"
    } else {
        "no sessions yet\n"
    };
    let Some(store) = open_store(ctx)? else {
        return Ok(nothing.to_owned());
    };
    let mut sessions = store.sessions().list_sessions()?;
    if let Some(text) = search {
        let found = store.sessions().search_sessions(text)?;
        sessions.retain(|s| found.contains(&s.id));
    }
    let empty = sessions.iter().filter(|s| s.message_count == 0).count();
    if !all {
        sessions.retain(|s| s.message_count > 0);
    }
    if sessions.is_empty() {
        return Ok(if empty > 0 {
            format!("no sessions with messages ({empty} empty: tau sessions list --all)\n")
        } else {
            nothing.to_owned()
        });
    }
    let pending = store.approvals().approvals(Some(ApprovalState::Pending))?;
    let title = |id: &SessionId| store.sessions().session_title(id).ok().flatten();
    let left_out = if all { 0 } else { empty };
    Ok(sessions_table(
        &sessions,
        &pending,
        &title,
        &ctx.shown_zone(),
        left_out,
    ))
}

/// `tau sessions rename NAME TITLE`: an empty TITLE gives the session back its first
/// prompt's title.
pub(crate) fn sessions_rename(ctx: &Context, name: &str, title: &str) -> anyhow::Result<String> {
    let id = session_id(name)?;
    let store = open_store(ctx)?.ok_or_else(|| no_session(&id))?;
    let wanted = (!title.trim().is_empty()).then_some(title);
    match store.sessions().rename_session(&id, wanted) {
        Ok(true) => {}
        Ok(false) => return Err(no_session(&id)),
        Err(tau_state::StateError::Title(why)) => return Err(usage(why.to_string())),
        Err(error) => return Err(error.into()),
    }
    let now = store.sessions().session_title(&id)?.map(|t| display(&t));
    Ok(match now {
        Some(title) => format!("session {id} is called {title}\n"),
        None => format!("session {id} has no title (nobody wrote in it yet)\n"),
    })
}

fn stored_messages(ctx: &Context, name: &str) -> anyhow::Result<Vec<Message>> {
    let id = session_id(name)?;
    let store = open_store(ctx)?.ok_or_else(|| no_session(&id))?;
    if !store.sessions().session_exists(&id)? {
        return Err(no_session(&id));
    }
    Ok(StoredSessions::new(store.sessions()).messages(&id, 0)?)
}

pub(crate) fn sessions_show(ctx: &Context, name: &str, json: bool) -> anyhow::Result<String> {
    let messages = stored_messages(ctx, name)?;
    if json {
        // Still exactly the stored JSON for a machine; only escaped so a terminal shows it.
        let text = serde_json::to_string_pretty(&messages)?;
        return Ok(format!("{}\n", json_for_terminal(&text)));
    }
    let pending = match open_store(ctx)? {
        Some(store) => store.approvals().approvals(Some(ApprovalState::Pending))?,
        None => Vec::new(),
    };
    Ok(session_transcript(&messages, &pending, &session_id(name)?))
}

pub(crate) fn sessions_delete(ctx: &Context, name: &str) -> anyhow::Result<String> {
    let id = session_id(name)?;
    let store = open_store(ctx)?.ok_or_else(|| no_session(&id))?;
    std::fs::create_dir_all(ctx.home.locks())?;
    // Not one the hub holds: its paused turn would lose its question.
    let _lock = crate::owner::open_own(ctx, &id)?;
    let existed = store.sessions().session_exists(&id)?;
    // A hub conversation's row goes with its session: the channel never finds it again.
    store.conversations().delete_conversation(&id)?;
    if existed {
        let _ = std::fs::remove_file(ctx.home.locks().join(format!("{id}.lock")));
        Ok(format!("deleted session {id}\n"))
    } else {
        Err(no_session(&id))
    }
}
