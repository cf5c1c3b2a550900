//! What an MCP server's program sees of tau's environment: the allow-list, the names its
//! `pass_env` lists and the values its `env` sets. Never tau's keys and tokens.

#![cfg(test)]

use std::collections::BTreeMap;

use pretty_assertions::assert_eq;
use tau_core::EventBus;
use tau_mcp::{McpConfig, ServerEntry};

/// tau's environment, as data: secrets included.
fn parent_env(name: &str) -> Option<String> {
    let value = match name {
        "PATH" => return std::env::var("PATH").ok(),
        "HOME" => "/home/ada",
        "LANG" => "C.UTF-8",
        "LC_ALL" => "tr_TR.UTF-8",
        "OPENAI_API_KEY" => "sk-openai-secret",
        "ANTHROPIC_API_KEY" => "sk-ant-secret",
        "AWS_BEARER_TOKEN_BEDROCK" => "bedrock-secret",
        "TAU_MCP_TOKEN" => "mcp-secret",
        "TAU_MQTT_PASSWORD" => "mqtt-secret",
        "GITHUB_TOKEN" => "gh-token",
        _ => return None,
    };
    Some(value.to_owned())
}

#[tokio::test]
async fn a_server_program_sees_the_allow_list_and_what_its_entry_names_only() {
    let dir = tempfile::tempdir().unwrap();
    let dump = dir.path().join("env.txt");
    // Not an MCP server: it writes what it sees and exits, so tau skips it.
    let entry = ServerEntry {
        command: Some("sh".into()),
        args: vec!["-c".into(), format!("env > '{}'", dump.display())],
        env: BTreeMap::from([("LOG_LEVEL".into(), "warn".into())]),
        pass_env: vec!["GITHUB_TOKEN".into()],
        startup_timeout_seconds: 10.0,
        ..ServerEntry::default()
    };
    let config = McpConfig {
        servers: BTreeMap::from([("dump".into(), entry)]),
        ..McpConfig::default()
    };
    assert_eq!(config.validate(), Ok(()));

    let place = tau_mcp::Place {
        sandbox: tau_sandbox::Sandbox::Off,
        workspace: dir.path().to_owned(),
    };
    let tools = tau_mcp::connect_servers(&config, &EventBus::new(), &parent_env, &place).await;

    assert!(tools.tools.is_empty());
    assert_eq!(tools.warnings.len(), 1, "{:?}", tools.warnings);
    let mut seen: Vec<String> = std::fs::read_to_string(&dump)
        .unwrap()
        .lines()
        // What the shell sets itself.
        .filter(|line| {
            !["PWD=", "OLDPWD=", "SHLVL=", "_="]
                .iter()
                .any(|p| line.starts_with(p))
        })
        .map(str::to_owned)
        .collect();
    seen.sort();
    let mut expected = vec![
        "GITHUB_TOKEN=gh-token".to_owned(),
        "HOME=/home/ada".to_owned(),
        "LANG=C.UTF-8".to_owned(),
        "LC_ALL=tr_TR.UTF-8".to_owned(),
        "LOG_LEVEL=warn".to_owned(),
        format!("PATH={}", std::env::var("PATH").unwrap()),
    ];
    expected.sort();
    assert_eq!(seen, expected);
}
