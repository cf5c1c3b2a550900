//! What a tau that may not open a conversation the hub holds says: why, and what to do.

use jiff::tz::TimeZone;
use tau_protocol::SessionId;

use super::owner::HubHold;
use crate::display::display;
use crate::shown::{channel_name, when};
use tau_state::ApprovalState;

impl HubHold {
    /// Why `tau chat` (and the rest) may not open session `id`, and what to do: one line.
    pub fn refusal(&self, id: &SessionId, zone: &TimeZone) -> String {
        match self {
            HubHold::Waiting(row) => {
                let channel = channel_name(&row.channel);
                format!(
                    "session {id} is held by tau serve: its question {} ({}) waits for an answer on {channel} until {}, and only tau serve runs the call a yes approves. Answer it on {channel} or let it expire, then open the session again",
                    row.id,
                    display(&row.tool),
                    when(row.deadline, zone),
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
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tau_protocol::{ApprovalId, CallCard, DecidedBy, Tier};
    use tau_state::NewApproval;

    use tau_state::ApprovalRow;

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
        let holds = [
            HubHold::Waiting(row("web", ApprovalState::Pending)),
            HubHold::Waiting(row("telegram", ApprovalState::Pending)),
            HubHold::Paused {
                approval_id: approved.id.clone(),
                row: Some(approved.clone()),
            },
            HubHold::Paused {
                approval_id: approved.id.clone(),
                row: None,
            },
        ];
        let lines: Vec<String> = holds.iter().map(|hold| hold.refusal(&id, &zone)).collect();
        insta::assert_snapshot!(lines.join("\n"));
    }
}
