//! Tool arguments for people: pretty-printed JSON with keys sorted at every depth, every
//! key and scalar through tau-core's display function, and the length of each top-level
//! string, array or object (so `"30"` is not `30`, and a padded value shows its size).

use serde_json::Value;
use tau_core::{display, sorted_json};

use crate::texts::Texts;

/// One line of pretty-printed arguments, before wrapping.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ArgRow {
    /// Nesting depth; each level indents two cells.
    pub depth: usize,
    /// Escaped JSON text.
    pub text: String,
    /// tau's note on the row (a length), drawn apart from the JSON.
    pub note: Option<String>,
}

/// `value` as rows of pretty JSON.
pub(crate) fn pretty(value: &Value, t: &Texts) -> Vec<ArgRow> {
    let mut rows = Vec::new();
    write_value(&mut rows, 0, "", value, "", t);
    rows
}

fn write_value(
    rows: &mut Vec<ArgRow>,
    depth: usize,
    key: &str,
    value: &Value,
    comma: &str,
    t: &Texts,
) {
    // Lengths on the top-level values only: that is where a padded command hides.
    let note = (depth == 1).then(|| length(value, t)).flatten();
    match value {
        Value::Object(map) if !map.is_empty() => {
            rows.push(row(depth, format!("{key}{{"), note));
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let last = keys.len().saturating_sub(1);
            for (i, name) in keys.into_iter().enumerate() {
                let Some(inner) = map.get(name) else { continue };
                let shown_key = format!("{}: ", display(&Value::String(name.clone()).to_string()));
                write_value(
                    rows,
                    depth + 1,
                    &shown_key,
                    inner,
                    if i < last { "," } else { "" },
                    t,
                );
            }
            rows.push(row(depth, format!("}}{comma}"), None));
        }
        Value::Array(items) if !items.is_empty() => {
            rows.push(row(depth, format!("{key}["), note));
            let last = items.len().saturating_sub(1);
            for (i, item) in items.iter().enumerate() {
                write_value(
                    rows,
                    depth + 1,
                    "",
                    item,
                    if i < last { "," } else { "" },
                    t,
                );
            }
            rows.push(row(depth, format!("]{comma}"), None));
        }
        scalar => rows.push(row(
            depth,
            format!("{key}{}{comma}", display(&sorted_json(scalar))),
            note,
        )),
    }
}

fn row(depth: usize, text: String, note: Option<String>) -> ArgRow {
    ArgRow { depth, text, note }
}

/// `20,048 chars`: characters of a string, or of the JSON text of an array or object.
fn length(value: &Value, t: &Texts) -> Option<String> {
    let count = tau_core::shown_length(value)?;
    let unit = if count == 1 {
        t.character
    } else {
        t.characters
    };
    Some(format!(
        "{} {unit}",
        tau_core::grouped_digits(count, t.thousands)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::texts::texts;
    use pretty_assertions::assert_eq;
    use serde_json::json;
    use tau_core::Language;

    fn shown(value: &Value) -> Vec<String> {
        pretty(value, texts(Language::En))
            .into_iter()
            .map(|r| {
                let note = r.note.map(|n| format!("  ({n})")).unwrap_or_default();
                format!("{}{}{note}", "  ".repeat(r.depth), r.text)
            })
            .collect()
    }

    #[test]
    fn keys_are_sorted_at_every_depth_and_strings_stay_json() {
        let value = json!({"b": {"z": 1, "a": [true, null]}, "a": "30", "c": 30, "": {}});
        assert_eq!(
            shown(&value),
            [
                "{",
                "  \"\": {},  (2 chars)",
                "  \"a\": \"30\",  (2 chars)",
                "  \"b\": {  (23 chars)",
                "    \"a\": [",
                "      true,",
                "      null",
                "    ],",
                "    \"z\": 1",
                "  },",
                "  \"c\": 30",
                "}",
            ]
        );
    }

    #[test]
    fn hostile_keys_and_values_are_escaped() {
        let value = json!({"\u{202e}key": "\u{1b}[2J", "k": "a\nb"});
        assert_eq!(
            shown(&value),
            [
                "{",
                "  \"k\": \"a\\nb\",  (3 chars)",
                "  \"\\u{202e}key\": \"\\u001b[2J\"  (4 chars)",
                "}",
            ]
        );
    }

    #[test]
    fn scalars_and_empty_arguments_are_one_row() {
        assert_eq!(shown(&json!({})), ["{}"]);
        assert_eq!(shown(&json!(null)), ["null"]);
        assert_eq!(shown(&json!("x")), ["\"x\""]);
    }
}
