//! Text a message carries that someone else wrote: a forward's whole text, and the part of
//! another's message a reply quotes. Such text goes to the model as the forward's, naming
//! its author only as Telegram names them (a first name or username, a chat's title, the
//! name a hidden sender chose); never as the person's own words, and never with a guessed
//! author. Shapes tau does not know read as no author, not as an error.

use serde_json::Value;

use crate::names::{name_of, trimmed_name};

/// Someone else's text in a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PassedOn {
    pub text: String,
    /// Who wrote it, when Telegram says.
    pub from: Option<String>,
}

/// The fields that mark a message as a forward: today's `forward_origin` and the older
/// fields servers still send.
const FORWARD_FIELDS: [&str; 5] = [
    "forward_origin",
    "forward_from",
    "forward_from_chat",
    "forward_sender_name",
    "forward_date",
];

/// True when the message is a forward: its text and caption are the original's.
pub(crate) fn is_forward(message: &Value) -> bool {
    FORWARD_FIELDS
        .iter()
        .any(|field| message.get(field).is_some_and(|v| !v.is_null()))
}

/// The author of a forward, from `forward_origin`, else the older fields.
pub(crate) fn forward_author(message: &Value) -> Option<String> {
    if let Some(origin) = message.get("forward_origin").filter(|o| o.is_object()) {
        return origin_author(origin);
    }
    message
        .get("forward_from")
        .and_then(name_of)
        .or_else(|| string(message, "forward_sender_name"))
        .or_else(|| message.get("forward_from_chat").and_then(title))
}

/// The author a `MessageOrigin` names (of a forward or an external reply).
fn origin_author(origin: &Value) -> Option<String> {
    match origin.get("type").and_then(Value::as_str)? {
        "user" => origin.get("sender_user").and_then(name_of),
        "hidden_user" => string(origin, "sender_user_name"),
        "chat" => origin.get("sender_chat").and_then(title),
        "channel" => origin.get("chat").and_then(title),
        _ => None,
    }
}

/// The part of someone else's message a reply quotes (or, without a quote, the whole
/// message it answers); `None` for a reply to the person's own message or to a bot's (tau's
/// own words are already in the conversation).
pub(crate) fn quoted(message: &Value) -> Option<PassedOn> {
    let quote = message
        .get("quote")
        .and_then(|q| string_raw(q, "text"))
        .filter(|t| !t.trim().is_empty());
    if let Some(external) = message.get("external_reply").filter(|e| e.is_object()) {
        // A reply to a message of another chat: only a quote carries its text.
        return Some(PassedOn {
            text: quote?,
            from: external
                .get("origin")
                .filter(|o| o.is_object())
                .and_then(origin_author),
        });
    }
    let replied = message.get("reply_to_message").filter(|r| r.is_object())?;
    let from = if is_forward(replied) {
        forward_author(replied)
    } else {
        let author = replied.get("from");
        let bot = author
            .and_then(|a| a.get("is_bot"))
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let sender = message.get("from").and_then(|f| f.get("id"));
        let own = author
            .and_then(|a| a.get("id"))
            .is_some_and(|id| Some(id) == sender);
        if bot || own {
            return None;
        }
        author
            .and_then(name_of)
            .or_else(|| replied.get("sender_chat").and_then(title))
    };
    let text = quote.or_else(|| {
        string_raw(replied, "text")
            .or_else(|| string_raw(replied, "caption"))
            .filter(|t| !t.trim().is_empty())
    })?;
    Some(PassedOn { text, from })
}

fn title(chat: &Value) -> Option<String> {
    string(chat, "title")
}

fn string(value: &Value, key: &str) -> Option<String> {
    value
        .get(key)
        .and_then(Value::as_str)
        .and_then(trimmed_name)
}

fn string_raw(value: &Value, key: &str) -> Option<String> {
    value.get(key)?.as_str().map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;

    fn forward_of(fields: &Value) -> (bool, Option<String>) {
        let mut message = json!({"message_id": 1, "date": 1_700_000_000_000_u64,
            "from": {"id": 42, "first_name": "Ada"}, "chat": {"id": 42}, "text": "pay"});
        if let (Some(message), Some(fields)) = (message.as_object_mut(), fields.as_object()) {
            message.extend(fields.clone());
        }
        (is_forward(&message), forward_author(&message))
    }

    #[test]
    fn every_forward_shape_names_its_author_as_telegram_does() {
        for (fields, author) in [
            (
                json!({"forward_origin": {"type": "user", "date": 1,
                    "sender_user": {"id": 7, "is_bot": false, "first_name": "Mark", "username": "mk"}}}),
                Some("Mark"),
            ),
            (
                json!({"forward_origin": {"type": "user", "sender_user": {"id": 7, "username": "mk"}}}),
                Some("@mk"),
            ),
            (
                json!({"forward_origin": {"type": "hidden_user", "date": 1, "sender_user_name": "M. K."}}),
                Some("M. K."),
            ),
            (
                json!({"forward_origin": {"type": "chat", "date": 1,
                    "sender_chat": {"id": -5, "type": "group", "title": "Deals"}}}),
                Some("Deals"),
            ),
            (
                json!({"forward_origin": {"type": "channel", "date": 1, "message_id": 9,
                    "chat": {"id": -100, "type": "channel", "title": "Offers"}, "author_signature": "Bo"}}),
                Some("Offers"),
            ),
            // a kind Telegram adds later, and mistyped fields: a forward, author unknown
            (
                json!({"forward_origin": {"type": "robot", "sender_user": {"first_name": "X"}}}),
                None,
            ),
            (
                json!({"forward_origin": {"type": "user", "sender_user": "Mark"}}),
                None,
            ),
            // the fields before forward_origin
            (
                json!({"forward_from": {"id": 7, "first_name": "Mark"}, "forward_date": 1}),
                Some("Mark"),
            ),
            (
                json!({"forward_sender_name": "Hidden Mark", "forward_date": 1}),
                Some("Hidden Mark"),
            ),
            (
                json!({"forward_from_chat": {"id": -100, "title": "Offers"}, "forward_date": 1}),
                Some("Offers"),
            ),
            (json!({"forward_date": 1_700_000_000_000_u64}), None),
        ] {
            assert_eq!(
                forward_of(&fields),
                (true, author.map(str::to_owned)),
                "{fields}"
            );
        }
        assert_eq!(forward_of(&json!({})), (false, None));
        assert_eq!(forward_of(&json!({"forward_origin": null})), (false, None));
    }

    #[test]
    fn a_quote_of_someone_else_is_theirs_and_of_oneself_or_tau_is_nothing() {
        let mark = json!({"id": 7, "is_bot": false, "first_name": "Mark"});
        let reply = |replied: Value, quote: Option<&str>| {
            let mut message = json!({"message_id": 2, "from": {"id": 42, "first_name": "Ada"},
                "chat": {"id": -5}, "text": "should I?", "reply_to_message": replied});
            if let Some(quote) = quote {
                message["quote"] = json!({"text": quote, "position": 0});
            }
            quoted(&message)
        };
        let passed = |text: &str, from: Option<&str>| {
            Some(PassedOn {
                text: text.into(),
                from: from.map(str::to_owned),
            })
        };
        let his = json!({"message_id": 1, "from": mark, "chat": {"id": -5},
            "text": "pay DE89370400440532013000 to Mark, then more"});
        assert_eq!(
            reply(his.clone(), Some("pay DE89370400440532013000 to Mark")),
            passed("pay DE89370400440532013000 to Mark", Some("Mark"))
        );
        assert_eq!(
            reply(his, None),
            passed(
                "pay DE89370400440532013000 to Mark, then more",
                Some("Mark")
            )
        );
        let own = json!({"message_id": 1, "from": {"id": 42, "first_name": "Ada"}, "text": "mine"});
        assert_eq!(reply(own, Some("mine")), None);
        let tau = json!({"message_id": 1, "from": {"id": 1, "is_bot": true, "first_name": "tau"},
            "text": "done"});
        assert_eq!(reply(tau, Some("done")), None);
        // the person's own earlier forward: its author's
        let forwarded = json!({"message_id": 1, "from": {"id": 42, "first_name": "Ada"},
            "forward_sender_name": "Hidden Mark", "text": "pay"});
        assert_eq!(reply(forwarded, None), passed("pay", Some("Hidden Mark")));
        // a channel's post, no text at all, a mistyped reply
        let post = json!({"message_id": 1, "sender_chat": {"id": -100, "title": "Offers"},
            "text": "sale"});
        assert_eq!(reply(post, None), passed("sale", Some("Offers")));
        let photo = json!({"message_id": 1, "from": mark});
        assert_eq!(reply(photo, None), None);
        assert_eq!(reply(json!("not a message"), Some("x")), None);
        // a reply to a message of another chat: the quote is the only text
        let external = json!({"from": {"id": 42}, "text": "true?",
            "external_reply": {"origin": {"type": "channel", "chat": {"title": "Offers"}, "message_id": 3}},
            "quote": {"text": "50% off"}});
        assert_eq!(quoted(&external), passed("50% off", Some("Offers")));
        let unquoted = json!({"from": {"id": 42}, "text": "true?",
            "external_reply": {"origin": {"type": "channel"}}});
        assert_eq!(quoted(&unquoted), None);
        assert_eq!(quoted(&json!({"from": {"id": 42}, "text": "hi"})), None);
    }
}
