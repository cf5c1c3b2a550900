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
    /// `en` or `tr` (a region such as `en-GB` is fine); anything else is a config error.
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
    /// How long a grant ("yes, and allow this again") lasts unless its maker says
    /// otherwise: 1 to 720 hours (30 days).
    pub grant_hours: u32,
}

impl Default for ApprovalConfig {
    fn default() -> Self {
        Self {
            timeout_seconds: None,
            remote_timeout_seconds: 1800.0,
            confirm_high_risk: true,
            grant_hours: tau_protocol::DEFAULT_GRANT_HOURS,
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
        if Language::parse(&self.ui.language).is_none() {
            return Err(ConfigError::new(
                "ui.language",
                format!("tau speaks en and tr, got {:?}", self.ui.language),
            ));
        }
        let hours = self.approval.grant_hours;
        if !(1..=tau_protocol::MAX_GRANT_HOURS).contains(&hours) {
            return Err(ConfigError::new(
                "approval.grant_hours",
                format!("must be a number of hours from 1 to 720 (30 days), got {hours}"),
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

/// A TOML error as one line that starts with the key it is about (`agent.max_turns: ...`),
/// says where it is (`at line 2, column 13`) and, for a key tau does not know, which known
/// one it may have meant.
pub fn toml_error(text: &str, error: &toml::de::Error) -> ConfigError {
    let mut message = error.message().trim().replace('\n', " ");
    if let Some(known) = did_you_mean(&message) {
        message.push_str(&format!("; did you mean `{known}`?"));
    }
    let span = error.span();
    if let Some((line, column)) = span.as_ref().map(|s| line_and_column(text, s.start)) {
        message.push_str(&format!(" (at line {line}, column {column})"));
    }
    let key = span
        .and_then(|span| key_at(text, span.start))
        .unwrap_or_else(|| "tau.toml".to_owned());
    ConfigError::new(key, message)
}

/// The 1-based line and column (in characters) of byte `offset`.
fn line_and_column(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before.get(line_start..).map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// For serde's "unknown field `x`, expected one of `a`, `b`" (or "expected `a`" or
/// "expected `a` or `b`"): the known name closest to `x`, when it is close enough to be a
/// slip (at most a third of its letters, and 2 at most, differ).
fn did_you_mean(message: &str) -> Option<String> {
    let rest = message.strip_prefix("unknown field `")?;
    let (unknown, expected) = rest.split_once('`')?;
    let known: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
    let limit = (unknown.chars().count() / 3).clamp(1, 2);
    known
        .into_iter()
        .map(|name| (edit_distance(unknown, name), name))
        .filter(|(distance, _)| *distance <= limit)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, name)| name.to_owned())
}

/// Levenshtein distance in characters, with a swap of two neighbours counted as one.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let width = b.len() + 1;
    let mut rows = vec![0usize; (a.len() + 1) * width];
    let at = |i: usize, j: usize| i * width + j;
    for (i, row) in (0..=a.len()).enumerate() {
        if let Some(cell) = rows.get_mut(at(row, 0)) {
            *cell = i;
        }
    }
    for j in 0..=b.len() {
        if let Some(cell) = rows.get_mut(at(0, j)) {
            *cell = j;
        }
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let get = |i, j| rows.get(at(i, j)).copied().unwrap_or(usize::MAX / 2);
            let same = a.get(i - 1) == b.get(j - 1);
            let mut best = (get(i - 1, j) + 1)
                .min(get(i, j - 1) + 1)
                .min(get(i - 1, j - 1) + usize::from(!same));
            if i > 1 && j > 1 && a.get(i - 1) == b.get(j - 2) && a.get(i - 2) == b.get(j - 1) {
                best = best.min(get(i - 2, j - 2) + 1);
            }
            if let Some(cell) = rows.get_mut(at(i, j)) {
                *cell = best;
            }
        }
    }
    rows.get(at(a.len(), b.len()))
        .copied()
        .unwrap_or(usize::MAX)
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
    fn an_unknown_key_close_to_a_known_one_is_named() {
        let cases = [
            (
                "unknown field `temprature`, expected one of `spec`, `temperature`, `max_tokens`",
                Some("temperature"),
            ),
            (
                "unknown field `agnet`, expected one of `model`, `agent`, `ui`",
                Some("agent"),
            ),
            (
                "unknown field `tool`, expected one of `model`, `tools`",
                Some("tools"),
            ),
            ("unknown field `x`, expected `language`", None),
            (
                "unknown field `zzzzzz`, expected one of `model`, `agent`",
                None,
            ),
            ("invalid type: string \"many\", expected u32", None),
        ];
        for (message, expected) in cases {
            assert_eq!(did_you_mean(message).as_deref(), expected, "{message}");
        }
        assert_eq!(edit_distance("ab", "ba"), 1);
        assert_eq!(line_and_column("a\nbé = 1", 6), (2, 4));
    }

    #[test]
    fn no_file_means_defaults() {
        assert_eq!(CoreConfig::from_toml("").unwrap(), CoreConfig::default());
        assert_eq!(CoreConfig::default().agent.max_turns, 20);
        assert_eq!(CoreConfig::default().approval.timeout(), None);
        assert_eq!(CoreConfig::default().approval.grant_hours, 24);
        let month = CoreConfig::from_toml("[approval]\ngrant_hours = 720\n").unwrap();
        assert_eq!(month.approval.grant_hours, 720);
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
            (
                "[approval]\ngrant_hours = 0\n",
                "approval.grant_hours: must be a number of hours from 1 to 720 (30 days), got 0",
            ),
            (
                "[approval]\ngrant_hours = 721\n",
                "approval.grant_hours: must be a number of hours from 1 to 720 (30 days), got 721",
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
        assert!(
            unknown
                .message
                .ends_with("; did you mean `max_turns`? (at line 2, column 1)"),
            "{unknown}"
        );
        let wrong_type =
            CoreConfig::from_toml("[ui]\n\n[agent]\nmax_turns = \"many\"\n").unwrap_err();
        assert_eq!(
            wrong_type.to_string(),
            "agent.max_turns: invalid type: string \"many\", expected u32 (at line 4, column 13)"
        );
        let language = CoreConfig::from_toml("[ui]\nlanguage = \"de\"\n").unwrap_err();
        assert_eq!(
            language.to_string(),
            "ui.language: tau speaks en and tr, got \"de\""
        );
        let unknown_table = CoreConfig::from_toml("[agnet]\nmax_turns = 1\n").unwrap_err();
        assert_eq!(unknown_table.key, "agnet");
    }
}
