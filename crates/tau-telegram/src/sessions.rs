//! `/sessions`, `/search` and `/rename`: a chat's conversations by title (a person's,
//! else the first prompt's), the open one marked; found by words; the open one named.
//! Titles are people's and models' text: shown through the display function.

use jiff::tz::TimeZone;
use tau_core::display;

use crate::hub::ChatConversation;
use crate::question::when;
use crate::texts::{Texts, counted};

/// The most conversations one message lists.
const LISTED: usize = 20;

/// What `/sessions` (or `/search`, when `searched`) says in a chat whose open
/// conversation is `current` (plain text: the caller escapes it).
pub(crate) fn sessions_text(
    t: &Texts,
    conversations: &[ChatConversation],
    current: &str,
    searched: bool,
    zone: &TimeZone,
) -> String {
    // A conversation nobody wrote in is not listed, unless it is the open one.
    let conversations: Vec<&ChatConversation> = conversations
        .iter()
        .filter(|c| c.message_count > 0 || c.key == current)
        .collect();
    if conversations.is_empty() {
        return if searched {
            t.search_none
        } else {
            t.sessions_none
        }
        .to_owned();
    }
    let mut out = t
        .sessions_head
        .replace("{n}", &conversations.len().to_string());
    for conversation in conversations.iter().copied().take(LISTED) {
        let mark = if conversation.key == current {
            "▶"
        } else {
            "•"
        };
        let title = conversation
            .title
            .as_deref()
            .map_or_else(|| t.untitled.to_owned(), display);
        let updated = jiff::Timestamp::from_second(conversation.updated_at)
            .map_or_else(|_| conversation.updated_at.to_string(), |at| when(at, zone));
        out.push_str(&format!(
            "\n{mark} {}",
            t.session_line
                .replace("{title}", &title)
                .replace(
                    "{messages}",
                    &counted(
                        t.messages,
                        usize::try_from(conversation.message_count).unwrap_or(usize::MAX),
                        t.thousands
                    )
                )
                .replace("{when}", &updated)
        ));
    }
    if conversations.len() > LISTED {
        out.push_str(&format!(
            "\n{}",
            t.sessions_more
                .replace("{n}", &(conversations.len() - LISTED).to_string())
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use tau_core::Language;

    use super::*;
    use crate::texts::texts;

    fn conversation(key: &str, title: Option<&str>, count: u64) -> ChatConversation {
        ChatConversation {
            key: key.into(),
            title: title.map(str::to_owned),
            message_count: count,
            updated_at: 1_795_000_000,
        }
    }

    #[test]
    fn a_chat_s_conversations_are_listed_by_title_the_open_one_marked() {
        let listed = [
            conversation("42.3", None, 0),
            conversation("42.2", None, 0),
            conversation("42.1", Some("Water the plants\u{202e}"), 4),
            conversation("42", Some("Dim the <b>kitchen</b> lights"), 12),
        ];
        for language in Language::ALL {
            let t = texts(language);
            insta::assert_snapshot!(
                format!("sessions_{}", language.code()),
                format!(
                    "{}\n---\n{}\n---\n{}",
                    sessions_text(t, &listed, "42.2", false, &TimeZone::UTC),
                    sessions_text(t, &[], "42", false, &TimeZone::UTC),
                    sessions_text(t, &[], "42", true, &TimeZone::UTC)
                )
            );
        }
    }
}
