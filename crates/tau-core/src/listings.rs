//! The stored sessions and the tools as `tau sessions` and `tau tools` show them: every
//! text from a session or a tool through the display function. The caller reads the
//! store; these only lay out what it read.

use std::fmt::Write;

use jiff::tz::TimeZone;
use tau_agent::{ContentBlock, Message, Role, ToolResultStatus};
use tau_protocol::SessionId;
use tau_state::{ApprovalRow, StoredSession};

use crate::display::{display, sorted_json};
use crate::{ToolCatalog, channel_name, when};

/// `tau sessions list`'s table: one line per session with its title (`title`: a person's,
/// else its first prompt's) and what waits in it (`pending`: every question that waits);
/// `empty_left_out` empty sessions are said to be left out under it.
pub fn sessions_table(
    sessions: &[StoredSession],
    pending: &[ApprovalRow],
    title: &dyn Fn(&SessionId) -> Option<String>,
    zone: &TimeZone,
    empty_left_out: usize,
) -> String {
    let rows: Vec<_> = sessions
        .iter()
        .map(|s| {
            let updated = jiff::Timestamp::from_second(s.updated_at)
                .map_or_else(|_| s.updated_at.to_string(), |t| when(t, zone));
            let waiting = waiting(pending, &s.id);
            let title = title(&s.id).map(|t| display(&t)).unwrap_or_default();
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
    if empty_left_out > 0 {
        let _ = writeln!(
            out,
            "({empty_left_out} empty not listed: tau sessions list --all)"
        );
    }
    out
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
        channel_name(&first.channel)
    )
}

/// `tau sessions show`: each block of each message on a line of its own, then the
/// questions of `session` that wait (from `pending`), one line each.
pub fn session_transcript(
    messages: &[Message],
    pending: &[ApprovalRow],
    session: &SessionId,
) -> String {
    let mut out = String::new();
    for message in messages {
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
    for row in pending.iter().filter(|row| &row.session == session) {
        let _ = writeln!(
            out,
            "  ? {} waits for your answer on {} ({})",
            display(&row.tool),
            channel_name(&row.channel),
            row.id
        );
    }
    out
}

/// `tau tools`: every tool with its tier and effect, and the hints an MCP server gave for
/// its tools (shown, never used for the tier).
pub fn tools_table(catalog: &ToolCatalog) -> String {
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
