//! The API's `display=true` view: the same JSON with every string passed through tau's
//! one display function, so the page (which sets it with `textContent`) shows controls,
//! bidi overrides and invisible characters as visible escapes. The page asks for this
//! view; a script gets the data exactly as stored.

use serde_json::Value;
use tau_core::{display, display_multiline, sorted_json};

/// Keys whose strings are prose and keep their line breaks.
const MULTILINE: &[&str] = &["text", "message", "result_summary", "detail"];
/// Keys whose value is a tool's arguments: shown as one line of sorted JSON.
const ARGUMENTS: &[&str] = &["arguments", "input"];

/// `value` as a person may see it.
pub(crate) fn shown(value: Value) -> Value {
    walk(value, None)
}

fn walk(value: Value, key: Option<&str>) -> Value {
    if key.is_some_and(|k| ARGUMENTS.contains(&k)) {
        // A row stores its arguments as canonical JSON text already.
        let text = match &value {
            Value::String(text) => text.clone(),
            other => sorted_json(other),
        };
        return Value::String(display(&text));
    }
    match value {
        Value::String(text) if key.is_some_and(|k| MULTILINE.contains(&k)) => {
            Value::String(display_multiline(&text))
        }
        Value::String(text) => Value::String(display(&text)),
        Value::Array(items) => Value::Array(items.into_iter().map(|v| walk(v, key)).collect()),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| {
                    let inner = walk(v, Some(&k));
                    (k, inner)
                })
                .collect(),
        ),
        other @ (Value::Null | Value::Bool(_) | Value::Number(_)) => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn every_string_is_escaped_and_arguments_become_one_sorted_line() {
        let value = json!({
            "type": "approval_requested",
            "tool": "run\u{202e}cmd",
            "arguments": {"z": 1, "command": "echo\u{200b} <b>hi</b>\nrm -rf /"},
            "content": [{"text": "line one\nline\u{1b}[31m two"}],
            "usage": {"model_calls": 2, "done": true, "none": null}
        });
        assert_eq!(
            shown(value),
            json!({
                "type": "approval_requested",
                "tool": "run\\u{202e}cmd",
                "arguments": "{\"command\":\"echo\\u{200b} <b>hi</b>\\nrm -rf /\",\"z\":1}",
                "content": [{"text": "line one\nline\\u{1b}[31m two"}],
                "usage": {"model_calls": 2, "done": true, "none": null}
            })
        );
    }

    #[test]
    fn a_card_note_s_detail_keeps_its_lines() {
        let row = json!({"card": {"headline": "run\u{202e}", "notes": [
            {"level": "warning", "label": "file", "text": "setup.sh", "detail": "echo hi\n\u{200b}ls\n"}
        ]}});
        assert_eq!(
            shown(row),
            json!({"card": {"headline": "run\\u{202e}", "notes": [
                {"level": "warning", "label": "file", "text": "setup.sh", "detail": "echo hi\n\\u{200b}ls\n"}
            ]}})
        );
    }

    #[test]
    fn stored_arguments_text_is_escaped_as_it_is() {
        let row = json!({"arguments": "{\"a\":\"\u{202e}\"}", "input": {"b": "\u{2066}x"}});
        assert_eq!(
            shown(row),
            json!({"arguments": "{\"a\":\"\\u{202e}\"}", "input": "{\"b\":\"\\u{2066}x\"}"})
        );
    }
}
