//! Arguments from the model: one `deny_unknown_fields` struct per tool, read here, so an
//! unknown or ill-typed argument is an error the model can act on.

use serde::de::DeserializeOwned;
use serde_json::Value;
use tau_agent::ToolError;

/// Reads `input` as `T`. A missing input (`null`) reads as `{}`, since models send it for
/// tools without arguments.
pub(crate) fn parse<T: DeserializeOwned>(tool: &str, input: Value) -> Result<T, ToolError> {
    let input = match input {
        Value::Null => Value::Object(serde_json::Map::new()),
        other => other,
    };
    serde_json::from_value(input)
        .map_err(|error| ToolError::new(format!("invalid arguments for {tool}: {error}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Args {
        path: String,
        limit: Option<u32>,
    }

    #[test]
    fn unknown_missing_and_ill_typed_arguments_are_named() {
        for (input, expected) in [
            (
                json!({"path": "a", "mode": 1}),
                "invalid arguments for t: unknown field `mode`, expected `path` or `limit`",
            ),
            (json!({}), "invalid arguments for t: missing field `path`"),
            (
                json!({"path": 7}),
                "invalid arguments for t: invalid type: integer `7`, expected a string",
            ),
            (
                json!({"path": "a", "limit": -1}),
                "invalid arguments for t: invalid value: integer `-1`, expected u32",
            ),
            (
                json!("a"),
                "invalid arguments for t: invalid type: string \"a\", expected struct Args",
            ),
        ] {
            assert_eq!(
                parse::<Args>("t", input).unwrap_err(),
                ToolError::new(expected)
            );
        }
        assert_eq!(
            parse::<Args>("t", json!({"path": "a"})),
            Ok(Args {
                path: "a".into(),
                limit: None
            })
        );
    }
}
