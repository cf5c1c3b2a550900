//! Checks a routine's fixed arguments against its tool's input schema when the routine is
//! loaded, so a routine that could never run is a config error, not a failure at 7 am.
//!
//! Covers the JSON Schema keywords tau's tools and most MCP servers use: `type`,
//! `properties`, `required`, `additionalProperties`, `enum`, `const`, `items`, `minimum`,
//! `maximum`, `minLength`, `maxLength`, `minItems`, `maxItems`. Other keywords are not
//! checked here; the tool still checks its input when it runs.

use serde_json::{Map, Value};

/// Where in the arguments a value broke the schema, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SchemaError {
    /// `arguments` or `arguments.topic`, `arguments.items[2]`.
    pub path: String,
    pub message: String,
}

fn error(path: &str, message: impl Into<String>) -> SchemaError {
    SchemaError {
        path: path.to_owned(),
        message: message.into(),
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn has_type(value: &Value, wanted: &str) -> bool {
    let actual = type_name(value);
    actual == wanted
        || (wanted == "number" && actual == "integer")
        || (wanted == "integer" && value.as_f64().is_some_and(|f| f.fract() == 0.0))
}

/// Checks `value` (the arguments) against `schema`, the tool's input schema.
pub(crate) fn check(schema: &Value, value: &Value) -> Result<(), SchemaError> {
    check_at(schema, value, "arguments")
}

fn check_at(schema: &Value, value: &Value, path: &str) -> Result<(), SchemaError> {
    let Value::Object(schema) = schema else {
        // `true` or a missing schema accepts anything; `false` accepts nothing.
        return if schema == &Value::Bool(false) {
            Err(error(path, "the tool's schema accepts no value here"))
        } else {
            Ok(())
        };
    };
    check_type(schema, value, path)?;
    if let Some(Value::Array(allowed)) = schema.get("enum")
        && !allowed.contains(value)
    {
        return Err(error(
            path,
            format!(
                "must be one of {}, got {value}",
                Value::Array(allowed.clone())
            ),
        ));
    }
    if let Some(constant) = schema.get("const")
        && constant != value
    {
        return Err(error(path, format!("must be {constant}, got {value}")));
    }
    match value {
        Value::Object(map) => check_object(schema, map, path),
        Value::Array(items) => check_array(schema, items, path),
        Value::String(text) => {
            let length = text.chars().count() as u64;
            bounds(schema, "minLength", "maxLength", length, path, "characters")
        }
        Value::Number(number) => {
            let n = number.as_f64().unwrap_or(f64::NAN);
            if let Some(min) = schema.get("minimum").and_then(Value::as_f64)
                && n < min
            {
                return Err(error(path, format!("must be at least {min}, got {number}")));
            }
            if let Some(max) = schema.get("maximum").and_then(Value::as_f64)
                && n > max
            {
                return Err(error(path, format!("must be at most {max}, got {number}")));
            }
            Ok(())
        }
        Value::Null | Value::Bool(_) => Ok(()),
    }
}

fn check_type(schema: &Map<String, Value>, value: &Value, path: &str) -> Result<(), SchemaError> {
    let wanted: Vec<&str> = match schema.get("type") {
        Some(Value::String(one)) => vec![one.as_str()],
        Some(Value::Array(many)) => many.iter().filter_map(Value::as_str).collect(),
        _ => return Ok(()),
    };
    if wanted.is_empty() || wanted.iter().any(|w| has_type(value, w)) {
        Ok(())
    } else {
        Err(error(
            path,
            format!("must be {}, got {}", wanted.join(" or "), type_name(value)),
        ))
    }
}

fn bounds(
    schema: &Map<String, Value>,
    min_key: &str,
    max_key: &str,
    size: u64,
    path: &str,
    unit: &str,
) -> Result<(), SchemaError> {
    if let Some(min) = schema.get(min_key).and_then(Value::as_u64)
        && size < min
    {
        return Err(error(
            path,
            format!("must have at least {min} {unit}, has {size}"),
        ));
    }
    if let Some(max) = schema.get(max_key).and_then(Value::as_u64)
        && size > max
    {
        return Err(error(
            path,
            format!("must have at most {max} {unit}, has {size}"),
        ));
    }
    Ok(())
}

fn check_object(
    schema: &Map<String, Value>,
    map: &Map<String, Value>,
    path: &str,
) -> Result<(), SchemaError> {
    let properties = schema.get("properties").and_then(Value::as_object);
    if let Some(Value::Array(required)) = schema.get("required") {
        for key in required.iter().filter_map(Value::as_str) {
            if !map.contains_key(key) {
                return Err(error(
                    &format!("{path}.{key}"),
                    "is required by the tool and missing",
                ));
            }
        }
    }
    let mut keys: Vec<&String> = map.keys().collect();
    keys.sort();
    for key in keys {
        let inner = &map[key.as_str()];
        let at = format!("{path}.{key}");
        match properties.and_then(|p| p.get(key.as_str())) {
            Some(property) => check_at(property, inner, &at)?,
            None => match schema.get("additionalProperties") {
                Some(Value::Bool(false)) => {
                    let mut known: Vec<&String> =
                        properties.map(|p| p.keys().collect()).unwrap_or_default();
                    known.sort();
                    let known: Vec<&str> = known.iter().map(|k| k.as_str()).collect();
                    return Err(error(
                        &at,
                        format!(
                            "the tool takes no such argument (it takes {})",
                            if known.is_empty() {
                                "none".to_owned()
                            } else {
                                known.join(", ")
                            }
                        ),
                    ));
                }
                Some(extra @ Value::Object(_)) => check_at(extra, inner, &at)?,
                _ => {}
            },
        }
    }
    bounds(
        schema,
        "minProperties",
        "maxProperties",
        map.len() as u64,
        path,
        "keys",
    )
}

fn check_array(
    schema: &Map<String, Value>,
    items: &[Value],
    path: &str,
) -> Result<(), SchemaError> {
    if let Some(item_schema) = schema.get("items") {
        for (index, item) in items.iter().enumerate() {
            check_at(item_schema, item, &format!("{path}[{index}]"))?;
        }
    }
    bounds(
        schema,
        "minItems",
        "maxItems",
        items.len() as u64,
        path,
        "items",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn mqtt_schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "topic": {"type": "string", "minLength": 1},
                "payload": {"type": "string"},
                "retain": {"type": "boolean"},
                "qos": {"type": "integer", "enum": [0, 1], "minimum": 0},
                "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
            },
            "required": ["topic", "payload"],
            "additionalProperties": false,
        })
    }

    #[test]
    fn arguments_that_fit_pass() {
        for ok in [
            json!({"topic": "a", "payload": "on"}),
            json!({"topic": "a", "payload": "on", "retain": true, "qos": 1, "tags": ["x"]}),
        ] {
            assert_eq!(check(&mqtt_schema(), &ok), Ok(()), "{ok}");
        }
        assert_eq!(check(&json!(true), &json!({"x": 1})), Ok(()));
        assert_eq!(check(&json!({}), &json!({"x": 1})), Ok(()));
    }

    #[test]
    fn each_broken_rule_names_where() {
        let cases = [
            (
                json!({"topic": "a"}),
                "arguments.payload",
                "is required by the tool and missing",
            ),
            (
                json!({"topic": "a", "payload": 1}),
                "arguments.payload",
                "must be string, got integer",
            ),
            (
                json!({"topic": "a", "payload": "on", "qos": 2}),
                "arguments.qos",
                "must be one of [0,1], got 2",
            ),
            (
                json!({"topic": "a", "payload": "on", "retain": "yes"}),
                "arguments.retain",
                "must be boolean, got string",
            ),
            (
                json!({"topic": "", "payload": "on"}),
                "arguments.topic",
                "must have at least 1 characters, has 0",
            ),
            (
                json!({"topic": "a", "payload": "on", "tags": ["x", 1]}),
                "arguments.tags[1]",
                "must be string, got integer",
            ),
            (
                json!({"topic": "a", "payload": "on", "tags": ["x", "y", "z"]}),
                "arguments.tags",
                "must have at most 2 items, has 3",
            ),
            (
                json!({"topic": "a", "payload": "on", "colour": "red"}),
                "arguments.colour",
                "the tool takes no such argument (it takes payload, qos, retain, tags, topic)",
            ),
            (json!("on"), "arguments", "must be object, got string"),
        ];
        for (value, path, message) in cases {
            assert_eq!(
                check(&mqtt_schema(), &value),
                Err(SchemaError {
                    path: path.into(),
                    message: message.into()
                }),
                "{value}"
            );
        }
        assert_eq!(
            check(&json!({"properties": {"x": false}}), &json!({"x": 1})),
            Err(error(
                "arguments.x",
                "the tool's schema accepts no value here"
            ))
        );
    }
}
