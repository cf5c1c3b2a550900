//! `tau.toml`: every section tau reads, with defaults, so tau runs with no file.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use tau_core::{AgentConfig, ApprovalConfig, CoreConfig, UiConfig, toml_error};
use tau_mcp::McpConfig;
use tau_models::ModelConfig;
use tau_telegram::TelegramConfig;
use tau_tools::ToolsConfig;
use tau_web::WebConfig;

use crate::errors::usage;
use tau_audit::AuditConfig;
use tau_home::{Env, Home, config_path};

/// The whole config file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct TauConfig {
    pub model: ModelConfig,
    pub agent: AgentConfig,
    pub ui: UiConfig,
    pub approval: ApprovalConfig,
    pub tools: ToolsConfig,
    pub mcp: McpConfig,
    pub web: WebConfig,
    /// `[log]`: how large `tau.log` may grow under `tau serve`.
    pub log: tau_home::logging::LogConfig,
    /// `[telegram]`: the channel runs under `tau serve` when the section is there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub telegram: Option<TelegramConfig>,
    /// `[audit]`: where `tau serve` sends the day's head.
    pub audit: AuditConfig,
    /// `[[devices]]`: the devices tau knows by name.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub devices: Vec<tau_devices::DeviceDef>,
    /// `[[people]]`: the household (none: one implicit person, `owner`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub people: Vec<tau_core::PersonDef>,
    /// `[[routines]]`, as written; read by `tau-reflex` (`Context::routine_defs`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub routines: Vec<toml::Value>,
    /// `[state]`: a PostgreSQL store several hubs share; absent, `state.db` in the home.
    pub state: crate::store::StateConfig,
}

/// The config as loaded, with what was set explicitly.
#[derive(Debug, Clone)]
pub(crate) struct Loaded {
    pub config: TauConfig,
    /// The file read, if any.
    pub path: Option<PathBuf>,
    /// False when neither the file nor `--model` names a model.
    pub model_configured: bool,
}

impl TauConfig {
    /// The household `[[people]]` names (checked when the file was read).
    pub(crate) fn household(&self) -> tau_core::Household {
        tau_core::Household::from_config(&self.people).unwrap_or_default()
    }

    pub(crate) fn core(&self) -> CoreConfig {
        CoreConfig {
            agent: self.agent.clone(),
            ui: self.ui.clone(),
            approval: self.approval.clone(),
        }
    }
}

/// Reads the config (or the defaults), applies `--model`, puts the workspace under the
/// home unless the file sets one, and checks every value. Errors name the file and key.
pub(crate) fn load(
    flag: Option<&Path>,
    env: Env<'_>,
    home: &Home,
    model: Option<&str>,
) -> anyhow::Result<Loaded> {
    let (text, path) = match config_path(flag, env) {
        Some((path, required)) => match std::fs::read_to_string(&path) {
            Ok(text) => (text, Some(path)),
            Err(error) if !required && error.kind() == std::io::ErrorKind::NotFound => {
                (String::new(), None)
            }
            Err(error) => {
                return Err(usage(format!(
                    "cannot read config {}: {error}",
                    path.display()
                )));
            }
        },
        None => (String::new(), None),
    };
    let shown = path
        .as_ref()
        .map_or_else(|| "tau.toml".to_owned(), |p| p.display().to_string());
    let raw: toml::Table = toml::from_str(&text).unwrap_or_default();
    if raw.get("devices").is_some_and(toml::Value::is_table) {
        return Err(usage(format!(
            "{shown}: devices: write each device as a [[devices]] table; the second step for lock-class devices is [approval] confirm_high_risk"
        )));
    }
    let mut config: TauConfig =
        toml::from_str(&text).map_err(|e| usage(format!("{shown}: {}", toml_error(&text, &e))))?;
    let set = |table: &str, key: &str| raw.get(table).and_then(|t| t.get(key)).is_some();
    let mut model_configured = set("model", "spec");
    if let Some(spec) = model {
        config.model.spec = spec.to_owned();
        model_configured = true;
    }
    if !set("tools", "workspace") {
        config.tools.workspace = home.workspace();
    } else if !config.tools.workspace.is_dir() {
        return Err(usage(format!(
            "{shown}: tools.workspace: '{}' does not exist or is not a directory",
            config.tools.workspace.display()
        )));
    }
    config
        .core()
        .validate()
        .map_err(|e| usage(format!("{shown}: {e}")))?;
    config
        .tools
        .validate()
        .map_err(|e| usage(format!("{shown}: {e}")))?;
    config
        .mcp
        .validate()
        .map_err(|e| usage(format!("{shown}: {e}")))?;
    config
        .web
        .validate()
        .map_err(|e| usage(format!("{shown}: {e}")))?;
    config
        .log
        .validate()
        .map_err(|e| usage(format!("{shown}: {e}")))?;
    if let Some(telegram) = &config.telegram {
        telegram
            .validate()
            .map_err(|e| usage(format!("{shown}: {e}")))?;
    }
    config
        .audit
        .validate(config.telegram.is_some())
        .map_err(|e| usage(format!("{shown}: {e}")))?;
    tau_devices::Registry::from_config(&config.devices)
        .map_err(|e| usage(format!("{shown}: {e}")))?;
    let household = tau_core::Household::from_config(&config.people)
        .map_err(|e| usage(format!("{shown}: {e}")))?;
    crate::people::Approvers::from_config(&config)
        .check(&household)
        .map_err(|e| usage(format!("{shown}: {e}")))?;
    if !config.routines.is_empty() {
        let zone = zone(&config).map_err(|e| usage(format!("{shown}: {e}")))?;
        tau_reflex::toml_routines(&config.routines, &zone, env, None, &household)
            .map_err(|e| usage(format!("{shown}: {e}")))?;
    }
    Ok(Loaded {
        config,
        path,
        model_configured,
    })
}

/// The defaults, as if there were no file: what a command that reads only the home goes
/// on with when the file does not read (see `BadConfig::GoOn`).
pub(crate) fn without_file(home: &Home, model: Option<&str>) -> Loaded {
    let mut config = TauConfig::default();
    config.tools.workspace = home.workspace();
    if let Some(spec) = model {
        config.model.spec = spec.to_owned();
    }
    Loaded {
        config,
        path: None,
        model_configured: model.is_some(),
    }
}

/// What `tau chat` says when no model is configured.
pub(crate) const NO_MODEL_HELP: &str = "\
tau needs a language model. Pick one with --model SPEC or put it in tau.toml under [model] spec = \"...\": \
`ollama:llama3.2` for a local Ollama (it listens on 127.0.0.1:11434), \
`openai-compatible:MODEL@http://127.0.0.1:8080/v1` for llama.cpp's llama-server, vLLM or LM Studio, \
`openai:gpt-4o-mini` with OPENAI_API_KEY set, `anthropic:claude-sonnet-4-5` with ANTHROPIC_API_KEY set, \
or `bedrock:MODEL_ID` with AWS_BEARER_TOKEN_BEDROCK and AWS_REGION set. \
To try tau without any model, run `tau demo`.";

/// The zone times are shown in and routines run by: `[tools.clock] zone`, else the
/// system's.
pub(crate) fn zone(config: &TauConfig) -> anyhow::Result<jiff::tz::TimeZone> {
    match &config.tools.clock.zone {
        Some(name) => jiff::tz::TimeZone::get(name).map_err(|_| {
            usage(format!(
                "tools.clock.zone: unknown time zone '{name}'; use an IANA name such as 'Europe/Istanbul'"
            ))
        }),
        None => Ok(jiff::tz::TimeZone::system()),
    }
}
