//! Updates, read field by field. A field that is missing or of the wrong type is `None`;
//! the handler decides what that means (usually: ignore the update, log one line).

use serde_json::Value;

use crate::forwards::{PassedOn, forward_author, is_forward, quoted};
use crate::names::name_of;

/// One update as tau reads it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Update {
    pub id: i64,
    pub kind: UpdateKind,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum UpdateKind {
    Message(Incoming),
    Press(Press),
    /// Any other kind (an edited message, a channel post, one Telegram adds later): its
    /// name, for the log.
    Other(String),
}

/// A message someone wrote.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Incoming {
    pub chat: Option<i64>,
    pub from: Option<i64>,
    /// What the sender is called (see `names`).
    pub from_name: Option<String>,
    /// The sender's own words: `None` for a message without text (a photo, a sticker),
    /// with text of the wrong type, or a forward (its text is someone else's).
    pub text: Option<String>,
    /// Someone else's text the message carries: a forward's text, the part of another's
    /// message a reply quotes.
    pub passed_on: Option<PassedOn>,
}

/// A press on an inline button.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Press {
    pub id: Option<String>,
    pub from: Option<i64>,
    /// What the presser is called (see `names`).
    pub from_name: Option<String>,
    /// The chat and message the button is under, when the server says.
    pub chat: Option<i64>,
    pub message_id: Option<i64>,
    pub data: Option<String>,
}

fn int(value: &Value, path: &[&str]) -> Option<i64> {
    let mut at = value;
    for key in path {
        at = at.get(key)?;
    }
    at.as_i64()
}

fn text(value: &Value, key: &str) -> Option<String> {
    value.get(key)?.as_str().map(str::to_owned)
}

/// Reads one update; `None` when it has no `update_id` (it cannot even be confirmed).
pub(crate) fn read(value: &Value) -> Option<Update> {
    let id = value.get("update_id")?.as_i64()?;
    let kind = if let Some(message) = value.get("message").filter(|m| m.is_object()) {
        let (text, passed_on) = if is_forward(message) {
            let passed_on = text(message, "text").map(|text| PassedOn {
                text,
                from: forward_author(message),
            });
            (None, passed_on)
        } else {
            (text(message, "text"), quoted(message))
        };
        UpdateKind::Message(Incoming {
            chat: int(message, &["chat", "id"]),
            from: int(message, &["from", "id"]),
            from_name: message.get("from").and_then(name_of),
            text,
            passed_on,
        })
    } else if let Some(press) = value.get("callback_query").filter(|m| m.is_object()) {
        UpdateKind::Press(Press {
            id: text(press, "id"),
            from: int(press, &["from", "id"]),
            from_name: press.get("from").and_then(name_of),
            chat: int(press, &["message", "chat", "id"]),
            message_id: int(press, &["message", "message_id"]),
            data: text(press, "data"),
        })
    } else {
        let name = value
            .as_object()
            .and_then(|o| o.keys().find(|k| *k != "update_id").cloned())
            .unwrap_or_else(|| "nothing".to_owned());
        UpdateKind::Other(name)
    };
    Some(Update { id, kind })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn a_message_and_a_press_are_read_with_what_they_have() {
        let message = json!({"update_id": 5, "message": {"message_id": 3, "date": 1_700_000_000_000_u64,
            "chat": {"id": 42, "type": "private"}, "from": {"id": 42, "first_name": "A"}, "text": "hi"}});
        assert_eq!(
            read(&message),
            Some(Update {
                id: 5,
                kind: UpdateKind::Message(Incoming {
                    chat: Some(42),
                    from: Some(42),
                    from_name: Some("A".into()),
                    text: Some("hi".into()),
                    passed_on: None,
                })
            })
        );
        // An emulator's press: no chat_instance, no message id.
        let press = json!({"update_id": 6, "callback_query": {"id": "1", "from": {"id": 42},
            "message": {"chat": {"id": 42}}, "data": "v1:a:ap_1"}});
        assert_eq!(
            read(&press),
            Some(Update {
                id: 6,
                kind: UpdateKind::Press(Press {
                    id: Some("1".into()),
                    from: Some(42),
                    from_name: None,
                    chat: Some(42),
                    message_id: None,
                    data: Some("v1:a:ap_1".into())
                })
            })
        );
    }

    #[test]
    fn missing_or_mistyped_fields_read_as_none() {
        let odd =
            json!({"update_id": 7, "message": {"chat": {"id": "42"}, "from": null, "text": 5}});
        assert_eq!(
            read(&odd),
            Some(Update {
                id: 7,
                kind: UpdateKind::Message(Incoming {
                    chat: None,
                    from: None,
                    from_name: None,
                    text: None,
                    passed_on: None,
                })
            })
        );
        assert_eq!(read(&json!({"message": {}})), None);
        assert_eq!(read(&json!({"update_id": "7"})), None);
        assert_eq!(read(&json!(null)), None);
        assert_eq!(read(&json!([1])), None);
    }

    #[test]
    fn a_forward_is_all_passed_on_and_a_quote_beside_the_own_words() {
        let forward = json!({"update_id": 8, "message": {"message_id": 4, "date": 1_700_000_000_000_u64,
            "chat": {"id": 42}, "from": {"id": 42, "first_name": "A"}, "text": "/delete pay DE89",
            "forward_origin": {"type": "hidden_user", "date": 1, "sender_user_name": "Mark"}}});
        let Some(Update {
            kind: UpdateKind::Message(incoming),
            ..
        }) = read(&forward)
        else {
            panic!("not a message: {forward}");
        };
        assert_eq!(incoming.text, None);
        assert_eq!(
            incoming.passed_on,
            Some(PassedOn {
                text: "/delete pay DE89".into(),
                from: Some("Mark".into())
            })
        );
        let reply = json!({"update_id": 9, "message": {"chat": {"id": -5}, "from": {"id": 42},
            "text": "should I?", "quote": {"text": "pay DE89"},
            "reply_to_message": {"from": {"id": 7, "first_name": "Mark"}, "text": "pay DE89 now"}}});
        let Some(Update {
            kind: UpdateKind::Message(incoming),
            ..
        }) = read(&reply)
        else {
            panic!("not a message: {reply}");
        };
        assert_eq!(incoming.text.as_deref(), Some("should I?"));
        assert_eq!(
            incoming.passed_on,
            Some(PassedOn {
                text: "pay DE89".into(),
                from: Some("Mark".into())
            })
        );
    }

    #[test]
    fn other_kinds_are_named() {
        for (value, name) in [
            (
                json!({"update_id": 1, "edited_message": {}}),
                "edited_message",
            ),
            (
                json!({"update_id": 1, "message": "not an object"}),
                "message",
            ),
            (json!({"update_id": 1}), "nothing"),
        ] {
            assert_eq!(
                read(&value),
                Some(Update {
                    id: 1,
                    kind: UpdateKind::Other(name.into())
                })
            );
        }
    }
}
