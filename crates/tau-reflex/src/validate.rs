//! From a definition to a routine that can run: exactly one trigger, exactly one action,
//! a tool that exists with arguments its schema accepts, a trigger that can be reached.
//! Every error names the routine and the key.

use jiff::Timestamp;
use jiff::tz::TimeZone;
use serde_json::Value;
use tau_core::{ConfigError, Household, ToolCatalog};
use tau_protocol::{InvalidSessionId, PersonName, SessionId};

use crate::def::{FieldError, RoutineDef};
use crate::schema;
use crate::trigger::{
    MIN_SECRET_CHARS, Secret, Trigger, check_filter, parse_at, parse_cron, parse_every,
};

/// The tools that manage routines; a routine may not call them.
pub const ROUTINE_TOOL_NAMES: [&str; 3] = ["create_routine", "list_routines", "delete_routine"];
/// The longest routine name (it is part of a session id and a URL path).
pub const MAX_NAME_CHARS: usize = 48;
/// The longest `prompt`.
pub const MAX_PROMPT_CHARS: usize = 4000;

/// Where a call the exemption does not cover is asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AskChannel {
    Web,
    Telegram,
}

impl AskChannel {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Web => "web",
            Self::Telegram => "telegram",
        }
    }
}

/// What a routine does when it fires.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// One tool call with fixed arguments.
    Tool { tool: String, arguments: Value },
    /// One agent turn in the routine's own session.
    Prompt { prompt: String },
}

/// Where a routine was set up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// `tau.toml`: the person wrote it.
    Config,
    /// `create_routine`: the person approved it; `approved_hash` is the content they saw.
    Conversation { approved_hash: String },
}

/// A routine that can run.
#[derive(Debug, Clone)]
pub struct Routine {
    pub def: RoutineDef,
    pub trigger: Trigger,
    pub action: Action,
    pub ask: Option<AskChannel>,
    pub enabled: bool,
    pub origin: Origin,
    /// The person of `[[people]]` whose routine it is (`None` with no people): its
    /// conversation is theirs, and its questions theirs to answer.
    pub owner: Option<PersonName>,
    /// SHA-256 of the routine's content as it is now.
    pub content_hash: String,
    /// The session its prompt action runs in (`routine-NAME`).
    session: SessionId,
}

impl Routine {
    pub fn name(&self) -> &str {
        &self.def.name
    }

    /// What fires it, as a person reads where a prompt came from: `webhook doorbell`,
    /// `mqtt home/door/+`, `cron 0 19 * * *`.
    pub fn origin(&self) -> String {
        match &self.trigger {
            Trigger::Webhook { .. } => format!("webhook {}", self.name()),
            other @ (Trigger::Every { .. }
            | Trigger::Cron { .. }
            | Trigger::At { .. }
            | Trigger::Mqtt { .. }) => other.describe(),
        }
    }

    /// True when the person approved exactly this content: a routine from `tau.toml`, or
    /// one made in a conversation and not changed since its approval. Only such a routine
    /// gets an exemption.
    pub fn approved(&self) -> bool {
        match &self.origin {
            Origin::Config => true,
            Origin::Conversation { approved_hash } => *approved_hash == self.content_hash,
        }
    }

    /// The session its prompt action runs in.
    pub fn session(&self) -> &SessionId {
        &self.session
    }

    /// The name its exemption and its calls are recorded under.
    pub fn exemption_name(&self) -> String {
        format!("routine:{}", self.name())
    }
}

/// The session a routine's prompt action runs in.
pub fn session_of(name: &str) -> Result<SessionId, InvalidSessionId> {
    SessionId::parse(&format!("{}{name}", tau_state::ROUTINE_SESSION_PREFIX))
}

/// What a definition is checked against.
pub struct Checks<'a> {
    /// The tools routines may call; `None` skips the tool and schema checks (config load,
    /// before the tools are connected).
    pub tools: Option<&'a ToolCatalog>,
    /// The routine zone.
    pub zone: &'a TimeZone,
    pub env: &'a dyn Fn(&str) -> Option<String>,
    pub now: Timestamp,
    /// `create_routine`: an `at` in the past is an error. A `tau.toml` routine whose time
    /// passed is not (it is logged as missed).
    pub at_must_be_future: bool,
    /// Whether webhooks can reach this process; `None` skips the check and does not read
    /// webhook secrets (a routine read so has a secret nothing matches).
    pub webhooks: Option<bool>,
    /// The household a routine's `owner` is one of.
    pub people: &'a Household,
}

/// Why a routine name cannot be used, if it cannot.
pub fn name_problem(name: &str) -> Option<String> {
    let valid = (1..=MAX_NAME_CHARS).contains(&name.len())
        && name
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
    (!valid).then(|| {
        format!(
            "{name:?} is not a routine name: 1 to {MAX_NAME_CHARS} of a-z, 0-9, '-' and '_', starting with a letter or digit"
        )
    })
}

/// Checks `def` and builds the routine. Errors are `routines.NAME.KEY: ...`.
pub fn validate(
    def: RoutineDef,
    origin: Origin,
    checks: &Checks<'_>,
) -> Result<Routine, ConfigError> {
    if let Some(problem) = name_problem(&def.name) {
        return Err(ConfigError::new("routines.name", problem));
    }
    let named = |e: FieldError| e.in_routine(&def.name);
    let trigger = trigger(&def, checks).map_err(named)?;
    let action = action(&def, checks).map_err(named)?;
    let ask = match def.ask.as_deref() {
        None => None,
        Some("web") => Some(AskChannel::Web),
        Some("telegram") => Some(AskChannel::Telegram),
        Some(other) => {
            return Err(named(FieldError::new(
                "ask",
                format!("must be \"web\" or \"telegram\", got {other:?}"),
            )));
        }
    };
    let owner = crate::owner::owner_of(&def, &origin, checks.people, ask).map_err(named)?;
    let session =
        session_of(&def.name).map_err(|e| ConfigError::new("routines.name", e.to_string()))?;
    Ok(Routine {
        owner,
        session,
        content_hash: def.content_hash(),
        enabled: def.enabled.unwrap_or(true),
        def,
        trigger,
        action,
        ask,
        origin,
    })
}

fn trigger(def: &RoutineDef, checks: &Checks<'_>) -> Result<Trigger, FieldError> {
    let set: Vec<&str> = [
        ("every", def.every.is_some()),
        ("cron", def.cron.is_some()),
        ("at", def.at.is_some()),
        ("mqtt", def.mqtt.is_some()),
        ("webhook", def.webhook.is_some()),
    ]
    .into_iter()
    .filter_map(|(key, on)| on.then_some(key))
    .collect();
    match set.as_slice() {
        [] => {
            return Err(FieldError::new(
                "trigger",
                "is missing: set one of every, cron, at, mqtt, webhook",
            ));
        }
        [_] => {}
        [first, second, ..] => {
            return Err(FieldError::new(
                *second,
                format!("a routine has one trigger, and {first} is already set"),
            ));
        }
    }
    if def.payload.is_some() && def.mqtt.is_none() && def.webhook.is_none() {
        return Err(FieldError::new(
            "payload",
            "only an mqtt or webhook trigger matches a payload",
        ));
    }
    if let Some(text) = &def.every {
        let period = parse_every(text).map_err(|m| FieldError::new("every", m))?;
        return Ok(Trigger::Every {
            text: text.clone(),
            period,
        });
    }
    if let Some(text) = &def.cron {
        let cron =
            parse_cron(text, checks.zone, checks.now).map_err(|m| FieldError::new("cron", m))?;
        return Ok(Trigger::Cron {
            text: text.clone(),
            cron: Box::new(cron),
        });
    }
    if let Some(text) = &def.at {
        let at = parse_at(text, checks.zone).map_err(|m| FieldError::new("at", m))?;
        if checks.at_must_be_future && at <= checks.now {
            return Err(FieldError::new(
                "at",
                format!("'{text}' is in the past; the routine would never run"),
            ));
        }
        return Ok(Trigger::At {
            text: text.clone(),
            at,
        });
    }
    if let Some(filter) = &def.mqtt {
        check_filter(filter).map_err(|m| FieldError::new("mqtt", m))?;
        return Ok(Trigger::Mqtt {
            filter: filter.clone(),
            payload: def.payload.clone(),
        });
    }
    let Some(webhook) = &def.webhook else {
        return Err(FieldError::new("trigger", "is missing"));
    };
    if checks.webhooks == Some(false) {
        return Err(FieldError::new(
            "webhook",
            "cannot be reached: webhooks are served by `tau serve` on its HTTP listener",
        ));
    }
    let var = &webhook.secret_env;
    if let Some(problem) = tau_core::env_name_problem(var) {
        return Err(FieldError::new(
            "webhook.secret_env",
            format!("{problem}, got {var:?}"),
        ));
    }
    if checks.webhooks.is_none() {
        // Read where webhooks are served: `tau chat` does not need the secret.
        return Ok(Trigger::Webhook {
            secret: Secret::new(String::new()),
            payload: def.payload.clone(),
        });
    }
    let secret = match (checks.env)(var) {
        Some(secret) if secret.chars().count() >= MIN_SECRET_CHARS => secret,
        Some(_) => {
            return Err(FieldError::new(
                "webhook.secret_env",
                format!("the secret in '{var}' is shorter than {MIN_SECRET_CHARS} characters"),
            ));
        }
        None => {
            return Err(FieldError::new(
                "webhook.secret_env",
                format!("the environment variable '{var}' is not set"),
            ));
        }
    };
    Ok(Trigger::Webhook {
        secret: Secret::new(secret),
        payload: def.payload.clone(),
    })
}

fn action(def: &RoutineDef, checks: &Checks<'_>) -> Result<Action, FieldError> {
    match (&def.tool, &def.prompt) {
        (None, None) => Err(FieldError::new(
            "action",
            "is missing: set tool (with arguments) or prompt",
        )),
        (Some(_), Some(_)) => Err(FieldError::new(
            "prompt",
            "a routine has one action, and tool is already set",
        )),
        (None, Some(prompt)) => {
            if def.arguments.is_some() {
                return Err(FieldError::new(
                    "arguments",
                    "belong to a tool; this routine has a prompt",
                ));
            }
            if prompt.trim().is_empty() || prompt.chars().count() > MAX_PROMPT_CHARS {
                return Err(FieldError::new(
                    "prompt",
                    format!("must hold 1 to {MAX_PROMPT_CHARS} characters"),
                ));
            }
            Ok(Action::Prompt {
                prompt: prompt.clone(),
            })
        }
        (Some(tool), None) => {
            if ROUTINE_TOOL_NAMES.contains(&tool.as_str()) {
                return Err(FieldError::new(
                    "tool",
                    format!("a routine cannot call '{tool}'; routines are set up by a person"),
                ));
            }
            let arguments = Value::Object(def.arguments.clone().unwrap_or_default());
            if let Some(catalog) = checks.tools {
                let Some(entry) = catalog.get(tool) else {
                    return Err(FieldError::new(
                        "tool",
                        format!("there is no tool named '{tool}' (see `tau tools`)"),
                    ));
                };
                schema::check(&entry.tool.spec().input_schema, &arguments)
                    .map_err(|e| FieldError::new(e.path, e.message))?;
                // What the tool itself would refuse (a device it does not know, a value
                // out of its range) is refused here, not at the first run.
                entry
                    .tool
                    .check_input(&arguments)
                    .map_err(|e| FieldError::new("arguments", e.message))?;
            }
            Ok(Action::Tool {
                tool: tool.clone(),
                arguments,
            })
        }
    }
}
