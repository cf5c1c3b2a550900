//! The small commands: sessions, tools.

use std::fmt::Write;

use tau_agent::{ContentBlock, Message, Role, SessionRepository, ToolResultStatus};
use tau_core::{StoredSessions, ToolCatalog, display, json_for_terminal, sorted_json};
use tau_protocol::SessionId;
use tau_state::{ApprovalRow, ApprovalState, StateDb};

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
    let zone = ctx.shown_zone();
    let pending = store.approvals().approvals(Some(ApprovalState::Pending))?;
    let rows: Vec<_> = sessions
        .into_iter()
        .map(|s| {
            let updated = jiff::Timestamp::from_second(s.updated_at).map_or_else(
                |_| s.updated_at.to_string(),
                |t| crate::routines::when(t, &zone),
            );
            let waiting = waiting(&pending, &s.id);
            let title = store
                .sessions()
                .session_title(&s.id)
                .ok()
                .flatten()
                .map(|t| display(&t))
                .unwrap_or_default();
            (
                s.id.as_str().to_owned(),
                s.message_count,
                updated,
                title,
                waiting,
            )
        })
        .collect();
    let width = rows
        .iter()
        .map(|row| row.2.chars().count())
        .max()
        .unwrap_or_default()
        .max("UPDATED".len());
    let title_width = rows
        .iter()
        .map(|row| row.3.chars().count())
        .max()
        .unwrap_or_default()
        .max("TITLE".len());
    // As wide as the longest id: a hub's ids (`web-20261203-080219-` and 32 hex digits) are
    // longer than a name typed at `tau chat --session`, and every column stays aligned.
    let id_width = rows
        .iter()
        .map(|row| row.0.chars().count())
        .max()
        .unwrap_or_default()
        .max("SESSION".len());
    let mut out = String::new();
    let mut line = |id: &str, count: &str, updated: &str, title: &str, waiting: &str| {
        // The WAITING column is there while a question waits somewhere.
        let text = if pending.is_empty() {
            format!("{id:<id_width$}  {count:>8}  {updated:<width$}  {title}")
        } else {
            format!(
                "{id:<id_width$}  {count:>8}  {updated:<width$}  {title:<title_width$}  {waiting}"
            )
        };
        out.push_str(text.trim_end());
        out.push('\n');
    };
    line("SESSION", "MESSAGES", "UPDATED", "TITLE", "WAITING");
    for (id, count, updated, title, waiting) in &rows {
        line(id, &count.to_string(), updated, title, waiting);
    }
    if !all && empty > 0 {
        out.push_str(&format!(
            "({empty} empty not listed: tau sessions list --all)\n"
        ));
    }
    Ok(out)
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

/// What waits in `session`: `1 question on TauBar`, or nothing.
fn waiting(pending: &[ApprovalRow], session: &SessionId) -> String {
    let rows: Vec<&ApprovalRow> = pending.iter().filter(|r| &r.session == session).collect();
    let Some(first) = rows.first() else {
        return String::new();
    };
    let questions = if rows.len() == 1 {
        "question"
    } else {
        "questions"
    };
    format!(
        "{} {questions} on {}",
        rows.len(),
        tau_core::channel_name(&first.channel)
    )
}

fn stored_messages(ctx: &Context, name: &str) -> anyhow::Result<Vec<Message>> {
    let id = session_id(name)?;
    let store = open_store(ctx)?.ok_or_else(|| no_session(&id))?;
    if !store.sessions().session_exists(&id)? {
        return Err(no_session(&id));
    }
    Ok(StoredSessions::new(store.sessions()).messages(&id, 0)?)
}

/// The questions of `name` that wait, one line each.
fn waiting_lines(ctx: &Context, name: &str) -> anyhow::Result<String> {
    let id = session_id(name)?;
    let Some(store) = open_store(ctx)? else {
        return Ok(String::new());
    };
    let mut out = String::new();
    for row in store.approvals().approvals(Some(ApprovalState::Pending))? {
        if row.session == id {
            let _ = writeln!(
                out,
                "  ? {} waits for your answer on {} ({})",
                display(&row.tool),
                tau_core::channel_name(&row.channel),
                row.id
            );
        }
    }
    Ok(out)
}

pub(crate) fn sessions_show(ctx: &Context, name: &str, json: bool) -> anyhow::Result<String> {
    let messages = stored_messages(ctx, name)?;
    if json {
        // Still exactly the stored JSON for a machine; only escaped so a terminal shows it.
        let text = serde_json::to_string_pretty(&messages)?;
        return Ok(format!("{}\n", json_for_terminal(&text)));
    }
    let mut out = String::new();
    for message in &messages {
        let who = match message.role {
            Role::User => "you",
            Role::Assistant => "tau",
        };
        for block in &message.content {
            let line = match block {
                ContentBlock::Text(text) => format!("{who}> {}", display(text)),
                ContentBlock::ToolUse(u) => {
                    format!(
                        "  · {} {}",
                        display(&u.name),
                        display(&sorted_json(&u.input))
                    )
                }
                ContentBlock::ToolResult(r) => {
                    let status = match r.status {
                        ToolResultStatus::Success => "success",
                        ToolResultStatus::Error => "error",
                    };
                    format!("  = {status}: {}", display(&r.text()))
                }
            };
            out.push_str(&line);
            out.push('\n');
        }
    }
    out.push_str(&waiting_lines(ctx, name)?);
    Ok(out)
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

/// Every tool with its tier and effect, and the hints an MCP server gave for its tools
/// (shown, never used for the tier).
pub(crate) fn tools(catalog: &ToolCatalog) -> String {
    let width = catalog
        .entries()
        .map(|e| display(&e.tool.spec().name).chars().count())
        .max()
        .unwrap_or(0);
    let mut out = format!("{:<width$}  TIER  EFFECT\n", "TOOL");
    for entry in catalog.entries() {
        let spec = entry.tool.spec();
        let mut hints: Vec<String> = spec
            .annotations
            .iter()
            .filter(|(key, _)| key.ends_with("Hint"))
            .map(|(key, value)| display(&format!("{key}={value}")))
            .collect();
        hints.sort();
        let hints = if hints.is_empty() {
            String::new()
        } else {
            format!(" (server hints: {})", hints.join(", "))
        };
        let _ = writeln!(
            out,
            "{:<width$}  {:>4}  {}{hints}",
            display(&spec.name),
            entry.tier.number(),
            display(&entry.effect)
        );
    }
    out
}
