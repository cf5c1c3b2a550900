//! The questions that wait for a person, as `tau approvals` lists them: whichever channel
//! asked, with its id and where it is answered. Every field a question holds (its tool,
//! effect and arguments came from a model or an MCP server) is shown through the display
//! function, its lookalike words flagged as on its card; the ids and the session are
//! tau's own, plain ASCII by their types.

use std::fmt::Write;

use jiff::Timestamp;
use jiff::tz::TimeZone;
use tau_protocol::{CardNote, NoteLevel, SessionId};
use tau_state::{ApprovalRow, ApprovalState};

use crate::display::{Listing, display};
use crate::shown::{channel_name, conversation, when};

/// How long a question still waits, from `now`; its deadline in tau's zone, named.
fn remaining(deadline: Timestamp, now: Timestamp, zone: &TimeZone) -> String {
    let seconds = deadline.as_second() - now.as_second();
    // Whole seconds: a person reads no nanoseconds.
    let deadline = when(deadline, zone);
    if seconds <= 0 {
        // Only `tau serve` closes a question; until it runs, a late one stays listed.
        return format!("deadline {deadline} passed");
    }
    let minutes = (seconds + 59) / 60;
    format!("until {deadline} ({minutes} min left)")
}

/// The pending questions, oldest first, as the person reads them at `now` in `zone`; each
/// names its conversation by its title (`titles`) where it has one.
pub fn waiting_text(
    rows: &[ApprovalRow],
    titles: &dyn Fn(&SessionId) -> Option<String>,
    now: Timestamp,
    zone: &TimeZone,
) -> String {
    let pending: Vec<&ApprovalRow> = rows
        .iter()
        .filter(|r| r.state == ApprovalState::Pending)
        .collect();
    if pending.is_empty() {
        return "nothing waits for you\n".to_owned();
    }
    let mut out = String::new();
    for row in pending {
        let mut entry = Listing::new();
        let _ = writeln!(
            out,
            "{}  {} (tier {})  answer on {}",
            row.id,
            entry.field("tool", &row.tool),
            row.tier.number(),
            channel_name(&row.channel),
        );
        let _ = writeln!(out, "  {}", entry.field("effect", &row.effect));
        out.push_str(&notes(&row.card.notes));
        let _ = writeln!(
            out,
            "  arguments {}",
            entry.json_text("arguments", &row.arguments)
        );
        let place = conversation(&mut entry, &row.session, titles(&row.session).as_deref());
        let _ = writeln!(out, "  {place} · {}", remaining(row.deadline, now, zone));
        out.push_str(&entry.flags("  "));
    }
    out
}

/// The card's notes, one a line as the terminal's card writes them (`⚠ source: ...`): why
/// the call was asked and where its values came from must be read before it is answered.
fn notes(notes: &[CardNote]) -> String {
    let mut out = String::new();
    for note in notes {
        let mark = match note.level {
            NoteLevel::Info => "·",
            NoteLevel::Warning => "⚠",
        };
        let _ = writeln!(
            out,
            "  {mark} {}: {}",
            display(&note.label),
            display(&note.text)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tau_protocol::{ApprovalId, CallCard, Tier};
    use tau_state::NewApproval;

    use super::*;

    fn row(id: &str, channel: &str, tool: &str, arguments: serde_json::Value) -> ApprovalRow {
        NewApproval {
            id: ApprovalId::parse(id).unwrap(),
            session: SessionId::parse("web-20261203-080219-fda72d").unwrap(),
            call_id: "t1".into(),
            tool: tool.into(),
            tier: Tier::Physical,
            effect: "runs a shell command".into(),
            arguments,
            channel: channel.into(),
            created_at: "2026-12-03T12:00:00Z".parse().unwrap(),
            deadline: "2026-12-03T12:05:00Z".parse().unwrap(),
            card: CallCard::default(),
        }
        .into_row()
    }

    #[test]
    fn each_question_says_its_id_what_it_runs_and_where_it_is_answered() {
        let now: Timestamp = "2026-12-03T12:01:30Z".parse().unwrap();
        let rows = [
            row(
                "ap_00000000000000000000000000000001",
                "web",
                "run_command",
                json!({"command": "echo hi >> out.txt"}),
            ),
            row(
                "ap_00000000000000000000000000000002",
                "telegram",
                "run_command\u{202e}",
                json!({"command": "echo \u{1b}[2Jgone"}),
            ),
        ];
        // The first conversation has a title (a person's, or its first prompt's); the
        // second none yet.
        let mut rows = rows;
        rows[1].session = SessionId::parse("telegram-20261203-080219-0ab1").unwrap();
        let titles = |session: &SessionId| {
            (session.as_str() == "web-20261203-080219-fda72d")
                .then(|| "Tidy the b\u{430}ckups\u{202e}".to_owned())
        };
        insta::assert_snapshot!(waiting_text(&rows, &titles, now, &TimeZone::UTC));
        let none = |_: &SessionId| None;
        let late: Timestamp = "2026-12-03T12:06:00Z".parse().unwrap();
        assert!(
            waiting_text(&rows[..1], &none, late, &TimeZone::UTC)
                .contains("deadline 2026-12-03 12:05:00 UTC passed")
        );
        let istanbul = TimeZone::get("Europe/Istanbul").unwrap();
        assert!(
            waiting_text(&rows[..1], &none, now, &istanbul)
                .contains("until 2026-12-03 15:05:00 +03 (4 min left)")
        );
        assert_eq!(
            waiting_text(&[], &none, now, &TimeZone::UTC),
            "nothing waits for you\n"
        );
    }
}
