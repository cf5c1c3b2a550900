//! The approval message: what is asked (tool, tier, effect, arguments), its buttons, and
//! what it says once the question is closed. Everything from the model passes through the
//! display function, then HTML escaping.

use jiff::Timestamp;
use jiff::tz::TimeZone;
use serde_json::Value;
use tau_core::{Language, display, display_multiline, sorted_json};
use tau_protocol::{ApprovalQuestion, CardNote, DecidedBy, NoteLevel};
use tau_state::{ApprovalRow, ApprovalState};

use crate::api::Keyboard;
use crate::callback::{Action, ButtonData};
use crate::html::{Line, MESSAGE_LIMIT, Style, escape, pack};
use crate::names::Names;
use crate::texts::{Texts, counted, texts};

/// How many characters of arguments the question shows before "Show all".
const ARGUMENTS_SHOWN: usize = 2500;
/// How many characters of a note's detail (a file's content) the question shows before
/// "Show all".
const DETAIL_SHOWN: usize = 800;

/// `2026-12-02 14:03:05 UTC`, `2026-12-02 17:03:05 +03`: in tau's zone, which is named.
pub(crate) fn when(at: Timestamp, zone: &TimeZone) -> String {
    at.to_zoned_datetime(zone.clone())
        .strftime("%Y-%m-%d %H:%M:%S %Z")
        .to_string()
}

/// The question message and its buttons.
#[cfg(test)]
pub(crate) fn question(
    asked: &ApprovalQuestion,
    language: Language,
    zone: &TimeZone,
) -> (String, Keyboard) {
    question_or_passkey(asked, language, zone, None)
}

/// [`question`], or, for a question whose yes takes a passkey (`passkey`), the same card
/// saying where to approve it, with Reject alone.
pub(crate) fn question_or_passkey(
    asked: &ApprovalQuestion,
    language: Language,
    zone: &TimeZone,
    passkey: Option<&tau_hub::PasskeyElsewhere>,
) -> (String, Keyboard) {
    let t = texts(language);
    let (mut html, cut) = body(asked, t);
    if let Some(deadline) = &asked.deadline {
        let shown = deadline
            .parse::<Timestamp>()
            .map_or_else(|_| display(deadline), |at| when(at, zone));
        html.push_str(&format!("\n{} {}", t.expires, escape(&shown)));
    }
    let id = asked.approval_id.as_str();
    let reject = (
        t.reject.to_owned(),
        ButtonData::new(Action::Reject, id).encode(),
    );
    let step = asked.card.confirm.as_ref().map(|step| {
        step.code
            .parse::<u8>()
            .ok()
            .filter(|n| (10..=99).contains(n))
    });
    if let Some(elsewhere) = passkey {
        html.push_str(&format!("\n\n<b>{}</b>", escape(t.passkey_step)));
        if let Some(link) = &elsewhere.link {
            html.push_str(&format!("\n{}", escape(link)));
        }
        return (html, vec![vec![reject]]);
    }
    let mut keyboard = match step {
        // A second step without a number to press cannot be passed here: Reject only.
        Some(None) => vec![vec![reject]],
        // A second step: the number to press among others, and no plain Approve.
        Some(Some(code)) => {
            html.push_str(&format!(
                "\n\n<b>{}</b>",
                escape(&t.second_step.replace("{code}", &code.to_string()))
            ));
            let numbers = numbers_shown(code)
                .into_iter()
                .map(|n| {
                    (
                        n.to_string(),
                        ButtonData::new(Action::Confirm(n), id).encode(),
                    )
                })
                .collect();
            vec![numbers, vec![reject]]
        }
        None => {
            let mut rows = vec![vec![
                (
                    t.approve.to_owned(),
                    ButtonData::new(Action::Approve, id).encode(),
                ),
                reject,
            ]];
            // Said before the button can be pressed: what the grant covers, in tau's words.
            if let Some(offer) = &asked.grant {
                let pin = if offer.pins_workspace {
                    t.grant_pins_workspace
                } else {
                    ""
                };
                let covers = t
                    .grant_covers
                    .replace("{hours}", &offer.hours.to_string())
                    .replace("{pin}", pin);
                html.push_str(&format!("\n\n<i>{}</i>", escape(&covers)));
                if let Some(suggestion) = &offer.suggestion {
                    let mut text = t
                        .grant_suggested
                        .replace("{n}", &suggestion.approved.to_string())
                        .replace("{days}", &tau_protocol::SUGGESTION_DAYS.to_string());
                    if suggestion.regular {
                        text.push(' ');
                        text.push_str(t.routine_suggested);
                    }
                    html.push_str(&format!("\n<i>☆ {}</i>", escape(&text)));
                }
                rows.push(vec![(
                    t.approve_always.to_owned(),
                    ButtonData::new(Action::ApproveAlways, id).encode(),
                )]);
                rows.push(vec![(
                    t.approve_always_everywhere.to_owned(),
                    ButtonData::new(Action::ApproveAlwaysEverywhere, id).encode(),
                )]);
            }
            rows
        }
    };
    if cut {
        keyboard.push(vec![(
            t.show_all.to_owned(),
            ButtonData::new(Action::ShowAll, id).encode(),
        )]);
    }
    (html, keyboard)
}

/// The number of a second step among three others, in ascending order, so pressing takes
/// reading the number first. The others follow from it, so the keyboard is the same each
/// time the question is shown.
fn numbers_shown(code: u8) -> Vec<u8> {
    let mut numbers: Vec<u8> = [0u8, 29, 53, 71]
        .iter()
        .map(|offset| 10 + (code - 10 + offset) % 90)
        .collect();
    numbers.sort_unstable();
    numbers
}

/// The message once the question is closed: the same question, then how it ended. No
/// buttons go with it.
pub(crate) fn closed(
    row: &ApprovalRow,
    language: Language,
    zone: &TimeZone,
    names: &Names,
) -> String {
    let t = texts(language);
    let (html, _) = body(&row.question(), t);
    format!(
        "{html}\n\n<b>{}</b>",
        escape(&outcome(row, language, zone, names))
    )
}

/// How a closed question ended, in one line of plain text (also the answer to a press on
/// it), naming who decided by the name Telegram gave them where it is known (`names`),
/// else by their user id. Empty while it is still open.
pub(crate) fn outcome(
    row: &ApprovalRow,
    language: Language,
    zone: &TimeZone,
    names: &Names,
) -> String {
    let t = texts(language);
    let time = row
        .decided_at
        .map_or_else(|| "?".to_owned(), |at| when(at, zone));
    let template = match row.state {
        ApprovalState::Pending => return String::new(),
        ApprovalState::Approved => match row.grant_request.map(|r| r.scope) {
            Some(tau_protocol::GrantScope::Conversation) => t.approved_allowing,
            Some(tau_protocol::GrantScope::Channel) => t.approved_allowing_everywhere,
            None => t.approved_by,
        },
        ApprovalState::Rejected => t.rejected_by,
        ApprovalState::Expired => t.expired,
        ApprovalState::Superseded => t.superseded,
        ApprovalState::Cancelled => t.cancelled,
    };
    let user = row
        .decided_by
        .as_ref()
        .map_or_else(|| "?".to_owned(), |by| who(by, names));
    template
        .replace("{user}", &display(&user))
        .replace("{time}", &time)
}

fn who(decided_by: &DecidedBy, names: &Names) -> String {
    match decided_by {
        DecidedBy::Person {
            user: Some(user), ..
        } => names.of(user).unwrap_or_else(|| user.clone()),
        DecidedBy::Person {
            channel,
            user: None,
            ..
        } => channel.clone(),
        DecidedBy::Timeout => "timeout".into(),
        DecidedBy::EndOfInput => "end_of_input".into(),
        DecidedBy::Cancelled => "cancelled".into(),
        DecidedBy::ApproverFailed => "approver_failed".into(),
        DecidedBy::Exemption { name } => name.clone(),
        DecidedBy::Grant { id } => id.to_string(),
        DecidedBy::Superseded => "superseded".into(),
        DecidedBy::Policy => "policy".into(),
    }
}

/// The message a closed question gets when its row is gone.
pub(crate) fn not_found(language: Language) -> String {
    format!("<b>{}</b>", escape(texts(language).not_asked))
}

/// The question's head and its arguments, cut after [`ARGUMENTS_SHOWN`] characters.
/// Returns the HTML and whether something was cut.
fn body(asked: &ApprovalQuestion, t: &Texts) -> (String, bool) {
    let mut html = format!(
        "<b>⚠ {} · {} {}</b>",
        escape(t.approval_needed),
        escape(t.tier),
        asked.tier,
    );
    if let Some(headline) = &asked.card.headline {
        html.push_str(&format!("\n<b>{}</b>", escape(&display(headline))));
    }
    html.push_str(&format!(
        "\n{}: <code>{}</code>\n{}: {}",
        escape(t.tool),
        escape(&display(&asked.tool)),
        escape(t.effect),
        escape(&display(&asked.effect)),
    ));
    let mut detail_cut = false;
    for note in &asked.card.notes {
        html.push_str(&format!("\n{}", note_line(note)));
        if let Some(detail) = &note.detail {
            let shown = display_multiline(detail);
            let kept: String = shown.chars().take(DETAIL_SHOWN).collect();
            html.push_str(&format!("\n<pre>{}</pre>", escape(&kept)));
            let rest = shown.chars().count() - kept.chars().count();
            if rest > 0 {
                let more = counted(t.more, rest, t.thousands);
                html.push_str(&format!("\n<i>{}</i>", escape(&more)));
                detail_cut = true;
            }
        }
    }
    html.push_str(&format!("\n{}:", escape(t.arguments)));
    let rows = argument_rows(&asked.arguments, t);
    let mut budget = ARGUMENTS_SHOWN;
    let mut rest = 0;
    for row in &rows {
        let length = row.chars().count();
        if rest > 0 || length > budget {
            let kept: String = row.chars().take(budget).collect();
            if !kept.is_empty() {
                html.push_str(&format!("\n<code>{}</code>", escape(&kept)));
            }
            rest += length - kept.chars().count();
            budget = 0;
        } else {
            html.push_str(&format!("\n<code>{}</code>", escape(row)));
            budget -= length;
        }
    }
    if rest > 0 {
        let more = counted(t.more, rest, t.thousands);
        html.push_str(&format!("\n<i>{}</i>", escape(&more)));
    }
    (html, rest > 0 || detail_cut)
}

/// One note of tau's on a line: `⚠ <b>label</b>: text` for a warning, `· label: text` for
/// a fact.
fn note_line(note: &CardNote) -> String {
    let label = escape(&display(&note.label));
    let text = escape(&display(&note.text));
    match note.level {
        NoteLevel::Info => format!("· {label}: {text}"),
        NoteLevel::Warning => format!("⚠ <b>{label}</b>: {text}"),
    }
}

/// Every note's detail and every argument whole, as messages (for "Show all").
pub(crate) fn all_arguments(asked: &ApprovalQuestion, language: Language) -> Vec<String> {
    let t = texts(language);
    let mut lines = Vec::new();
    for note in &asked.card.notes {
        if let Some(detail) = &note.detail {
            lines.push(Line::new(
                format!("{}: {}", display(&note.label), display(&note.text)),
                Style::Bold,
            ));
            lines.extend(
                display_multiline(detail)
                    .lines()
                    .map(|line| Line::new(line.to_owned(), Style::Code)),
            );
        }
    }
    lines.push(Line::new(
        format!("{}: {}", t.arguments, display(&asked.tool)),
        Style::Bold,
    ));
    lines.extend(
        argument_rows(&asked.arguments, t)
            .into_iter()
            .map(|row| Line::new(row, Style::Code)),
    );
    pack(&lines, MESSAGE_LIMIT)
}

/// One row per top-level key, sorted; a string JSON-quoted with its length, so `"30"`
/// differs from `30` and edge spaces show. Every row is through the display function.
fn argument_rows(arguments: &Value, t: &Texts) -> Vec<String> {
    match arguments {
        Value::Object(map) if !map.is_empty() => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            keys.into_iter()
                .filter_map(|key| {
                    let value = map.get(key)?;
                    Some(format!(
                        "{}{}: {}",
                        shown_key(key),
                        length(value, t),
                        display(&sorted_json(value))
                    ))
                })
                .collect()
        }
        Value::Object(_) => vec!["{}".to_owned()],
        other => vec![format!(
            "{}{}",
            display(&sorted_json(other)),
            length(other, t)
        )],
    }
}

fn shown_key(key: &str) -> String {
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if plain {
        key.to_owned()
    } else {
        display(&Value::String(key.to_owned()).to_string())
    }
}

fn length(value: &Value, t: &Texts) -> String {
    let Some(count) = tau_core::shown_length(value) else {
        return String::new();
    };
    let unit = if count == 1 {
        t.character
    } else {
        t.characters
    };
    format!(" ({} {unit})", tau_core::grouped_digits(count, t.thousands))
}

#[cfg(test)]
#[path = "question_tests.rs"]
mod tests;
