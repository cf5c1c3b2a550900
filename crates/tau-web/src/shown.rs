//! The API's `display=true` view: the same JSON with every string passed through tau's
//! one display function, so the page (which sets it with `textContent`) shows controls,
//! bidi overrides and invisible characters as visible escapes. The page asks for this
//! view; a script gets the data exactly as stored. Beside a call's `arguments` it adds
//! `argument_rows`: every argument on its own, with its length (tau-core's rows, as the
//! terminal, the TUI and Telegram list them), which is what the page's card shows.

use serde_json::Value;
use tau_core::display::argument_rows;
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
        Value::Object(map) => {
            let rows = map.get("arguments").and_then(rows_of);
            let mut shown: serde_json::Map<String, Value> = map
                .into_iter()
                .map(|(k, v)| {
                    let inner = walk(v, Some(&k));
                    (k, inner)
                })
                .collect();
            if let Some(rows) = rows {
                shown.insert("argument_rows".to_owned(), rows);
            }
            Value::Object(shown)
        }
        other @ (Value::Null | Value::Bool(_) | Value::Number(_)) => other,
    }
}

/// The rows of a call's arguments (an object, or a row's canonical JSON text).
fn rows_of(arguments: &Value) -> Option<Value> {
    let parsed;
    let arguments = match arguments {
        Value::String(text) => {
            parsed = serde_json::from_str::<Value>(text).ok()?;
            &parsed
        }
        other => other,
    };
    serde_json::to_value(argument_rows(arguments)).ok()
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
                "argument_rows": [
                    {"name": "command", "value": "\"echo\\u{200b} <b>hi</b>\\nrm -rf /\"", "chars": 24},
                    {"name": "z", "value": "1"}
                ],
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
            json!({
                "arguments": "{\"a\":\"\\u{202e}\"}",
                "argument_rows": [{"name": "a", "value": "\"\\u{202e}\"", "chars": 1}],
                "input": "{\"b\":\"\\u{2066}x\"}"
            })
        );
    }
}
