//! The `[tools]` section of `tau.toml`. Every field has a default; what serde cannot check
//! (ranges, a zone that exists, a workspace that exists) is checked when the tools are built.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use tau_sandbox::{DEFAULT_DENY_READ, Sandbox, SandboxMode};

/// A `[tools]` value the built-in tools cannot run with. Each message names its key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolsConfigError {
    #[error(
        "tools.workspace: '{path}' does not exist; create it or point tools.workspace elsewhere"
    )]
    WorkspaceMissing { path: String },
    #[error("tools.workspace: '{path}' is not a directory")]
    WorkspaceNotADirectory { path: String },
    #[error("tools.workspace: '{path}' cannot be opened: {message}")]
    WorkspaceUnreadable { path: String, message: String },
    #[error(
        "tools.clock.zone: unknown time zone '{zone}'; use an IANA name such as 'Europe/Istanbul'"
    )]
    UnknownZone { zone: String },
    #[error(
        "tools.mqtt.password_env: the environment variable '{var}' is not set; set it or remove password_env"
    )]
    MissingPassword { var: String },
    #[error(
        "tools.disabled: there is no built-in tool named '{name}' (the built-in tools are {known})"
    )]
    UnknownTool { name: String, known: String },
    #[error("{key}: {message}")]
    Invalid { key: String, message: String },
}

impl ToolsConfigError {
    fn invalid(key: &str, message: impl Into<String>) -> Self {
        Self::Invalid {
            key: key.to_owned(),
            message: message.into(),
        }
    }
}

/// `[tools]`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ToolsConfig {
    /// The one directory the file tools see and commands run in. A relative path is taken
    /// from the process's current directory. It must exist.
    pub workspace: PathBuf,
    /// Built-in tools left out of the catalog, by name (e.g. `["run_command"]`).
    pub disabled: Vec<String>,
    pub clock: ClockConfig,
    pub command: CommandConfig,
    pub mqtt: MqttConfig,
    /// `[tools.provenance.NAME]`: a tool's provenance rule, key by key (`trusted`,
    /// `reach`, `outbound`, `after_untrusted`), over its own or its MCP server's.
    pub provenance: BTreeMap<String, tau_core::provenance::RuleOverride>,
    /// `[tools.step_up]`: tools whose yes on TauBar takes more than a tap, by name
    /// (`run_command = "passkey"`): a passkey assertion bound to the question, once anyone
    /// has enrolled a passkey, as for a lock-class device.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub step_up: BTreeMap<String, StepUp>,
    /// `[tools.approvers]`: tool name to the people of `[[people]]` who alone may answer
    /// a question to run it, wherever it was asked (`run_command = ["ana"]`).
    pub approvers: BTreeMap<String, Vec<String>>,
}

/// What a tool's yes takes beyond the yes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepUp {
    /// A passkey assertion on TauBar.
    Passkey,
}

impl ToolsConfig {
    /// The tools whose yes takes a passkey.
    pub fn passkey_tools(&self) -> Vec<String> {
        self.step_up
            .iter()
            .filter(|(_, step)| **step == StepUp::Passkey)
            .map(|(tool, _)| tool.clone())
            .collect()
    }
}

impl Default for ToolsConfig {
    fn default() -> Self {
        Self {
            workspace: PathBuf::from("workspace"),
            disabled: Vec::new(),
            clock: ClockConfig::default(),
            command: CommandConfig::default(),
            mqtt: MqttConfig::default(),
            provenance: BTreeMap::new(),
            step_up: BTreeMap::new(),
            approvers: BTreeMap::new(),
        }
    }
}

/// `[tools.clock]`
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClockConfig {
    /// An IANA zone name; none: the system's local zone.
    pub zone: Option<String>,
}

/// `[tools.command]`: limits of `run_command`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CommandConfig {
    /// The timeout when a call names none.
    pub default_timeout_seconds: u64,
    /// The longest timeout a call may ask for.
    pub max_timeout_seconds: u64,
    /// Bytes kept of each of stdout and stderr; the rest is counted and dropped.
    pub output_limit_bytes: usize,
    /// Names of environment variables passed on to commands, beyond PATH, HOME, USER, LANG,
    /// LC_*, TZ and TERM. Nothing else of tau's environment (its keys, tokens, passwords)
    /// reaches a command.
    pub env: Vec<String>,
    /// `"on"`: every command runs in the sandbox (writes only in the workspace, reads none
    /// of tau's files nor `deny_read`, no network unless the call asks, nothing left
    /// running), refused where namespaces are missing. `"reduced"`: the same without
    /// namespaces, for a machine that has none. `"off"`: with everything the person's
    /// account has. Every question says which.
    pub sandbox: SandboxMode,
    /// Paths a sandboxed command may not read at all (`~` is the person's home), besides
    /// tau's home and its config file.
    pub deny_read: Vec<String>,
}

impl Default for CommandConfig {
    fn default() -> Self {
        Self {
            default_timeout_seconds: 30,
            max_timeout_seconds: 300,
            output_limit_bytes: 64 * 1024,
            env: Vec::new(),
            sandbox: SandboxMode::On,
            deny_read: DEFAULT_DENY_READ.iter().map(|p| (*p).to_owned()).collect(),
        }
    }
}

/// `[tools.mqtt]`: the broker `mqtt_publish` talks to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MqttConfig {
    pub host: String,
    pub port: u16,
    pub username: Option<String>,
    /// The name of the environment variable holding the password; the password itself
    /// never appears in the config.
    pub password_env: Option<String>,
    pub client_id: String,
}

impl Default for MqttConfig {
    fn default() -> Self {
        Self {
            host: "127.0.0.1".to_owned(),
            port: 1883,
            username: None,
            password_env: None,
            client_id: "tau".to_owned(),
        }
    }
}

/// A day: longer than any command a person waits for.
const MAX_COMMAND_TIMEOUT_SECONDS: u64 = 86_400;
/// Beyond this a captured output no longer fits in a model's context anyway.
const MAX_OUTPUT_LIMIT_BYTES: usize = 16 * 1024 * 1024;
/// MQTT 3.1.1 limits client ids to 23 bytes for brokers that enforce the minimum.
pub(crate) const MAX_CLIENT_ID_BYTES: usize = 23;

impl ToolsConfig {
    /// Checks the values serde cannot: ranges and one-line names.
    pub fn validate(&self) -> Result<(), ToolsConfigError> {
        if let Some(name) = self
            .disabled
            .iter()
            .find(|n| !crate::BUILTIN_TOOL_NAMES.contains(&n.as_str()))
        {
            return Err(ToolsConfigError::UnknownTool {
                name: name.clone(),
                known: crate::BUILTIN_TOOL_NAMES.join(", "),
            });
        }
        self.command.validate()?;
        self.mqtt.validate()
    }
}

impl CommandConfig {
    fn validate(&self) -> Result<(), ToolsConfigError> {
        let max = self.max_timeout_seconds;
        if !(1..=MAX_COMMAND_TIMEOUT_SECONDS).contains(&max) {
            return Err(ToolsConfigError::invalid(
                "tools.command.max_timeout_seconds",
                format!("must be between 1 and {MAX_COMMAND_TIMEOUT_SECONDS}, got {max}"),
            ));
        }
        let default = self.default_timeout_seconds;
        if !(1..=max).contains(&default) {
            return Err(ToolsConfigError::invalid(
                "tools.command.default_timeout_seconds",
                format!("must be between 1 and max_timeout_seconds ({max}), got {default}"),
            ));
        }
        let limit = self.output_limit_bytes;
        if !(1..=MAX_OUTPUT_LIMIT_BYTES).contains(&limit) {
            return Err(ToolsConfigError::invalid(
                "tools.command.output_limit_bytes",
                format!("must be between 1 and {MAX_OUTPUT_LIMIT_BYTES}, got {limit}"),
            ));
        }
        for name in &self.env {
            if let Some(problem) = tau_core::env_name_problem(name) {
                return Err(ToolsConfigError::invalid(
                    "tools.command.env",
                    format!("{problem}, got {name:?}"),
                ));
            }
        }
        for path in &self.deny_read {
            if tau_sandbox::expand_home(path, Some(std::path::Path::new("/"))).is_none() {
                return Err(ToolsConfigError::invalid(
                    "tools.command.deny_read",
                    format!("each path must be absolute or start with ~/, got {path:?}"),
                ));
            }
        }
        Ok(())
    }

    /// The paths no sandboxed command may read: `deny_read` (under the person's `home`),
    /// and `protected` (tau's home, its config file).
    pub fn denied_paths(
        &self,
        home: Option<&std::path::Path>,
        protected: &[PathBuf],
    ) -> Vec<PathBuf> {
        self.deny_read
            .iter()
            .filter_map(|path| tau_sandbox::expand_home(path, home))
            .chain(protected.iter().cloned())
            .collect()
    }

    /// How commands (and MCP servers started as programs) are confined: tau's own
    /// executable is their launcher, and nothing of [`Self::denied_paths`] can be read.
    pub fn sandbox(&self, home: Option<&std::path::Path>, protected: &[PathBuf]) -> Sandbox {
        if self.sandbox == SandboxMode::Off {
            return Sandbox::Off;
        }
        // `/proc/self/exe`, not the path tau was started by: a rebuilt or moved binary
        // would launch something else.
        let launcher = PathBuf::from("/proc/self/exe");
        let deny = self.denied_paths(home, protected);
        match self.sandbox {
            SandboxMode::Reduced => Sandbox::reduced(launcher, deny),
            SandboxMode::On | SandboxMode::Off => Sandbox::on(launcher, deny),
        }
    }
}

impl MqttConfig {
    fn validate(&self) -> Result<(), ToolsConfigError> {
        // The host is shown in the one-line effect a person approves.
        if self.host.is_empty()
            || self
                .host
                .chars()
                .any(|c| c.is_whitespace() || c.is_control())
        {
            return Err(ToolsConfigError::invalid(
                "tools.mqtt.host",
                format!("must be a host name or address, got {:?}", self.host),
            ));
        }
        if self.port == 0 {
            return Err(ToolsConfigError::invalid(
                "tools.mqtt.port",
                "must be between 1 and 65535",
            ));
        }
        let id = &self.client_id;
        if id.is_empty()
            || id.len() > MAX_CLIENT_ID_BYTES
            || !id.chars().all(|c| c.is_ascii_graphic())
        {
            return Err(ToolsConfigError::invalid(
                "tools.mqtt.client_id",
                format!(
                    "must be 1 to {MAX_CLIENT_ID_BYTES} printable ASCII characters, got {id:?}"
                ),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn an_empty_section_is_the_default() {
        let config: ToolsConfig = toml::from_str("").unwrap();
        assert_eq!(config, ToolsConfig::default());
        assert_eq!(
            config,
            ToolsConfig {
                workspace: PathBuf::from("workspace"),
                disabled: Vec::new(),
                clock: ClockConfig { zone: None },
                command: CommandConfig {
                    default_timeout_seconds: 30,
                    max_timeout_seconds: 300,
                    output_limit_bytes: 65_536,
                    env: Vec::new(),
                    sandbox: SandboxMode::On,
                    deny_read: DEFAULT_DENY_READ.iter().map(|p| (*p).to_owned()).collect(),
                },
                mqtt: MqttConfig {
                    host: "127.0.0.1".into(),
                    port: 1883,
                    username: None,
                    password_env: None,
                    client_id: "tau".into(),
                },
                provenance: BTreeMap::new(),
                step_up: BTreeMap::new(),
                approvers: BTreeMap::new(),
            }
        );
        assert_eq!(config.validate(), Ok(()));
    }

    #[test]
    fn every_field_reads_from_toml() {
        let config: ToolsConfig = toml::from_str(
            r#"
            workspace = "ws"
            clock.zone = "Europe/Istanbul"
            command = { default_timeout_seconds = 5, max_timeout_seconds = 60, output_limit_bytes = 100, env = ["GIT_AUTHOR_NAME"], sandbox = "off", deny_read = ["~/.kube", "/srv/keys"] }
            [mqtt]
            host = "broker.lan"
            port = 8883
            username = "tau"
            password_env = "TAU_MQTT_PASSWORD"
            client_id = "tau-kitchen"
            "#,
        )
        .unwrap();
        assert_eq!(
            config,
            ToolsConfig {
                workspace: PathBuf::from("ws"),
                disabled: Vec::new(),
                clock: ClockConfig {
                    zone: Some("Europe/Istanbul".into())
                },
                command: CommandConfig {
                    default_timeout_seconds: 5,
                    max_timeout_seconds: 60,
                    output_limit_bytes: 100,
                    env: vec!["GIT_AUTHOR_NAME".into()],
                    sandbox: SandboxMode::Off,
                    deny_read: vec!["~/.kube".into(), "/srv/keys".into()],
                },
                mqtt: MqttConfig {
                    host: "broker.lan".into(),
                    port: 8883,
                    username: Some("tau".into()),
                    password_env: Some("TAU_MQTT_PASSWORD".into()),
                    client_id: "tau-kitchen".into(),
                },
                provenance: BTreeMap::new(),
                step_up: BTreeMap::new(),
                approvers: BTreeMap::new(),
            }
        );
    }

    #[test]
    fn unknown_keys_are_refused() {
        let error = toml::from_str::<ToolsConfig>("[mqtt]\npassword = \"hunter2\"\n").unwrap_err();
        assert_eq!(
            error.message(),
            "unknown field `password`, expected one of `host`, `port`, `username`, `password_env`, `client_id`"
        );
    }

    #[test]
    fn out_of_range_values_name_their_key() {
        type Change = fn(&mut ToolsConfig);
        let cases: Vec<(Change, &str)> = vec![
            (
                |c| c.command.max_timeout_seconds = 0,
                "tools.command.max_timeout_seconds: must be between 1 and 86400, got 0",
            ),
            (
                |c| c.command.default_timeout_seconds = 301,
                "tools.command.default_timeout_seconds: must be between 1 and max_timeout_seconds (300), got 301",
            ),
            (
                |c| c.command.output_limit_bytes = 0,
                "tools.command.output_limit_bytes: must be between 1 and 16777216, got 0",
            ),
            (
                |c| c.command.env = vec!["A=B".into()],
                "tools.command.env: an environment variable name cannot hold '=' or a NUL byte, got \"A=B\"",
            ),
            (
                |c| c.command.env = vec![String::new()],
                "tools.command.env: an environment variable name is empty, got \"\"",
            ),
            (
                |c| c.command.deny_read = vec!["keys".into()],
                "tools.command.deny_read: each path must be absolute or start with ~/, got \"keys\"",
            ),
            (
                |c| c.mqtt.host = "a b".into(),
                "tools.mqtt.host: must be a host name or address, got \"a b\"",
            ),
            (
                |c| c.mqtt.port = 0,
                "tools.mqtt.port: must be between 1 and 65535",
            ),
            (
                |c| c.mqtt.client_id = String::new(),
                "tools.mqtt.client_id: must be 1 to 23 printable ASCII characters, got \"\"",
            ),
        ];
        for (change, expected) in cases {
            let mut config = ToolsConfig::default();
            change(&mut config);
            assert_eq!(config.validate().unwrap_err().to_string(), expected);
        }
    }
}
