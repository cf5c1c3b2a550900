//! `/pending`: every question that waits for the person, whichever channel asked it, and
//! where each is answered. Only its own channel answers a question, so this lists and
//! offers no button.

use crate::hub::{Question, chat_of};
use crate::texts::Texts;

/// The name a person knows a channel by.
fn channel_name(channel: &str) -> &str {
    match channel {
        "web" => "TauBar",
        "telegram" => "Telegram",
        other => other,
    }
}

/// What `/pending` says in `chat` (plain text: the caller escapes it for Telegram).
pub(crate) fn pending_text(t: &Texts, chat: i64, questions: &[Question]) -> String {
    if questions.is_empty() {
        return t.nothing_waits.to_owned();
    }
    let mut out = t
        .questions_wait
        .replace("{n}", &questions.len().to_string());
    for question in questions {
        let row = &question.row;
        let place = if row.channel == crate::CHANNEL {
            match question.conversation.as_deref().and_then(chat_of) {
                Some(asked_in) if asked_in == chat => t.answer_here.to_owned(),
                _ => t.answer_other_chat.to_owned(),
            }
        } else {
            t.answer_on.replace("{channel}", channel_name(&row.channel))
        };
        out.push_str(&format!(
            "\n• {} ({} {}): {place}",
            row.tool,
            t.tier,
            row.tier.number()
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tau_core::Language;
    use tau_protocol::{ApprovalId, CallCard, SessionId, Tier};
    use tau_state::ApprovalRow;

    use super::*;
    use crate::texts::texts;

    fn question(n: u8, channel: &str, conversation: Option<&str>) -> Question {
        let row: ApprovalRow = tau_state::NewApproval {
            id: ApprovalId::parse(&format!("ap_{n:032}")).unwrap(),
            session: SessionId::parse("s1").unwrap(),
            call_id: "t1".into(),
            tool: "run_command".into(),
            tier: Tier::Physical,
            effect: "runs a shell command".into(),
            arguments: json!({"command": "ls"}),
            channel: channel.into(),
            created_at: "2026-12-03T12:00:00Z".parse().unwrap(),
            deadline: "2026-12-03T12:30:00Z".parse().unwrap(),
            card: CallCard::default(),
        }
        .into_row();
        Question {
            row,
            conversation: conversation.map(str::to_owned),
        }
    }

    #[test]
    fn each_question_says_where_it_is_answered() {
        let questions = [
            question(1, "telegram", Some("42.1")),
            question(2, "telegram", Some("77")),
            question(3, "web", None),
        ];
        for language in [Language::En, Language::Tr] {
            let t = texts(language);
            insta::assert_snapshot!(
                format!("pending_{language:?}").to_lowercase(),
                format!(
                    "{}\n---\n{}",
                    pending_text(t, 42, &questions),
                    pending_text(t, 42, &[])
                )
            );
        }
    }
}
