//! JSON for people: keys sorted, so the same arguments always read the same; and JSON
//! text made safe for a terminal without changing the value it parses to.

use std::fmt::Write as _;

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::is_escaped;

/// How long an argument is, as a person is told: the characters of a string, or of the
/// JSON text (keys sorted) of an array or object; `None` for a number, a boolean or null.
pub fn shown_length(value: &Value) -> Option<usize> {
    match value {
        Value::String(text) => Some(text.chars().count()),
        Value::Array(_) | Value::Object(_) => Some(sorted_json(value).chars().count()),
        Value::Null | Value::Bool(_) | Value::Number(_) => None,
    }
}

/// One argument of a call as a person is shown it: its name (as it is when it is a plain
/// identifier, else JSON-quoted, so `"command "` and `command` never look alike), its value
/// as one line of sorted JSON through [`super::display`] (a string in JSON quotes, so `"30"`
/// is not `30` and edge spaces show), and its length ([`shown_length`]).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ArgumentRow {
    pub name: String,
    pub value: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chars: Option<usize>,
}

/// A call's arguments, one row per top-level key, sorted by name; arguments that are not
/// an object are one row without a name.
pub fn argument_rows(arguments: &Value) -> Vec<ArgumentRow> {
    let row = |name: String, value: &Value| ArgumentRow {
        name,
        value: super::display(&sorted_json(value)),
        chars: shown_length(value),
    };
    match arguments {
        Value::Object(map) if !map.is_empty() => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            keys.into_iter()
                .filter_map(|key| Some(row(shown_key(key), map.get(key)?)))
                .collect()
        }
        other => vec![row(String::new(), other)],
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
        super::display(&Value::String(key.to_owned()).to_string())
    }
}

/// The SHA-256 of an argument as a person can check it elsewhere (`sha256sum`): of a
/// string's UTF-8 bytes, of the JSON text (keys sorted) of anything else; lowercase hex.
pub fn argument_sha256(value: &Value) -> String {
    let digest = match value {
        Value::String(text) => Sha256::digest(text.as_bytes()),
        other => Sha256::digest(sorted_json(other).as_bytes()),
    };
    let mut out = String::with_capacity(64);
    for byte in digest {
        let _ = write!(out, "{byte:02x}");
    }
    out
}

/// `count` with its digits in groups of three: `20,014` with `,` (en), `20.014` with `.`
/// (tr).
pub fn grouped_digits(count: usize, separator: char) -> String {
    let digits = count.to_string();
    let mut out = String::with_capacity(digits.len() * 4 / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(separator);
        }
        out.push(digit);
    }
    out
}

/// `count` and the noun that goes with it, in English: `1 question`, `0 questions`,
/// `2,014 messages`. Every count a person reads beside a noun is said with it, never as
/// `question(s)`.
pub fn counted(count: usize, one: &str, many: &str) -> String {
    let noun = if count == 1 { one } else { many };
    format!("{} {noun}", grouped_digits(count, ','))
}

/// JSON on one line with object keys sorted at every depth (the canonical JSON the
/// approval store hashes). Not yet safe to show: pass it through [`super::display`].
pub fn sorted_json(value: &Value) -> String {
    tau_protocol::canonical_json(value)
}

/// JSON text (as serde_json writes it) with DEL and every non-ASCII character that
/// [`super::display`] would escape written as a JSON `\u` escape. It parses to exactly the
/// same value, so it stays machine output, and a terminal shows it without being rewritten
/// or reordered. serde_json already escapes C0 controls; this covers the rest.
pub fn json_for_terminal(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        // Outside strings serde_json writes only ASCII, so every match is inside a string.
        if c == '\u{7f}' || (!c.is_ascii() && is_escaped(c)) {
            let mut units = [0_u16; 2];
            for unit in c.encode_utf16(&mut units) {
                let _ = write!(out, "\\u{unit:04x}");
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn every_argument_is_a_row_with_its_length() {
        let rows = argument_rows(&json!({
            "timeout_seconds": 30,
            "command": "sh setup.sh\u{202e}",
            "command ": ["a"],
        }));
        let shown: Vec<(&str, &str, Option<usize>)> = rows
            .iter()
            .map(|r| (r.name.as_str(), r.value.as_str(), r.chars))
            .collect();
        assert_eq!(
            shown,
            vec![
                ("command", r#""sh setup.sh\u{202e}""#, Some(12)),
                (r#""command ""#, r#"["a"]"#, Some(5)),
                ("timeout_seconds", "30", None),
            ]
        );
        assert_eq!(
            argument_rows(&json!({})),
            vec![ArgumentRow {
                name: String::new(),
                value: "{}".into(),
                chars: Some(2)
            }]
        );
    }

    #[test]
    fn lengths_count_characters_and_digits_are_grouped_per_language() {
        assert_eq!(shown_length(&json!("çay")), Some(3));
        assert_eq!(shown_length(&json!({"b": 1, "a": [true]})), Some(18));
        assert_eq!(shown_length(&json!(42)), None);
        assert_eq!(shown_length(&Value::Null), None);
        assert_eq!(grouped_digits(0, ','), "0");
        assert_eq!(grouped_digits(999, ','), "999");
        assert_eq!(grouped_digits(1_000, ','), "1,000");
        assert_eq!(grouped_digits(20_014, ','), "20,014");
        assert_eq!(grouped_digits(1_234_567, '.'), "1.234.567");
    }

    #[test]
    fn a_count_is_said_with_its_noun_in_the_singular_or_the_plural() {
        assert_eq!(counted(1, "question", "questions"), "1 question");
        assert_eq!(counted(0, "question", "questions"), "0 questions");
        assert_eq!(counted(2, "use", "uses"), "2 uses");
        assert_eq!(counted(2_014, "message", "messages"), "2,014 messages");
    }

    #[test]
    fn an_argument_hashes_as_sha256sum_would_hash_it() {
        // printf 'abc' | sha256sum
        assert_eq!(
            argument_sha256(&json!("abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        // printf '{"a":1,"b":2}' | sha256sum
        assert_eq!(
            argument_sha256(&json!({"b": 2, "a": 1})),
            argument_sha256(&json!(r#"{"a":1,"b":2}"#))
        );
    }
}
