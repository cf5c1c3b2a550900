//! Canonical JSON: one text for one value, so the arguments a person approved can be
//! compared (and hashed) with the arguments a tool would run with, and shown the same way
//! every time.

use serde_json::Value;

/// JSON on one line, no spaces, object keys sorted at every depth. Untrusted text inside
/// stays as it is: show it only through the display function.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_sorted(value, &mut out);
    out
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
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn keys_are_sorted_at_every_depth_and_nothing_else_changes() {
        assert_eq!(
            canonical_json(
                &json!({"b": {"y": 1, "x": [2, {"d": null, "c": "é"}]}, "a": "\u{202e}"})
            ),
            "{\"a\":\"\u{202e}\",\"b\":{\"x\":[2,{\"c\":\"é\",\"d\":null}],\"y\":1}}"
        );
        assert_eq!(canonical_json(&json!([3, 1.5, true])), "[3,1.5,true]");
    }
}
