//! `[telegram]` in `tau.toml`. The section is optional; when it is there, `owners` is
//! required: the channel answers to no one by default.

use std::collections::BTreeSet;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize};
use tau_core::{ConfigError, env_name_problem};

/// The Bot API tau talks to unless `api_url` says otherwise.
pub const DEFAULT_API_URL: &str = "https://api.telegram.org";
/// Telegram's own ceiling for a long poll.
const MAX_POLL_SECONDS: u32 = 50;

/// `[telegram]`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TelegramConfig {
    /// The environment variable holding the bot token (never the token itself).
    #[serde(default = "default_token_env")]
    pub token_env: String,
    /// Telegram user ids (numbers) of the people the bot answers to and whose approval
    /// counts. Never usernames: a username can be given up and taken by someone else.
    #[serde(deserialize_with = "user_ids")]
    pub owners: Vec<i64>,
    /// Another Bot API server (a local Bot API server, an emulator); the token is appended
    /// as `/bot<token>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_url: Option<String>,
    /// Chats the bot talks in. Default: the owners' private chats only. Even in a listed
    /// group, only the owners are answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_chats: Option<Vec<i64>>,
    /// How long one `getUpdates` call waits for news (Telegram allows up to 50 s).
    #[serde(default = "default_poll_timeout")]
    pub poll_timeout_seconds: u32,
    /// The shortest time between two polls when the server answers at once with nothing
    /// (a server that does not hold the request open, like an emulator).
    #[serde(default = "default_min_poll_interval")]
    pub min_poll_interval_ms: u64,
    /// The shortest time between two messages or edits tau makes in one chat.
    #[serde(default = "default_edit_interval")]
    pub edit_interval_ms: u64,
}

fn default_token_env() -> String {
    "TAU_TELEGRAM_TOKEN".to_owned()
}

fn default_poll_timeout() -> u32 {
    30
}

fn default_min_poll_interval() -> u64 {
    1000
}

fn default_edit_interval() -> u64 {
    1000
}

/// Accepts integers only, and says why a name is not taken.
fn user_ids<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<i64>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Id {
        Number(i64),
        Other(serde_json::Value),
    }
    let ids = Vec::<Id>::deserialize(deserializer)?;
    ids.into_iter()
        .map(|id| match id {
            Id::Number(n) => Ok(n),
            Id::Other(serde_json::Value::String(name)) => Err(serde::de::Error::custom(format!(
                "owners are numeric Telegram user ids, not usernames ('{name}'): a username \
                 can change hands, an id cannot"
            ))),
            Id::Other(other) => Err(serde::de::Error::custom(format!(
                "owners are numeric Telegram user ids, got {other}"
            ))),
        })
        .collect()
}

impl TelegramConfig {
    /// A config for `owners` with every other key at its default.
    pub fn for_owners(owners: Vec<i64>) -> Self {
        Self {
            token_env: default_token_env(),
            owners,
            api_url: None,
            allowed_chats: None,
            poll_timeout_seconds: default_poll_timeout(),
            min_poll_interval_ms: default_min_poll_interval(),
            edit_interval_ms: default_edit_interval(),
        }
    }

    /// Checks what serde cannot.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if let Some(problem) = env_name_problem(&self.token_env) {
            return Err(ConfigError::new("telegram.token_env", problem));
        }
        if self.owners.is_empty() {
            return Err(ConfigError::new(
                "telegram.owners",
                "name at least one owner (a numeric Telegram user id): the bot answers no one else",
            ));
        }
        if let Some(bad) = self.owners.iter().find(|id| **id <= 0) {
            return Err(ConfigError::new(
                "telegram.owners",
                format!("{bad} is not a user id (user ids are positive; negative ids are chats)"),
            ));
        }
        if let Some(url) = &self.api_url {
            let ok = (url.starts_with("http://") || url.starts_with("https://"))
                && !url.contains(char::is_whitespace);
            if !ok {
                return Err(ConfigError::new(
                    "telegram.api_url",
                    "must be an http:// or https:// URL",
                ));
            }
        }
        if self.allowed_chats.as_ref().is_some_and(|c| c.contains(&0)) {
            return Err(ConfigError::new(
                "telegram.allowed_chats",
                "0 is not a chat id",
            ));
        }
        if self.poll_timeout_seconds > MAX_POLL_SECONDS {
            return Err(ConfigError::new(
                "telegram.poll_timeout_seconds",
                format!("must be at most {MAX_POLL_SECONDS}"),
            ));
        }
        if self.edit_interval_ms > 60_000 || self.min_poll_interval_ms > 60_000 {
            return Err(ConfigError::new(
                "telegram",
                "edit_interval_ms and min_poll_interval_ms must be at most 60000",
            ));
        }
        Ok(())
    }

    /// The owners' ids, as a set.
    pub fn owner_set(&self) -> BTreeSet<i64> {
        self.owners.iter().copied().collect()
    }

    /// The chats the bot talks in: `allowed_chats`, or else the owners' private chats (a
    /// private chat's id is the user's id).
    pub fn chat_set(&self) -> BTreeSet<i64> {
        self.allowed_chats
            .as_ref()
            .unwrap_or(&self.owners)
            .iter()
            .copied()
            .collect()
    }

    /// The Bot API base, without a trailing slash.
    pub fn api_base(&self) -> &str {
        self.api_url
            .as_deref()
            .unwrap_or(DEFAULT_API_URL)
            .trim_end_matches('/')
    }

    pub fn poll_timeout(&self) -> Duration {
        Duration::from_secs(u64::from(self.poll_timeout_seconds))
    }

    pub fn min_poll_interval(&self) -> Duration {
        Duration::from_millis(self.min_poll_interval_ms)
    }

    pub fn edit_interval(&self) -> Duration {
        Duration::from_millis(self.edit_interval_ms)
    }

    /// Reads the token from the variable `token_env` names, through `lookup` (the process
    /// environment in the binary). The error names the variable, never a value.
    pub fn token(&self, lookup: impl Fn(&str) -> Option<String>) -> Result<String, ConfigError> {
        match lookup(&self.token_env) {
            Some(token) if !token.trim().is_empty() => {
                // A token is `<digits>:<letters, digits, - and _>`; anything else would
                // change the URL it is put in.
                let valid = token.split_once(':').is_some_and(|(id, secret)| {
                    !id.is_empty()
                        && id.bytes().all(|b| b.is_ascii_digit())
                        && !secret.is_empty()
                        && secret
                            .bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
                });
                if valid {
                    Ok(token)
                } else {
                    Err(ConfigError::new(
                        "telegram.token_env",
                        format!(
                            "{} does not hold a bot token (digits, ':', then letters, digits, '-' or '_')",
                            self.token_env
                        ),
                    ))
                }
            }
            _ => Err(ConfigError::new(
                "telegram.token_env",
                format!("set {} to the bot's token", self.token_env),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn parse(text: &str) -> Result<TelegramConfig, String> {
        #[derive(Deserialize)]
        struct File {
            telegram: TelegramConfig,
        }
        let file: File = toml::from_str(text).map_err(|e| e.message().to_owned())?;
        file.telegram.validate().map_err(|e| e.to_string())?;
        Ok(file.telegram)
    }

    #[test]
    fn owners_alone_make_a_config_with_defaults() {
        let config = parse("[telegram]\nowners = [424242]\n").unwrap();
        assert_eq!(config, TelegramConfig::for_owners(vec![424242]));
        assert_eq!(config.token_env, "TAU_TELEGRAM_TOKEN");
        assert_eq!(config.chat_set(), BTreeSet::from([424242]));
        assert_eq!(config.api_base(), "https://api.telegram.org");
    }

    #[test]
    fn allowed_chats_replace_the_private_chats_and_api_url_loses_its_slash() {
        let config = parse(
            "[telegram]\nowners = [1, 2]\nallowed_chats = [-100123, 1]\napi_url = \"http://127.0.0.1:9000/\"\n",
        )
        .unwrap();
        assert_eq!(config.chat_set(), BTreeSet::from([-100123, 1]));
        assert_eq!(config.owner_set(), BTreeSet::from([1, 2]));
        assert_eq!(config.api_base(), "http://127.0.0.1:9000");
    }

    #[test]
    fn usernames_empty_owners_and_odd_values_are_refused_naming_the_key() {
        let cases = [
            (
                "[telegram]\n",
                "missing field `owners`".to_owned(),
            ),
            (
                "[telegram]\nowners = []\n",
                "telegram.owners: name at least one owner (a numeric Telegram user id): the bot answers no one else".to_owned(),
            ),
            (
                "[telegram]\nowners = [\"@me\"]\n",
                "owners are numeric Telegram user ids, not usernames ('@me'): a username can change hands, an id cannot".to_owned(),
            ),
            (
                "[telegram]\nowners = [1.5]\n",
                "owners are numeric Telegram user ids, got 1.5".to_owned(),
            ),
            (
                "[telegram]\nowners = [-5]\n",
                "telegram.owners: -5 is not a user id (user ids are positive; negative ids are chats)".to_owned(),
            ),
            (
                "[telegram]\nowners = [1]\napi_url = \"ftp://x\"\n",
                "telegram.api_url: must be an http:// or https:// URL".to_owned(),
            ),
            (
                "[telegram]\nowners = [1]\ntoken_env = \"\"\n",
                "telegram.token_env: an environment variable name is empty".to_owned(),
            ),
            (
                "[telegram]\nowners = [1]\npoll_timeout_seconds = 51\n",
                "telegram.poll_timeout_seconds: must be at most 50".to_owned(),
            ),
            (
                "[telegram]\nowners = [1]\nallowed_chats = [0]\n",
                "telegram.allowed_chats: 0 is not a chat id".to_owned(),
            ),
            (
                "[telegram]\nowners = [1]\ntoken = \"123:abc\"\n",
                "unknown field `token`, expected one of `token_env`, `owners`, `api_url`, `allowed_chats`, `poll_timeout_seconds`, `min_poll_interval_ms`, `edit_interval_ms`".to_owned(),
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(parse(text).unwrap_err(), expected, "{text}");
        }
    }

    #[test]
    fn the_token_comes_from_the_named_variable_and_is_never_shown() {
        let config = TelegramConfig::for_owners(vec![1]);
        let token =
            config.token(|name| (name == "TAU_TELEGRAM_TOKEN").then(|| "123:AA-b_c".to_owned()));
        assert_eq!(token.unwrap(), "123:AA-b_c");
        assert_eq!(
            config.token(|_| None).unwrap_err().to_string(),
            "telegram.token_env: set TAU_TELEGRAM_TOKEN to the bot's token"
        );
        for bad in ["123:abc/../x", "abc:def", "123:", "123 abc", "123:a?b"] {
            let error = config
                .token(|_| Some(bad.to_owned()))
                .unwrap_err()
                .to_string();
            assert!(!error.contains(bad), "{error}");
            assert_eq!(
                error,
                "telegram.token_env: TAU_TELEGRAM_TOKEN does not hold a bot token (digits, ':', then letters, digits, '-' or '_')"
            );
        }
    }
}
