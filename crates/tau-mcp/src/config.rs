//! `[mcp]` in `tau.toml`: tau as a server (`[mcp.server]`) and the servers tau uses
//! (`[mcp.servers.NAME]`). Every field has a default; an invalid value is an error naming
//! its key.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tau_core::ConfigError;
use tau_core::provenance::{AfterUntrusted, ProvenanceRule, Reach};
use tau_protocol::Tier;
use tau_sandbox::SandboxMode;

const MAX_SECONDS: f64 = 86_400.0;
const MAX_SERVER_NAME: usize = 32;

/// `[mcp]`
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpConfig {
    pub server: ServeConfig,
    pub servers: BTreeMap<String, ServerEntry>,
}

/// `[mcp.server]`: `tau mcp`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServeConfig {
    /// The environment variable holding the bearer token `tau mcp --http` requires. Without
    /// it, tau generates a token into its home and serves HTTP on loopback addresses only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_env: Option<String>,
    /// How long a client's user has to answer an approval question; `[approval]
    /// timeout_seconds` wins when set.
    pub elicitation_timeout_seconds: f64,
    /// The largest message tau reads from a client, in bytes.
    pub max_message_bytes: usize,
}

impl Default for ServeConfig {
    fn default() -> Self {
        Self {
            token_env: None,
            elicitation_timeout_seconds: 300.0,
            max_message_bytes: 4 * 1024 * 1024,
        }
    }
}

impl ServeConfig {
    pub fn elicitation_timeout(&self) -> Duration {
        Duration::try_from_secs_f64(self.elicitation_timeout_seconds)
            .unwrap_or(Duration::from_secs(300))
    }
}

/// `[mcp.servers.NAME]`: one MCP server whose tools tau offers the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerEntry {
    /// A program to start, speaking MCP on its stdin and stdout.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    pub args: Vec<String>,
    /// Variables set for the program, with their values.
    pub env: BTreeMap<String, String>,
    /// Names of tau's environment variables passed on to the program, beyond PATH, HOME,
    /// USER, LANG, LC_*, TZ and TERM. Nothing else of tau's environment (its keys and
    /// tokens) reaches a server.
    pub pass_env: Vec<String>,
    /// A streamable HTTP endpoint, instead of a program.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The environment variable holding a bearer token sent to `url`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_env: Option<String>,
    /// The tier manifest: tool name (as the server lists it) to tier.
    pub tools: BTreeMap<String, Value>,
    /// The tier of every tool the manifest does not name.
    pub default_tier: Value,
    /// How long tau waits for the server to answer a call.
    pub timeout_seconds: f64,
    /// How long tau waits for the server to start and list its tools.
    pub startup_timeout_seconds: f64,
    /// `"on"`: a program runs in the sandbox, like a command (writes only in the
    /// workspace, reads none of tau's files, nothing left running when tau ends);
    /// `"reduced"`: in it without namespaces (also when `[tools.command]` says `"on"`);
    /// `"off"`: with everything the person's account has.
    pub sandbox: SandboxMode,
    /// Network access for a sandboxed program (an MCP server that calls an API needs it).
    pub network: bool,
    /// What the server's tools return is the person's own (their notes): it steers
    /// nothing. By default it is text from outside.
    pub trusted: bool,
    /// `"egress"` (the default): its tools can send something out of the machine or act on
    /// another person's data; `"local"`: they act only on this machine's own data.
    pub reach: Reach,
    /// `"ask"` or `"run"`: whether its tier-1 tools are asked once the conversation has
    /// read text from outside; by default egress tools are, local ones are not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after_untrusted: Option<AfterUntrusted>,
    /// The people of `[[people]]` who alone may answer a question about one of its tools,
    /// wherever it was asked; empty: the conversation's person answers.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub approvers: Vec<String>,
}

impl Default for ServerEntry {
    fn default() -> Self {
        Self {
            command: None,
            args: Vec::new(),
            env: BTreeMap::new(),
            pass_env: Vec::new(),
            url: None,
            token_env: None,
            tools: BTreeMap::new(),
            default_tier: Value::from(2),
            timeout_seconds: 30.0,
            startup_timeout_seconds: 30.0,
            sandbox: SandboxMode::On,
            network: false,
            trusted: false,
            reach: Reach::Egress,
            after_untrusted: None,
            approvers: Vec::new(),
        }
    }
}

/// Where a server is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    Command {
        program: String,
        args: Vec<String>,
        /// Set with these values.
        env: BTreeMap<String, String>,
        /// Passed on from tau's environment.
        pass_env: Vec<String>,
        sandbox: SandboxMode,
        network: bool,
    },
    Url {
        url: String,
        token_env: Option<String>,
    },
}

/// The tiers tau gives one server's tools.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    pub tiers: BTreeMap<String, Tier>,
    pub default_tier: Tier,
}

impl Manifest {
    /// The tier for `tool`: the manifest's entry, else the default. Nothing the server says
    /// about the tool counts.
    pub fn tier(&self, tool: &str) -> Tier {
        self.tiers.get(tool).copied().unwrap_or(self.default_tier)
    }
}

impl ServerEntry {
    /// The provenance rule of every tool of this server.
    pub fn provenance_rule(&self) -> ProvenanceRule {
        ProvenanceRule {
            trusted: self.trusted,
            reach: self.reach,
            outbound: false,
            after_untrusted: self.after_untrusted,
        }
    }

    pub fn timeout(&self) -> Duration {
        Duration::try_from_secs_f64(self.timeout_seconds).unwrap_or(Duration::from_secs(30))
    }

    pub fn startup_timeout(&self) -> Duration {
        Duration::try_from_secs_f64(self.startup_timeout_seconds).unwrap_or(Duration::from_secs(30))
    }

    pub fn endpoint(&self, name: &str) -> Result<Endpoint, ConfigError> {
        let key = format!("mcp.servers.{name}");
        match (&self.command, &self.url) {
            (Some(program), None) if !program.trim().is_empty() => Ok(Endpoint::Command {
                program: program.clone(),
                args: self.args.clone(),
                env: self.env.clone(),
                pass_env: self.pass_env.clone(),
                sandbox: self.sandbox,
                network: self.network,
            }),
            (None, Some(url)) if url.starts_with("http://") || url.starts_with("https://") => {
                Ok(Endpoint::Url {
                    url: url.clone(),
                    token_env: self.token_env.clone(),
                })
            }
            (None, Some(url)) => Err(ConfigError::new(
                format!("{key}.url"),
                format!("must start with http:// or https://, got {url:?}"),
            )),
            (Some(_), None) => Err(ConfigError::new(
                format!("{key}.command"),
                "must name a program",
            )),
            (Some(_), Some(_)) => Err(ConfigError::new(
                key,
                "set either command (a program speaking MCP on stdio) or url, not both",
            )),
            (None, None) => Err(ConfigError::new(
                key,
                "needs command (a program speaking MCP on stdio) or url (streamable HTTP)",
            )),
        }
    }

    /// The tier manifest. `true`, `3`, `1.0` or `"2"` are errors naming the tool.
    pub fn manifest(&self, name: &str) -> Result<Manifest, ConfigError> {
        let key = format!("mcp.servers.{name}");
        let mut tiers = BTreeMap::new();
        for (tool, value) in &self.tools {
            let tier = Tier::from_json(tool, value)
                .map_err(|e| ConfigError::new(format!("{key}.tools.{tool}"), e.to_string()))?;
            tiers.insert(tool.clone(), tier);
        }
        let default_tier =
            Tier::from_json(&format!("{name}__*"), &self.default_tier).map_err(|e| {
                ConfigError::new(
                    format!("{key}.default_tier"),
                    format!("must be 0, 1 or 2, got {}", e.got),
                )
            })?;
        Ok(Manifest {
            tiers,
            default_tier,
        })
    }
}

impl McpConfig {
    /// Checks what serde cannot: names, endpoints, tiers and ranges.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if let Some(var) = &self.server.token_env
            && var.trim().is_empty()
        {
            return Err(ConfigError::new(
                "mcp.server.token_env",
                "must name an environment variable",
            ));
        }
        seconds(
            "mcp.server.elicitation_timeout_seconds",
            self.server.elicitation_timeout_seconds,
        )?;
        if self.server.max_message_bytes < 1024 {
            return Err(ConfigError::new(
                "mcp.server.max_message_bytes",
                format!(
                    "must be at least 1024, got {}",
                    self.server.max_message_bytes
                ),
            ));
        }
        for (name, entry) in &self.servers {
            check_server_name(name)?;
            entry.endpoint(name)?;
            for var in &entry.pass_env {
                if let Some(problem) = tau_core::env_name_problem(var) {
                    return Err(ConfigError::new(
                        format!("mcp.servers.{name}.pass_env"),
                        format!("{problem}, got {var:?}"),
                    ));
                }
            }
            entry.manifest(name)?;
            seconds(
                &format!("mcp.servers.{name}.timeout_seconds"),
                entry.timeout_seconds,
            )?;
            seconds(
                &format!("mcp.servers.{name}.startup_timeout_seconds"),
                entry.startup_timeout_seconds,
            )?;
        }
        Ok(())
    }
}

fn seconds(key: &str, value: f64) -> Result<(), ConfigError> {
    if value.is_finite() && value > 0.0 && value <= MAX_SECONDS {
        Ok(())
    } else {
        Err(ConfigError::new(
            key,
            format!("must be a number of seconds above 0 and at most 86400, got {value}"),
        ))
    }
}

/// A server name prefixes its tools as `NAME__TOOL`, so it may not hold `__` or end in `_`:
/// then the first `__` of a tool name always ends the server's name.
fn check_server_name(name: &str) -> Result<(), ConfigError> {
    let charset = name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if !name.is_empty()
        && name.len() <= MAX_SERVER_NAME
        && charset
        && !name.contains("__")
        && !name.ends_with('_')
    {
        Ok(())
    } else {
        Err(ConfigError::new(
            format!("mcp.servers.{name}"),
            "server names have 1 to 32 letters, digits, '-' or single '_' (not at the end)",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn entry(fields: Value) -> ServerEntry {
        serde_json::from_value(fields).unwrap()
    }

    #[test]
    fn defaults_ask_for_everything_and_wait_thirty_seconds() {
        let server = entry(json!({"command": "srv"}));
        assert_eq!(
            server.manifest("s").unwrap(),
            Manifest {
                tiers: BTreeMap::new(),
                default_tier: Tier::Physical
            }
        );
        assert_eq!(server.timeout(), Duration::from_secs(30));
        assert_eq!(server.startup_timeout(), Duration::from_secs(30));
        assert_eq!(
            ServeConfig::default().elicitation_timeout(),
            Duration::from_secs(300)
        );
    }

    #[test]
    fn the_manifest_decides_and_the_default_covers_the_rest() {
        let server =
            entry(json!({"command": "srv", "tools": {"read": 0, "write": 1}, "default_tier": 1}));
        let manifest = server.manifest("s").unwrap();
        assert_eq!(
            [
                manifest.tier("read"),
                manifest.tier("write"),
                manifest.tier("other")
            ],
            [Tier::Read, Tier::Write, Tier::Write]
        );
    }

    #[test]
    fn tiers_that_are_not_0_1_or_2_name_the_tool() {
        for (bad, shown) in [
            (json!(true), "true"),
            (json!(3), "3"),
            (json!(1.0), "1.0"),
            (json!("2"), "\"2\""),
        ] {
            let config = McpConfig {
                servers: BTreeMap::from([(
                    "time".into(),
                    entry(json!({"command": "srv", "tools": {"now": bad}})),
                )]),
                ..McpConfig::default()
            };
            assert_eq!(
                config.validate().unwrap_err().to_string(),
                format!(
                    "mcp.servers.time.tools.now: tier for tool 'now' must be 0, 1 or 2, got {shown}"
                )
            );
        }
        let config = McpConfig {
            servers: BTreeMap::from([(
                "time".into(),
                entry(json!({"command": "srv", "default_tier": -1})),
            )]),
            ..McpConfig::default()
        };
        assert_eq!(
            config.validate().unwrap_err().to_string(),
            "mcp.servers.time.default_tier: must be 0, 1 or 2, got -1"
        );
    }

    #[test]
    fn every_other_mistake_names_its_key() {
        let cases = [
            (
                "a__b",
                json!({"command": "srv"}),
                "mcp.servers.a__b: server names have 1 to 32 letters, digits, '-' or single '_' (not at the end)",
            ),
            (
                "a_",
                json!({"command": "srv"}),
                "mcp.servers.a_: server names have 1 to 32 letters, digits, '-' or single '_' (not at the end)",
            ),
            (
                "a.b",
                json!({"command": "srv"}),
                "mcp.servers.a.b: server names have 1 to 32 letters, digits, '-' or single '_' (not at the end)",
            ),
            (
                "s",
                json!({}),
                "mcp.servers.s: needs command (a program speaking MCP on stdio) or url (streamable HTTP)",
            ),
            (
                "s",
                json!({"command": "x", "url": "http://h"}),
                "mcp.servers.s: set either command (a program speaking MCP on stdio) or url, not both",
            ),
            (
                "s",
                json!({"url": "ftp://h"}),
                "mcp.servers.s.url: must start with http:// or https://, got \"ftp://h\"",
            ),
            (
                "s",
                json!({"command": " "}),
                "mcp.servers.s.command: must name a program",
            ),
            (
                "s",
                json!({"command": "x", "pass_env": ["A=B"]}),
                "mcp.servers.s.pass_env: an environment variable name cannot hold '=' or a NUL byte, got \"A=B\"",
            ),
            (
                "s",
                json!({"command": "x", "timeout_seconds": 0}),
                "mcp.servers.s.timeout_seconds: must be a number of seconds above 0 and at most 86400, got 0",
            ),
        ];
        for (name, fields, expected) in cases {
            let config = McpConfig {
                servers: BTreeMap::from([(name.to_owned(), entry(fields))]),
                ..McpConfig::default()
            };
            assert_eq!(config.validate().unwrap_err().to_string(), expected);
        }
    }
}
