//! JSON for people: keys sorted, so the same arguments always read the same; and JSON
//! text made safe for a terminal without changing the value it parses to.

use std::fmt::Write as _;

use serde_json::Value;

use super::is_escaped;

/// JSON on one line with object keys sorted at every depth. Not yet safe to show: pass it
/// through [`super::display`].
pub fn sorted_json(value: &Value) -> String {
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
