//! One transcript entry as rows. The model's text always sits behind its speaker's
//! gutter (`tau │`), so nothing it writes (a box drawn of `═`, a line saying "approval
//! needed") can pass for something tau draws: tau's own rows have no gutter, and the
//! approval card is a modal over the transcript, never a row in it.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use tau_agent::ToolResultStatus;
use tau_core::{display, display_multiline, sorted_json};
use tau_protocol::{Approval, CallStatus, DecidedBy};

use crate::card::{argument_rows, tier_style};
use crate::texts::Texts;
use crate::transcript::{Call, CallState, Entry};
use crate::ui::{dim, hanging};
use crate::wrap::{shorten, width, wrap};

/// Where an expanded call's details start.
const DETAIL_INDENT: usize = 6;
/// Spaces a tab becomes in the model's text (a tab is a control a cell cannot hold).
const TAB: &str = "    ";

pub(crate) fn entry_rows(
    entry: &Entry,
    columns: usize,
    t: &Texts,
    selected: bool,
    not_first: bool,
) -> Vec<Line<'static>> {
    match entry {
        Entry::User(text) => {
            let mut rows = if not_first {
                vec![Line::default()]
            } else {
                Vec::new()
            };
            rows.extend(speaker(t.you, Color::Cyan, text, columns));
            rows
        }
        Entry::Assistant(text) => speaker(t.tau, Color::Magenta, text, columns),
        Entry::Call(call) => call_rows(call, columns, t, selected),
        Entry::Notice(text) => hanging(
            vec![Span::styled("  ! ", Style::new().fg(Color::Yellow))],
            "    ",
            &display(text),
            columns,
            Style::new().fg(Color::Yellow),
        ),
        Entry::Info(text) => hanging(
            vec![Span::styled("  · ", dim())],
            "    ",
            &display(text),
            columns,
            dim(),
        ),
    }
}

/// A speaker's text, every row behind the gutter; line breaks stay.
fn speaker(label: &str, color: Color, text: &str, columns: usize) -> Vec<Line<'static>> {
    let label_style = Style::new().fg(color).add_modifier(Modifier::BOLD);
    let pad = 4usize.saturating_sub(width(label));
    let shown = display_multiline(text).replace('\t', TAB);
    let mut rows = Vec::new();
    for line in shown.split('\n') {
        for piece in wrap(line, columns.saturating_sub(6)) {
            let head = if rows.is_empty() {
                Span::styled(format!("{label}{}", " ".repeat(pad)), label_style)
            } else {
                Span::raw("    ")
            };
            rows.push(Line::from(vec![
                head,
                Span::styled("│ ", dim()),
                Span::raw(piece),
            ]));
        }
    }
    rows
}

fn call_rows(call: &Call, columns: usize, t: &Texts, selected: bool) -> Vec<Line<'static>> {
    let marker = if selected { "▸ " } else { "  " };
    let badge = call
        .tier
        .map_or_else(|| "[?]".to_owned(), |tier| format!("[{tier}]"));
    let (status, status_style) = status(call, t);
    let mut facts = vec![status];
    if let Some(who) = &call.decided_by {
        facts.push(decided_by(who, t));
    }
    if let Some(ms) = call.duration_ms {
        facts.push(duration(ms));
    }
    let head: Vec<Span<'static>> = vec![
        Span::styled(marker, Style::new().fg(Color::Yellow)),
        Span::styled(badge, tier_style(call.tier)),
        Span::raw(" "),
        Span::styled(
            display(&call.tool),
            Style::new().add_modifier(Modifier::BOLD),
        ),
        Span::styled(" · ", dim()),
        Span::styled(facts.join(" · "), status_style),
    ];
    let used: usize = head.iter().map(|s| width(&s.content)).sum();
    let mut rows = if used <= columns {
        let mut spans = head;
        let room = columns - used;
        if !call.expanded && room > 3 && !call.arguments.is_null() {
            // Collapsed, the arguments are a hint; the whole of them is one key away.
            let arguments = display(&sorted_json(&call.arguments));
            spans.push(Span::styled(
                format!("  {}", shorten(&arguments, room - 2)),
                dim(),
            ));
        }
        vec![Line::from(spans)]
    } else {
        // Too narrow for one row: the facts still show whole, wrapped.
        let text: String = head.iter().skip(1).map(|s| s.content.as_ref()).collect();
        hanging(
            vec![Span::styled(marker, Style::new().fg(Color::Yellow))],
            "    ",
            &text,
            columns,
            status_style,
        )
    };
    if let (CallState::Running, Some(progress)) = (call.state, &call.progress) {
        let line = format!("      … {}", display(progress));
        rows.push(Line::from(Span::styled(shorten(&line, columns), dim())));
    }
    if call.expanded {
        rows.extend(details(call, columns, t));
    }
    rows
}

/// An expanded call: its arguments whole, then its result.
fn details(call: &Call, columns: usize, t: &Texts) -> Vec<Line<'static>> {
    let indent = " ".repeat(DETAIL_INDENT);
    let room = columns.saturating_sub(DETAIL_INDENT);
    let mut rows = vec![Line::from(Span::styled(
        format!("{indent}{}", t.arguments),
        dim(),
    ))];
    for row in argument_rows(&call.arguments, room, t) {
        let mut spans = vec![Span::raw(indent.clone())];
        spans.extend(row.spans);
        rows.push(Line::from(spans));
    }
    let (label, text) = match (&call.result, &call.summary) {
        (Some(result), _) => (t.result, Some(result)),
        (None, Some(summary)) => (t.result_so_far, Some(summary)),
        (None, None) => (t.no_result, None),
    };
    rows.push(Line::from(Span::styled(format!("{indent}{label}"), dim())));
    if let Some(text) = text {
        let shown = display_multiline(text).replace('\t', TAB);
        for line in shown.split('\n') {
            for piece in wrap(line, room) {
                rows.push(Line::from(vec![
                    Span::raw(indent.clone()),
                    Span::raw(piece),
                ]));
            }
        }
    }
    rows
}

/// The call's state in words, from its fields alone.
fn status(call: &Call, t: &Texts) -> (String, Style) {
    let red = Style::new().fg(Color::Red);
    let (text, style) = match call.state {
        CallState::Running => (t.call_running, Style::new().fg(Color::Yellow)),
        CallState::Waiting => (
            t.call_waiting,
            Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD),
        ),
        CallState::Finished(CallStatus::Success) => (t.call_ran, Style::new().fg(Color::Green)),
        CallState::Finished(CallStatus::Error) => (t.call_failed, red),
        CallState::Finished(CallStatus::Refused)
            if call.approval == Some(Approval::Timeout)
                || call.decided_by == Some(DecidedBy::Timeout) =>
        {
            (t.call_timed_out, red)
        }
        CallState::Finished(CallStatus::Refused) => (t.call_refused, red),
        CallState::Finished(CallStatus::UnknownTool) => (t.call_unknown, red),
        CallState::Finished(CallStatus::Invalid) => (t.call_invalid, red),
        CallState::Finished(CallStatus::Cancelled) => (t.call_cancelled, red),
        CallState::Earlier(ToolResultStatus::Success) => (t.call_earlier_ok, dim()),
        CallState::Earlier(ToolResultStatus::Error) => (t.call_earlier_error, dim()),
    };
    (text.to_owned(), style)
}

/// Who or what decided, in words.
fn decided_by(who: &DecidedBy, t: &Texts) -> String {
    match who {
        DecidedBy::Person { channel, .. } if channel == crate::TUI_CHANNEL => t.by_you.to_owned(),
        DecidedBy::Person { channel, .. } => t.by_person.replace("{channel}", &display(channel)),
        DecidedBy::Timeout => t.by_timeout.to_owned(),
        DecidedBy::EndOfInput => t.by_end_of_input.to_owned(),
        DecidedBy::Cancelled => t.by_cancelled.to_owned(),
        DecidedBy::ApproverFailed => t.by_approver_failed.to_owned(),
        DecidedBy::Exemption { name } => t.by_exemption.replace("{name}", &display(name)),
        DecidedBy::Grant { id } => t.by_grant.replace("{id}", id.as_str()),
        DecidedBy::Superseded => t.by_superseded.to_owned(),
        DecidedBy::Policy => t.by_policy.to_owned(),
    }
}

fn duration(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms} ms")
    } else {
        format!("{}.{} s", ms / 1000, (ms % 1000) / 100)
    }
}
