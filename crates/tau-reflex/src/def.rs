//! A routine as written: one `[[routines]]` table of `tau.toml`, or the arguments of
//! `create_routine`. Both are read by the same parser, key by key, so every mistake names
//! its key; `validate.rs` turns a definition into a routine that can run.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use tau_core::ConfigError;
use tau_state::canonical_arguments;

/// One routine exactly as written. Only the keys that were set are kept, so its canonical
/// JSON (and its content hash) changes only when the routine does.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RoutineDef {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub every: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cron: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mqtt: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook: Option<WebhookDef>,
    /// The exact payload an MQTT message or a webhook body must carry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// `web` or `telegram`: where a call the exemption does not cover is asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ask: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// The person of `[[people]]` whose routine it is: its questions are theirs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
}

/// `webhook = { secret_env = "NAME" }`: the variable holding the bearer secret.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebhookDef {
    pub secret_env: String,
}

/// The keys a routine may have, in the order error messages list them.
pub const ROUTINE_KEYS: [&str; 13] = [
    "name",
    "every",
    "cron",
    "at",
    "mqtt",
    "webhook",
    "payload",
    "tool",
    "arguments",
    "prompt",
    "ask",
    "enabled",
    "owner",
];

/// A key of one routine that could not be read: `key` is relative to the routine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    pub key: String,
    pub message: String,
}

impl FieldError {
    pub(crate) fn new(key: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            key: key.into(),
            message: message.into(),
        }
    }

    /// The error as a config error naming the routine: `routines.NAME.KEY: ...`.
    pub fn in_routine(self, routine: &str) -> ConfigError {
        ConfigError::new(format!("routines.{routine}.{}", self.key), self.message)
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "a table",
    }
}

fn string(key: &str, value: Value) -> Result<String, FieldError> {
    match value {
        Value::String(text) => Ok(text),
        other => Err(FieldError::new(
            key,
            format!("must be a string, got {}", kind(&other)),
        )),
    }
}

impl RoutineDef {
    /// Reads a routine from a JSON object (`create_routine`'s arguments, a stored row, or
    /// a `tau.toml` table converted by [`toml_to_json`]).
    pub fn from_json(value: Value) -> Result<Self, FieldError> {
        let Value::Object(map) = value else {
            return Err(FieldError::new(
                "",
                format!("a routine must be a table, got {}", kind(&value)),
            ));
        };
        let mut def = Self::default();
        let mut named = false;
        for (key, value) in map {
            match key.as_str() {
                "name" => {
                    def.name = string("name", value)?;
                    named = true;
                }
                "every" => def.every = Some(string("every", value)?),
                "cron" => def.cron = Some(string("cron", value)?),
                "at" => def.at = Some(string("at", value)?),
                "mqtt" => def.mqtt = Some(string("mqtt", value)?),
                "payload" => def.payload = Some(string("payload", value)?),
                "tool" => def.tool = Some(string("tool", value)?),
                "prompt" => def.prompt = Some(string("prompt", value)?),
                "ask" => def.ask = Some(string("ask", value)?),
                "owner" => def.owner = Some(string("owner", value)?),
                "enabled" => match value {
                    Value::Bool(on) => def.enabled = Some(on),
                    other => {
                        return Err(FieldError::new(
                            "enabled",
                            format!("must be true or false, got {}", kind(&other)),
                        ));
                    }
                },
                "arguments" => match value {
                    Value::Object(arguments) => def.arguments = Some(arguments),
                    other => {
                        return Err(FieldError::new(
                            "arguments",
                            format!(
                                "must be a table of the tool's arguments, got {}",
                                kind(&other)
                            ),
                        ));
                    }
                },
                "webhook" => def.webhook = Some(webhook(value)?),
                other => {
                    return Err(FieldError::new(
                        other,
                        format!("unknown key; a routine has {}", ROUTINE_KEYS.join(", ")),
                    ));
                }
            }
        }
        if !named {
            return Err(FieldError::new(
                "name",
                "is missing; every routine has a name",
            ));
        }
        Ok(def)
    }

    /// The canonical JSON of what the routine does (everything but `enabled`) and its
    /// SHA-256: the content an exemption is tied to. Switching a routine off and on again
    /// keeps it; changing anything else voids it.
    pub fn content(&self) -> (String, String) {
        let mut content = self.clone();
        content.enabled = None;
        canonical_arguments(&serde_json::to_value(&content).unwrap_or(Value::Null))
    }

    pub fn content_hash(&self) -> String {
        self.content().1
    }

    /// The definition as a JSON object, keys sorted (for storing and showing).
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

fn webhook(value: Value) -> Result<WebhookDef, FieldError> {
    let Value::Object(map) = value else {
        return Err(FieldError::new(
            "webhook",
            format!(
                "must be a table like {{ secret_env = \"NAME\" }}, got {}",
                kind(&value)
            ),
        ));
    };
    let mut secret_env = None;
    for (key, value) in map {
        match key.as_str() {
            "secret_env" => secret_env = Some(string("webhook.secret_env", value)?),
            other => {
                return Err(FieldError::new(
                    format!("webhook.{other}"),
                    "unknown key; a webhook has secret_env",
                ));
            }
        }
    }
    let secret_env = secret_env.ok_or_else(|| {
        FieldError::new(
            "webhook.secret_env",
            "is missing: name the environment variable that holds the webhook's secret",
        )
    })?;
    Ok(WebhookDef { secret_env })
}

/// A TOML value as JSON; a TOML date-time becomes its text (`at = 2026-12-24T18:00:00`
/// reads like `at = "2026-12-24T18:00:00"`).
pub fn toml_to_json(value: toml::Value) -> Value {
    match value {
        toml::Value::String(text) => Value::String(text),
        toml::Value::Integer(number) => Value::from(number),
        toml::Value::Float(number) => Value::from(number),
        toml::Value::Boolean(flag) => Value::Bool(flag),
        toml::Value::Datetime(datetime) => Value::String(datetime.to_string()),
        toml::Value::Array(items) => Value::Array(items.into_iter().map(toml_to_json).collect()),
        toml::Value::Table(table) => Value::Object(
            table
                .into_iter()
                .map(|(key, value)| (key, toml_to_json(value)))
                .collect(),
        ),
    }
}

/// Reads the `routines` array of `tau.toml` (each a table), naming the routine in every
/// error: by its name, or by its place when it has none.
pub fn defs_from_toml(items: Vec<toml::Value>) -> Result<Vec<RoutineDef>, ConfigError> {
    let mut defs: Vec<RoutineDef> = Vec::new();
    for (index, item) in items.into_iter().enumerate() {
        let json = toml_to_json(item);
        let label = json
            .get("name")
            .and_then(Value::as_str)
            .filter(|name| crate::validate::name_problem(name).is_none())
            .map_or_else(|| format!("#{}", index + 1), str::to_owned);
        let def = RoutineDef::from_json(json).map_err(|e| e.in_routine(&label))?;
        if defs.iter().any(|d| d.name == def.name) {
            return Err(
                FieldError::new("name", "is used by another routine; names are unique")
                    .in_routine(&label),
            );
        }
        defs.push(def);
    }
    Ok(defs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn from_toml(text: &str) -> Result<Vec<RoutineDef>, ConfigError> {
        #[derive(Deserialize)]
        struct File {
            routines: Vec<toml::Value>,
        }
        let file: File = toml::from_str(text).unwrap();
        defs_from_toml(file.routines)
    }

    #[test]
    fn a_routine_reads_from_toml_with_inline_arguments() {
        let defs = from_toml(
            r#"
            [[routines]]
            name = "porch-light"
            cron = "0 19 * * *"
            tool = "mqtt_publish"
            arguments = { topic = "home/porch/light/set", payload = "on" }
            ask = "telegram"

            [[routines]]
            name = "advent"
            at = 2026-12-24T18:00:00
            prompt = "Say merry Christmas."
            enabled = false
            "#,
        )
        .unwrap();
        assert_eq!(
            defs[0].to_json(),
            json!({"name": "porch-light", "cron": "0 19 * * *", "tool": "mqtt_publish",
                   "arguments": {"topic": "home/porch/light/set", "payload": "on"}, "ask": "telegram"})
        );
        assert_eq!(defs[1].at.as_deref(), Some("2026-12-24T18:00:00"));
        assert_eq!(defs[1].enabled, Some(false));
    }

    #[test]
    fn every_mistake_names_the_routine_and_the_key() {
        let cases = [
            (
                "[[routines]]\nname = \"a\"\ncronn = \"* * * * *\"\n",
                "routines.a.cronn: unknown key; a routine has name, every, cron, at, mqtt, webhook, payload, tool, arguments, prompt, ask, enabled, owner",
            ),
            (
                "[[routines]]\nname = \"a\"\ncron = 5\n",
                "routines.a.cron: must be a string, got a number",
            ),
            (
                "[[routines]]\ncron = \"* * * * *\"\n",
                "routines.#1.name: is missing; every routine has a name",
            ),
            (
                "[[routines]]\nname = \"a\"\narguments = \"on\"\n",
                "routines.a.arguments: must be a table of the tool's arguments, got a string",
            ),
            (
                "[[routines]]\nname = \"a\"\nwebhook = { secret = \"x\" }\n",
                "routines.a.webhook.secret: unknown key; a webhook has secret_env",
            ),
            (
                "[[routines]]\nname = \"a\"\nwebhook = {}\n",
                "routines.a.webhook.secret_env: is missing: name the environment variable that holds the webhook's secret",
            ),
            (
                "[[routines]]\nname = \"a\"\nowner = 7\n",
                "routines.a.owner: must be a string, got a number",
            ),
            (
                "[[routines]]\nname = \"a\"\nenabled = \"yes\"\n",
                "routines.a.enabled: must be true or false, got a string",
            ),
            (
                "[[routines]]\nname = \"a\"\n[[routines]]\nname = \"a\"\n",
                "routines.a.name: is used by another routine; names are unique",
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(from_toml(text).unwrap_err().to_string(), expected, "{text}");
        }
    }

    #[test]
    fn the_content_hash_ignores_enabled_and_key_order_but_nothing_else() {
        let a = RoutineDef::from_json(json!({"name": "a", "every": "10m", "tool": "t",
            "arguments": {"x": 1, "y": 2}}))
        .unwrap();
        let reordered = RoutineDef::from_json(json!({"arguments": {"y": 2, "x": 1},
            "tool": "t", "every": "10m", "name": "a", "enabled": false}))
        .unwrap();
        assert_eq!(a.content_hash(), reordered.content_hash());
        let edited = RoutineDef::from_json(json!({"name": "a", "every": "10m", "tool": "t",
            "arguments": {"x": 1, "y": 3}}))
        .unwrap();
        assert_ne!(a.content_hash(), edited.content_hash());
        assert_eq!(
            a.content().0,
            r#"{"arguments":{"x":1,"y":2},"every":"10m","name":"a","tool":"t"}"#
        );
    }

    #[test]
    fn an_owner_changes_the_content_hash_only_when_it_is_set() {
        let unowned = json!({"name": "a", "every": "10m", "tool": "t"});
        let a = RoutineDef::from_json(unowned.clone()).unwrap();
        assert_eq!(a.owner, None);
        assert_eq!(a.content().0, r#"{"every":"10m","name":"a","tool":"t"}"#);
        let mut owned = unowned;
        owned["owner"] = json!("ana");
        let ana = RoutineDef::from_json(owned.clone()).unwrap();
        assert_eq!(ana.owner.as_deref(), Some("ana"));
        assert_eq!(
            ana.content().0,
            r#"{"every":"10m","name":"a","owner":"ana","tool":"t"}"#
        );
        assert_ne!(a.content_hash(), ana.content_hash());
        owned["owner"] = json!("bob");
        let bob = RoutineDef::from_json(owned).unwrap();
        assert_ne!(ana.content_hash(), bob.content_hash());
    }
}
