//! tau-tools: the tools built into tau.
//!
//! Owns the built-in tools (clock, files, notes, shell commands, MQTT), each declaring its
//! tier and the one-line effect a person reads before approving it, and workspace
//! containment: every path a tool touches, and every command's working directory, stays
//! inside one configured directory. Knows nothing of approvals, channels or models: a tool
//! declares its tier and runs when called; whether it may run is decided above it.
//!
//! Layout
//! - `config.rs`: the `[tools]` section and its errors
//! - `workspace.rs`: containment, the one place paths from the model are opened (beneath a
//!   descriptor of the workspace, never through a symlink)
//! - `args.rs`: strict argument parsing shared by every tool
//! - `written.rs`, `command_card.rs`: the files the file tools wrote, shown (and pinned)
//!   on the question of a command that names them, beside what the sandbox allows it
//! - `workspace_tree.rs`: the workspace's tree, which a grant of `run_command` pins
//! - `boundary.rs`: the workspace as a trust boundary: it may hold nothing tau trusts
//!   (tau's home, the config) and no program tau starts
//! - one file per tool: `clock.rs`, `read_file.rs`, `list_dir.rs`, `write_file.rs`,
//!   `append_note.rs`, `run_command.rs` (with `run_command/`: output capture, the process,
//!   `tree.rs` finding and stopping everything a command started), `mqtt_publish.rs` (with
//!   `mqtt_link.rs`: the broker, shared with the device tools and the routines)

mod append_note;
mod args;
mod boundary;
mod clock;
mod command_card;
mod config;
mod list_dir;
mod mqtt_link;
mod mqtt_publish;
mod read_file;
mod run_command;
mod workspace;
mod workspace_tree;
mod write_file;
mod written;

#[cfg(test)]
mod race_tests;

use std::sync::Arc;

use tau_agent::SharedTool;
use tau_core::{CardWriter, EventBus, WorkspacePinner};
use tau_sandbox::Sandbox;

pub use boundary::{BoundaryError, StartedProgram, check_workspace};
pub use config::{ClockConfig, CommandConfig, MqttConfig, StepUp, ToolsConfig, ToolsConfigError};
pub use mqtt_link::{MqttBroker, MqttMessage, broker_options, check_topic};

use crate::append_note::AppendNote;
use crate::clock::{Clock, TimeSource};
use crate::command_card::CommandCard;
use crate::list_dir::ListDir;
use crate::mqtt_publish::MqttPublish;
use crate::read_file::ReadFile;
use crate::run_command::RunCommand;
use crate::workspace::Workspace;
use crate::write_file::WriteFile;
use crate::written::Written;

/// The names of the built-in tools, as `[tools] disabled` may name them.
pub const BUILTIN_TOOL_NAMES: [&str; 7] = [
    "clock",
    "read_file",
    "list_dir",
    "write_file",
    "append_note",
    "run_command",
    "mqtt_publish",
];

/// The built-in tools and tau's card writer for their questions.
pub struct Builtins {
    pub tools: Vec<SharedTool>,
    /// What the question of a `run_command` says: what the sandbox allows it, and the
    /// files it names that the file tools wrote (pinned to what was shown).
    pub card_writer: Arc<dyn CardWriter>,
    /// Reads the workspace's tree, which a grant of `run_command` pins.
    pub pinner: Arc<dyn WorkspacePinner>,
}

/// Every built-in tool, configured, but those `[tools] disabled` names. `env` looks up
/// environment variables (the MQTT password, and what commands may see, read once here);
/// pass `&|name| std::env::var(name).ok()` in the binary and a map in tests.
///
/// `sandbox` is how commands are confined: the binary builds it from `[tools.command]`
/// (`Sandbox::Off` when `sandbox = "off"`).
pub fn builtins(
    config: &ToolsConfig,
    env: &dyn Fn(&str) -> Option<String>,
    sandbox: Sandbox,
) -> Result<Builtins, ToolsConfigError> {
    audited_builtins(config, env, sandbox, None)
}

/// [`builtins`], with `events` told (an `error` line) of each command the sandbox refused.
pub fn audited_builtins(
    config: &ToolsConfig,
    env: &dyn Fn(&str) -> Option<String>,
    sandbox: Sandbox,
    events: Option<EventBus>,
) -> Result<Builtins, ToolsConfigError> {
    config.validate()?;
    let workspace = Workspace::open(&config.workspace)?;
    let time = TimeSource::from_config(&config.clock)?;
    let broker = MqttBroker::from_config(&config.mqtt, env)?;
    let written = Arc::new(Written::default());
    let tools: Vec<SharedTool> = vec![
        Arc::new(Clock::new(time.clone())),
        Arc::new(ReadFile::new(workspace.clone())),
        Arc::new(ListDir::new(workspace.clone())),
        Arc::new(WriteFile::new(workspace.clone()).recording(Arc::clone(&written))),
        Arc::new(AppendNote::new(workspace.clone(), time).recording(Arc::clone(&written))),
        Arc::new(
            RunCommand::new(
                workspace.clone(),
                config.command.clone(),
                tau_core::child_env(&config.command.env, env),
                sandbox.clone(),
            )
            .recording(Arc::clone(&written))
            .reporting(events),
        ),
        Arc::new(MqttPublish::new(broker)),
    ];
    let pinner = Arc::new(workspace_tree::TreePinner {
        workspace: workspace.clone(),
    });
    let card_writer = Arc::new(CommandCard {
        workspace,
        sandbox,
        written,
    });
    Ok(Builtins {
        tools: tools
            .into_iter()
            .filter(|t| !config.disabled.contains(&t.spec().name))
            .collect(),
        card_writer,
        pinner,
    })
}

/// [`builtins`] without the card writer.
pub fn builtin_tools(
    config: &ToolsConfig,
    env: &dyn Fn(&str) -> Option<String>,
    sandbox: Sandbox,
) -> Result<Vec<SharedTool>, ToolsConfigError> {
    builtins(config, env, sandbox).map(|b| b.tools)
}
