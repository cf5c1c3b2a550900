//! The routines as a person reads them (`tau routines list` and `show`): every word a
//! routine holds that a model or a conversation may have written is shown through the
//! display function.

use std::fmt::Write;

use jiff::tz::TimeZone;
use tau_core::{display, when};

use crate::book::Book;
use crate::store::{RoutineStore, RunRecord, StoreError};
use crate::tools::describe_action;
use crate::trigger::Trigger;
use crate::validate::{Action, Origin, Routine};

/// How the last run of `name` ended and when, or `never`.
fn last_run(store: &RoutineStore, name: &str, zone: &TimeZone) -> Result<String, StoreError> {
    Ok(store.runs(name, 1)?.first().map_or_else(
        || "never".to_owned(),
        |run| format!("{} {}", run.outcome.as_str(), when(run.started_at, zone)),
    ))
}

/// `tau routines list`: a line a routine (its switch, its owner when `[[people]]` names
/// anyone, trigger, action and last run), then the stored ones left out and why.
pub fn list_text(book: &Book, store: &RoutineStore, zone: &TimeZone) -> Result<String, StoreError> {
    if book.routines.is_empty() && book.problems.is_empty() {
        return Ok(
            "no routines yet: add [[routines]] to tau.toml, or ask for one in a chat\n".to_owned(),
        );
    }
    let width = book
        .routines
        .iter()
        .map(|r| r.name().len())
        .max()
        .unwrap_or(4)
        .max(4);
    // Only a household's routines have owners; a home of one person lists as before.
    let owners = book
        .routines
        .iter()
        .filter_map(|r| r.owner.as_ref().map(|o| o.as_str().len()))
        .max()
        .map(|widest| widest.max(5));
    let owner_cell = |owner: &str| owners.map_or_else(String::new, |w| format!("{owner:<w$}  "));
    let mut out = format!(
        "{:<width$}  {:<3}  {}{:<24}  {:<32}  LAST RUN\n",
        "NAME",
        "ON",
        owner_cell("OWNER"),
        "TRIGGER",
        "ACTION"
    );
    for routine in &book.routines {
        let _ = writeln!(
            out,
            "{:<width$}  {:<3}  {}{:<24}  {:<32}  {}",
            routine.name(),
            if routine.enabled { "yes" } else { "no" },
            owner_cell(routine.owner.as_ref().map_or("-", |o| o.as_str())),
            display(&routine.trigger.describe()),
            display(&shorten(&describe_action(&routine.action), 32)),
            last_run(store, routine.name(), zone)?
        );
    }
    for (name, problem) in &book.problems {
        let _ = writeln!(
            out,
            "{:<width$}  left out: {}",
            display(name),
            display(problem)
        );
    }
    Ok(out)
}

fn shorten(text: &str, chars: usize) -> String {
    match text.char_indices().nth(chars.saturating_sub(1)) {
        Some((cut, _)) if text.chars().count() > chars => format!("{}…", &text[..cut]),
        _ => text.to_owned(),
    }
}

fn exemption_line(routine: &Routine) -> &'static str {
    match (&routine.action, routine.approved()) {
        (Action::Prompt { .. }, _) => "none: a prompt action's tier-2 calls are always asked",
        (Action::Tool { .. }, true) => {
            "its call, with exactly these arguments, runs without asking"
        }
        (Action::Tool { .. }, false) => {
            "none: it changed since it was approved, so its call is asked"
        }
    }
}

/// `tau routines show NAME`: the routine whole (where its webhook's secret is, never the
/// secret), its exemption, and its newest `runs`.
pub fn show_text(routine: &Routine, runs: Vec<RunRecord>, zone: &TimeZone) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "routine    {}", routine.name());
    let _ = writeln!(
        out,
        "set up in  {}",
        match routine.origin {
            Origin::Config => "tau.toml",
            Origin::Conversation { .. } => "a conversation (state.db)",
        }
    );
    let _ = writeln!(
        out,
        "enabled    {}",
        if routine.enabled { "yes" } else { "no" }
    );
    if let Some(owner) = &routine.owner {
        let _ = writeln!(
            out,
            "owner      {owner}: its questions are theirs to answer"
        );
    }
    let _ = writeln!(out, "trigger    {}", display(&routine.trigger.describe()));
    if let Trigger::Webhook { payload, .. } = &routine.trigger {
        // Where the secret is, never the secret: the variable tau reads it from.
        let secret = routine.def.webhook.as_ref().map_or_else(
            || "<secret>".to_owned(),
            |webhook| format!("<the secret in ${}>", display(&webhook.secret_env)),
        );
        let _ = writeln!(
            out,
            "           POST /hooks/{} with Authorization: Bearer {secret}",
            routine.name()
        );
        if let Some(payload) = payload {
            let _ = writeln!(
                out,
                "           body exactly {}",
                display(&serde_json::Value::String(payload.clone()).to_string())
            );
        }
    }
    if let Trigger::Mqtt {
        payload: Some(payload),
        ..
    } = &routine.trigger
    {
        let _ = writeln!(
            out,
            "           payload exactly {}",
            display(&serde_json::Value::String(payload.clone()).to_string())
        );
    }
    let _ = writeln!(
        out,
        "action     {}",
        display(&describe_action(&routine.action))
    );
    let _ = writeln!(
        out,
        "ask        {}",
        routine
            .ask
            .map_or("nobody: calls not exempt are refused", |a| a.as_str())
    );
    let _ = writeln!(out, "exemption  {}", exemption_line(routine));
    let _ = writeln!(out, "session    {}", routine.session());
    if runs.is_empty() {
        out.push_str("runs       none yet\n");
    } else {
        out.push_str("runs       (newest first)\n");
        for run in runs {
            let _ = writeln!(
                out,
                "  {}  {:<8}  {}{}",
                when(run.started_at, zone),
                run.outcome.as_str(),
                display(&run.trigger),
                run.detail
                    .map(|d| format!(" — {}", display(d.as_str())))
                    .unwrap_or_default()
            );
        }
    }
    out
}
