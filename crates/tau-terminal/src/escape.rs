//! Makes text from a model safe to show in a terminal prompt.

use std::fmt::Write;

use serde_json::Value;
use unicode_general_category::{GeneralCategory, get_general_category};

/// Escapes every control (C0, C1), format (bidi overrides, zero-width characters) and
/// line or paragraph separator character as `\u{202e}`, so text from a model can neither
/// rewrite the terminal (ESC, CSI) nor hide or reorder what the prompt says.
pub fn escape_for_terminal(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if is_unsafe(c) {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    out
}

fn is_unsafe(c: char) -> bool {
    matches!(
        get_general_category(c),
        GeneralCategory::Control
            | GeneralCategory::Format
            | GeneralCategory::LineSeparator
            | GeneralCategory::ParagraphSeparator
            | GeneralCategory::Unassigned
            | GeneralCategory::PrivateUse
            | GeneralCategory::Surrogate
    )
}

/// JSON with object keys sorted at every depth, on one line, escaped for the terminal.
pub fn sorted_json(value: &Value) -> String {
    let mut out = String::new();
    write_sorted(value, &mut out);
    escape_for_terminal(&out)
}

fn write_sorted(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                if let Some(inner) = map.get(key) {
                    write_sorted(inner, out);
                }
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_sorted(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn control_format_and_separator_characters_are_escaped() {
        let cases = [
            ("plain text, üñí, 中文", "plain text, üñí, 中文"),
            ("\u{1b}[2J\u{1b}[Hclear", "\\u{1b}[2J\\u{1b}[Hclear"),
            ("csi\u{9b}31m", "csi\\u{9b}31m"),
            ("evil\u{202e}txt.exe", "evil\\u{202e}txt.exe"),
            (
                "zero\u{200b}width\u{200d}joiner\u{feff}",
                "zero\\u{200b}width\\u{200d}joiner\\u{feff}",
            ),
            ("line\nbreak\r\ttab", "line\\u{a}break\\u{d}\\u{9}tab"),
            ("sep\u{2028}para\u{2029}", "sep\\u{2028}para\\u{2029}"),
        ];
        for (input, expected) in cases {
            assert_eq!(escape_for_terminal(input), expected, "{input:?}");
        }
    }

    #[test]
    fn json_is_sorted_at_every_depth_and_escaped() {
        let value = json!({"z": 1, "a": {"y": [{"d": 1, "c": 2}], "b": "\u{202e}x"}});
        assert_eq!(
            sorted_json(&value),
            r#"{"a":{"b":"\u{202e}x","y":[{"c":2,"d":1}]},"z":1}"#
        );
        // serde_json already writes C0 controls in strings as \u001b; those stay as they are.
        assert_eq!(
            sorted_json(&json!({"k": "\u{1b}[31m"})),
            r#"{"k":"\u001b[31m"}"#
        );
    }
}
