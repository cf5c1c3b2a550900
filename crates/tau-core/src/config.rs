//! The `[agent]`, `[ui]` and `[approval]` sections of `tau.toml`. Every field has a
//! default, so tau runs with no file; an invalid value is an error naming its key.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::i18n::Language;

/// The system prompt when the config sets none.
pub const DEFAULT_SYSTEM_PROMPT: &str = "You are tau, a personal agent hub. Answer briefly. Use the tools \
you are given when they help. Some tools act on the physical world or run code; the person approves \
those calls, and when a call is refused you do not try again in another way.";

/// A config value tau cannot use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {message}")]
pub struct ConfigError {
    pub key: String,
    pub message: String,
}

impl ConfigError {
    pub fn new(key: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            key: key.into(),
            message: message.into(),
        }
    }
}

/// `[agent]`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AgentConfig {
    /// Model calls allowed per user turn.
    pub max_turns: u32,
    pub system_prompt: String,
    /// Messages kept in the live history.
    pub window_size: usize,
    /// Output tokens allowed per user turn (none: unlimited).
    pub max_output_tokens: Option<u64>,
    /// Attempts for a throttled model call, the first included.
    pub retry_attempts: u32,
}

impl Default for AgentConfig {
    fn default() -> Self {
        Self {
            max_turns: 20,
            system_prompt: DEFAULT_SYSTEM_PROMPT.to_owned(),
            window_size: 40,
            max_output_tokens: None,
            retry_attempts: 6,
        }
    }
}

/// `[ui]`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct UiConfig {
    /// `en` or `tr`; anything else falls back to English with a warning.
    pub language: String,
}

impl Default for UiConfig {
    fn default() -> Self {
        Self {
            language: "en".to_owned(),
        }
    }
}

impl UiConfig {
    pub fn language(&self) -> Language {
        Language::from_config(&self.language)
    }
}

/// `[approval]`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ApprovalConfig {
    /// How long a tier-2 question waits before it is withdrawn and the call refused.
    /// None: as long as the channel waits (silence never approves either way).
    pub timeout_seconds: Option<f64>,
    /// How long a stored question of a remote channel (the web page, Telegram) waits
    /// before it expires and the call is refused.
    pub remote_timeout_seconds: f64,
    /// Whether approving a lock-class call (a lock, a garage door, a cover, a heater) takes
    /// a second, deliberate step: typing or pressing the device's name or a number shown
    /// on the card, never a bare yes. (Inside `[approval]`: `[[devices]]` already names the
    /// device list, so TOML has no room for a `[devices]` table beside it.)
    pub confirm_high_risk: bool,
}

impl Default for ApprovalConfig {
    fn default() -> Self {
        Self {
            timeout_seconds: None,
            remote_timeout_seconds: 1800.0,
            confirm_high_risk: true,
        }
    }
}

impl ApprovalConfig {
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout_seconds
            .and_then(|s| Duration::try_from_secs_f64(s).ok())
    }

    /// The wait of a stored question (`remote_timeout_seconds`).
    pub fn remote_timeout(&self) -> Duration {
        Duration::try_from_secs_f64(self.remote_timeout_seconds)
            .unwrap_or(Duration::from_secs(1800))
    }
}

/// The sections the policy and the loop read.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CoreConfig {
    pub agent: AgentConfig,
    pub ui: UiConfig,
    pub approval: ApprovalConfig,
}

impl CoreConfig {
    /// Parses and validates a TOML document holding only these sections.
    pub fn from_toml(text: &str) -> Result<Self, ConfigError> {
        let config: Self = toml::from_str(text).map_err(|e| toml_error(text, &e))?;
        config.validate()?;
        Ok(config)
    }

    /// Checks the values serde cannot: ranges and limits.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.agent.max_turns == 0 {
            return Err(ConfigError::new("agent.max_turns", "must be at least 1"));
        }
        if self.agent.window_size < 2 {
            return Err(ConfigError::new("agent.window_size", "must be at least 2"));
        }
        if self.agent.retry_attempts == 0 {
            return Err(ConfigError::new(
                "agent.retry_attempts",
                "must be at least 1",
            ));
        }
        if self.agent.max_output_tokens == Some(0) {
            return Err(ConfigError::new(
                "agent.max_output_tokens",
                "must be at least 1",
            ));
        }
        if let Some(seconds) = self.approval.timeout_seconds
            && !(seconds.is_finite() && seconds > 0.0 && seconds <= 86_400.0)
        {
            return Err(ConfigError::new(
                "approval.timeout_seconds",
                format!("must be a number of seconds above 0 and at most 86400, got {seconds}"),
            ));
        }
        let remote = self.approval.remote_timeout_seconds;
        if !(remote.is_finite() && (1.0..=30.0 * 86_400.0).contains(&remote)) {
            return Err(ConfigError::new(
                "approval.remote_timeout_seconds",
                format!("must be a number of seconds from 1 to 2592000 (30 days), got {remote}"),
            ));
        }
        Ok(())
    }
}

/// A TOML error as one line that starts with the key it is about (`agent.max_turns: ...`).
pub fn toml_error(text: &str, error: &toml::de::Error) -> ConfigError {
    let message = error.message().trim().replace('\n', " ");
    let key = error
        .span()
        .and_then(|span| key_at(text, span.start))
        .unwrap_or_else(|| "tau.toml".to_owned());
    ConfigError::new(key, message)
}

/// The dotted key whose line holds byte `offset`: the nearest `[table]` header above it
/// and the key before `=` on that line.
fn key_at(text: &str, offset: usize) -> Option<String> {
    let before = text.get(..offset)?;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let line = text.get(line_start..)?.lines().next()?.trim();
    let header = |l: &str| {
        let l = l.trim();
        (l.starts_with('[') && l.ends_with(']'))
            .then(|| l.trim_matches(['[', ']']).trim().to_owned())
    };
    if let Some(table) = header(line) {
        return Some(table);
    }
    let table = text.get(..line_start)?.lines().rev().find_map(header);
    let key = line
        .split('=')
        .next()
        .map(|k| k.trim().trim_matches('"').to_owned())
        .filter(|k| !k.is_empty());
    match (table, key) {
        (Some(table), Some(key)) => Some(format!("{table}.{key}")),
        (None, Some(key)) => Some(key),
        (Some(table), None) => Some(table),
        (None, None) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn no_file_means_defaults() {
        assert_eq!(CoreConfig::from_toml("").unwrap(), CoreConfig::default());
        assert_eq!(CoreConfig::default().agent.max_turns, 20);
        assert_eq!(CoreConfig::default().approval.timeout(), None);
    }

    #[test]
    fn values_are_read_and_checked() {
        let config = CoreConfig::from_toml(
            "[agent]\nmax_turns = 3\n[ui]\nlanguage = \"tr\"\n[approval]\ntimeout_seconds = 1.5\n",
        )
        .unwrap();
        assert_eq!(config.agent.max_turns, 3);
        assert_eq!(config.ui.language(), Language::Tr);
        assert_eq!(config.approval.timeout(), Some(Duration::from_millis(1500)));
    }

    #[test]
    fn invalid_values_name_their_key() {
        let cases = [
            (
                "[agent]\nmax_turns = 0\n",
                "agent.max_turns: must be at least 1",
            ),
            (
                "[approval]\ntimeout_seconds = -1\n",
                "approval.timeout_seconds: must be a number of seconds above 0 and at most 86400, got -1",
            ),
            (
                "[agent]\nwindow_size = 1\n",
                "agent.window_size: must be at least 2",
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(
                CoreConfig::from_toml(text).unwrap_err().to_string(),
                expected
            );
        }
        let unknown = CoreConfig::from_toml("[agent]\nmax_turn = 3\n").unwrap_err();
        assert_eq!(unknown.key, "agent.max_turn");
        assert!(
            unknown.message.starts_with("unknown field `max_turn`"),
            "{unknown}"
        );
        let wrong_type =
            CoreConfig::from_toml("[ui]\n\n[agent]\nmax_turns = \"many\"\n").unwrap_err();
        assert_eq!(
            wrong_type.to_string(),
            "agent.max_turns: invalid type: string \"many\", expected u32"
        );
        let unknown_table = CoreConfig::from_toml("[agnet]\nmax_turns = 1\n").unwrap_err();
        assert_eq!(unknown_table.key, "agnet");
    }
}
