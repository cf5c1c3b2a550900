//! A tool's result as a person reads it: [`output_blocks`] turns what the model reads into
//! [`OutputBlock`]s. A JSON object's short values become fields (`exit_code 0`); its
//! texts (a command's stdout and stderr, a file's content) become blocks whose lines are
//! kept, so a channel shows them as text, never as `{"stdout":"a\nb"}`.

use serde_json::Value;
use tau_agent::{ToolResult, ToolResultContent};
use tau_protocol::OutputBlock;

/// A value longer than this is a block of its own, not a field.
const FIELD_CHARS: usize = 80;

/// The blocks of one result, in the order a person reads them: fields first, then texts
/// (stdout before the rest). Empty texts and `null`s are left out.
pub fn output_blocks(result: &ToolResult) -> Vec<OutputBlock> {
    let mut fields = Vec::new();
    let mut texts = Vec::new();
    for part in &result.content {
        match part {
            ToolResultContent::Text(text) => match serde_json::from_str::<Value>(text) {
                Ok(Value::Object(object)) => object_blocks(&object, &mut fields, &mut texts),
                _ => push_text(&mut texts, None, text.clone()),
            },
            ToolResultContent::Json(Value::Object(object)) => {
                object_blocks(object, &mut fields, &mut texts);
            }
            ToolResultContent::Json(Value::String(text)) => {
                push_text(&mut texts, None, text.clone());
            }
            ToolResultContent::Json(other) => push_text(&mut texts, None, pretty(other)),
        }
    }
    texts.sort_by_key(|block| match block {
        OutputBlock::Text { name, .. } => name.as_deref() != Some("stdout"),
        OutputBlock::Field { .. } => true,
    });
    fields.extend(texts);
    fields
}

fn object_blocks(
    object: &serde_json::Map<String, Value>,
    fields: &mut Vec<OutputBlock>,
    texts: &mut Vec<OutputBlock>,
) {
    for (name, value) in object {
        match value {
            Value::Null => {}
            Value::String(text) if text.contains('\n') || text.chars().count() > FIELD_CHARS => {
                push_text(texts, Some(name.clone()), text.clone());
            }
            Value::String(text) if text.is_empty() => {}
            Value::String(text) => fields.push(OutputBlock::Field {
                name: name.clone(),
                value: text.clone(),
            }),
            Value::Bool(_) | Value::Number(_) => fields.push(OutputBlock::Field {
                name: name.clone(),
                value: value.to_string(),
            }),
            Value::Array(_) | Value::Object(_) => {
                push_text(texts, Some(name.clone()), pretty(value));
            }
        }
    }
}

fn push_text(texts: &mut Vec<OutputBlock>, name: Option<String>, text: String) {
    if !text.is_empty() {
        texts.push(OutputBlock::Text { name, text });
    }
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;
    use tau_agent::ToolResultStatus;

    use super::*;

    fn result(content: Vec<ToolResultContent>) -> ToolResult {
        ToolResult {
            tool_use_id: "t1".into(),
            status: ToolResultStatus::Success,
            content,
            source: None,
        }
    }

    fn field(name: &str, value: &str) -> OutputBlock {
        OutputBlock::Field {
            name: name.into(),
            value: value.into(),
        }
    }

    fn text(name: Option<&str>, text: &str) -> OutputBlock {
        OutputBlock::Text {
            name: name.map(str::to_owned),
            text: text.into(),
        }
    }

    #[test]
    fn a_commands_result_is_its_fields_then_stdout_then_stderr() {
        let command = json!({"exit_code": 1, "signal": null, "timed_out": false,
                             "stdout": "a\nb\n", "stderr": "warning: x\n"});
        assert_eq!(
            output_blocks(&result(vec![ToolResultContent::Json(command)])),
            vec![
                field("exit_code", "1"),
                field("timed_out", "false"),
                text(Some("stdout"), "a\nb\n"),
                text(Some("stderr"), "warning: x\n"),
            ]
        );
    }

    #[test]
    fn plain_text_json_text_and_other_values_each_have_a_shape() {
        let long = "x".repeat(81);
        assert_eq!(
            output_blocks(&result(vec![
                ToolResultContent::Text("12:00 in Istanbul".into()),
                ToolResultContent::Text(r#"{"city":"Istanbul","time":"12:00"}"#.into()),
                // Written in key order: with serde_json's `preserve_order` (which another
                // crate of the workspace may turn on) an object keeps the order it was
                // written in, without it the keys are sorted; both read the same here.
                ToolResultContent::Json(json!({"empty": "", "list": [1, 2], "note": long})),
                ToolResultContent::Json(json!([1])),
                ToolResultContent::Text(String::new()),
            ])),
            vec![
                field("city", "Istanbul"),
                field("time", "12:00"),
                text(None, "12:00 in Istanbul"),
                text(Some("list"), "[\n  1,\n  2\n]"),
                text(Some("note"), &long),
                text(None, "[\n  1\n]"),
            ]
        );
    }
}
