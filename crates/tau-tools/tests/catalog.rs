//! The built-in tools as tau's catalog and a person see them: names, tiers, effects and
//! schemas, and the config errors that stop them from being built.

// Every function in this file is test code; clippy only knows that of `#[test]` functions.
#![allow(clippy::unwrap_used, clippy::panic)]

use std::path::Path;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tau_agent::SharedTool;
use tau_core::ToolCatalog;
use tau_protocol::Tier;
use tau_tools::{
    ClockConfig, CommandConfig, MqttConfig, ToolsConfig, ToolsConfigError, builtin_tools,
};

fn config(workspace: &Path) -> ToolsConfig {
    ToolsConfig {
        workspace: workspace.to_path_buf(),
        ..ToolsConfig::default()
    }
}

fn default_tools() -> (tempfile::TempDir, Vec<SharedTool>) {
    let workspace = tempfile::tempdir().unwrap();
    let tools = builtin_tools(
        &config(workspace.path()),
        &|_| None,
        tau_sandbox::Sandbox::Off,
    )
    .unwrap();
    (workspace, tools)
}

#[test]
fn every_tool_declares_its_tier_and_effect() {
    let (_workspace, tools) = default_tools();
    let mut catalog = ToolCatalog::new();
    catalog.extend(tools).unwrap();
    let entries: Vec<(String, Tier, String)> = catalog
        .entries()
        .map(|entry| {
            (
                entry.tool.spec().name.clone(),
                entry.tier,
                entry.effect.clone(),
            )
        })
        .collect();
    let expected = [
        ("append_note", Tier::Write, "appends a timestamped line to notes.md in the workspace"),
        ("clock", Tier::Read, "reads the current date and time"),
        ("list_dir", Tier::Read, "lists a directory in the workspace"),
        (
            "mqtt_publish",
            Tier::Physical,
            "publishes an MQTT message to the broker at 127.0.0.1:1883 — this can switch real devices",
        ),
        ("read_file", Tier::Read, "reads a text file in the workspace"),
        (
            "run_command",
            Tier::Physical,
            "runs a shell command in the workspace — code the agent wrote",
        ),
        ("write_file", Tier::Write, "creates or replaces a file in the workspace"),
    ]
    .map(|(name, tier, effect)| (name.to_owned(), tier, effect.to_owned()));
    assert_eq!(entries, expected);
}

#[test]
fn every_schema_is_closed_and_names_what_it_requires() {
    let (_workspace, tools) = default_tools();
    let shapes: Vec<(String, Value, Value, Value)> = tools
        .iter()
        .map(|tool| {
            let spec = tool.spec();
            let schema = &spec.input_schema;
            (
                spec.name.clone(),
                schema["type"].clone(),
                schema["required"].clone(),
                schema["additionalProperties"].clone(),
            )
        })
        .collect();
    let expected = [
        ("clock", json!([])),
        ("read_file", json!(["path"])),
        ("list_dir", json!(["path"])),
        ("write_file", json!(["path", "content"])),
        ("append_note", json!(["text"])),
        ("run_command", json!(["command"])),
        ("mqtt_publish", json!(["topic", "payload"])),
    ]
    .map(|(name, required)| (name.to_owned(), json!("object"), required, json!(false)));
    assert_eq!(shapes, expected);
}

#[test]
fn specs_as_the_model_reads_them() {
    let (_workspace, tools) = default_tools();
    let specs: Vec<Value> = tools
        .iter()
        .map(|tool| serde_json::to_value(tool.spec()).unwrap())
        .collect();
    // Key order depends on serde_json features elsewhere in the build; the snapshot sorts.
    insta::with_settings!({ sort_maps => true }, {
        insta::assert_json_snapshot!("builtin_specs", specs);
    });
}

#[test]
fn config_that_cannot_work_stops_the_build() {
    let workspace = tempfile::tempdir().unwrap();
    let missing = workspace.path().join("missing");
    let cases = [
        (
            ToolsConfig {
                workspace: missing.clone(),
                ..ToolsConfig::default()
            },
            ToolsConfigError::WorkspaceMissing {
                path: missing.display().to_string(),
            },
        ),
        (
            ToolsConfig {
                clock: ClockConfig {
                    zone: Some("Atlantis/Capital".into()),
                },
                ..config(workspace.path())
            },
            ToolsConfigError::UnknownZone {
                zone: "Atlantis/Capital".into(),
            },
        ),
        (
            ToolsConfig {
                command: CommandConfig {
                    default_timeout_seconds: 0,
                    ..CommandConfig::default()
                },
                ..config(workspace.path())
            },
            ToolsConfigError::Invalid {
                key: "tools.command.default_timeout_seconds".into(),
                message: "must be between 1 and max_timeout_seconds (300), got 0".into(),
            },
        ),
        (
            ToolsConfig {
                mqtt: MqttConfig {
                    username: Some("tau".into()),
                    password_env: Some("TAU_MQTT_PASSWORD".into()),
                    ..MqttConfig::default()
                },
                ..config(workspace.path())
            },
            ToolsConfigError::MissingPassword {
                var: "TAU_MQTT_PASSWORD".into(),
            },
        ),
    ];
    for (config, expected) in cases {
        assert_eq!(
            builtin_tools(&config, &|_| None, tau_sandbox::Sandbox::Off).err(),
            Some(expected)
        );
    }
}

#[test]
fn disabled_tools_are_left_out_and_unknown_names_are_refused() {
    let workspace = tempfile::tempdir().unwrap();
    let all: Vec<String> = tau_tools::builtin_tools(
        &config(workspace.path()),
        &|_| None,
        tau_sandbox::Sandbox::Off,
    )
    .unwrap()
    .iter()
    .map(|t| t.spec().name.clone())
    .collect();
    assert_eq!(
        all,
        tau_tools::BUILTIN_TOOL_NAMES.map(str::to_owned).to_vec()
    );
    let without_commands = ToolsConfig {
        disabled: vec!["run_command".into(), "mqtt_publish".into()],
        ..config(workspace.path())
    };
    let names: Vec<String> =
        tau_tools::builtin_tools(&without_commands, &|_| None, tau_sandbox::Sandbox::Off)
            .unwrap()
            .iter()
            .map(|t| t.spec().name.clone())
            .collect();
    assert_eq!(
        names,
        vec![
            "clock",
            "read_file",
            "list_dir",
            "write_file",
            "append_note"
        ]
    );
    let unknown = ToolsConfig {
        disabled: vec!["teleport".into()],
        ..config(workspace.path())
    };
    assert_eq!(
        unknown.validate().unwrap_err().to_string(),
        "tools.disabled: there is no built-in tool named 'teleport' (the built-in tools are clock, read_file, list_dir, write_file, append_note, run_command, mqtt_publish)"
    );
}
