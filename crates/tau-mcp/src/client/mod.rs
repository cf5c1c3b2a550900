//! MCP servers as tool providers: every configured server is started (or reached), its
//! tools listed and adopted with the tier tau's manifest gives them. A server's own claims
//! (a `tau` annotation, `readOnlyHint`) never choose a tier.

mod connect;
mod spawn;
pub(crate) mod tool;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;

use rmcp::model::Tool as RemoteTool;
use serde_json::Value;
use tau_agent::{SharedTool, ToolSpec};
use tau_core::{AuditEvent, CardWriter, ErrorSite, EventBus, adopt_external_spec};
use tau_protocol::{CallCard, CardNote};
use tau_sandbox::Allowance;

use crate::config::{Manifest, McpConfig, ServerEntry};
use crate::names;
use connect::Connection;
pub use connect::Place;
use tool::McpTool;

/// The tools of every server that answered, and what a person should be told.
#[derive(Default)]
pub struct McpTools {
    /// In server order, then in the order each server listed them.
    pub tools: Vec<SharedTool>,
    pub warnings: Vec<McpWarning>,
    /// The tools of servers tau started as programs: their server and what its sandbox
    /// allows it (or that it has none).
    pub programs: BTreeMap<String, (String, Allowance)>,
}

impl McpTools {
    /// Writes on the question of a program server's tool what its sandbox allows it.
    pub fn card_writer(&self) -> Arc<dyn CardWriter> {
        let programs = self.programs.clone();
        Arc::new(move |tool: &str, _arguments: &Value, card: &mut CallCard| {
            if let Some((server, allowance)) = programs.get(tool) {
                let text = format!("the MCP server {server}: {}", allowance.describe());
                card.push(if allowance.is_full() {
                    CardNote::info("sandbox", text)
                } else {
                    CardNote::warning("sandbox", text)
                });
            }
        })
    }
}

/// Something about a server that a person should read at start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpWarning {
    pub server: String,
    /// A whole sentence, naming the server.
    pub message: String,
    /// The server could not be used at all; the chat goes on without its tools.
    pub skipped: bool,
}

impl fmt::Display for McpWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        if self.skipped {
            f.write_str("; going on without its tools")?;
        }
        Ok(())
    }
}

impl McpWarning {
    /// The error event for a server that was skipped, for the audit log.
    pub fn event(&self) -> Option<AuditEvent> {
        self.skipped
            .then(|| AuditEvent::error(ErrorSite::McpServer, self.message.clone(), None, None))
    }
}

/// Connects to every configured server at once. A server that fails is skipped with a
/// warning; nothing here fails the whole set. `env` reads token variables and what a
/// server's program may see of tau's environment.
pub async fn connect_servers(
    config: &McpConfig,
    events: &EventBus,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
    place: &Place,
) -> McpTools {
    let attempts = config.servers.iter().map(|(name, entry)| async move {
        let result = match (entry.endpoint(name), entry.manifest(name)) {
            (Ok(endpoint), Ok(manifest)) => {
                connect::connect(name, &endpoint, entry.startup_timeout(), env, place)
                    .await
                    .map(|(connection, listed)| (connection, listed, manifest))
                    .map_err(|e| e.to_string())
            }
            (Err(e), _) | (_, Err(e)) => Err(format!("MCP server '{name}' is misconfigured: {e}")),
        };
        (name.as_str(), entry, result)
    });
    let mut out = McpTools::default();
    for (name, entry, result) in futures::future::join_all(attempts).await {
        match result {
            Ok((connection, listed, manifest)) => {
                adopt_tools(&mut out, &connection, &listed, &manifest, entry, events);
            }
            Err(message) => out.push(McpWarning {
                server: name.to_owned(),
                message,
                skipped: true,
            }),
        }
    }
    out
}

impl McpTools {
    /// `message` goes on from "MCP server 'NAME' ".
    fn warn(&mut self, server: &str, message: &str, skipped: bool) {
        self.push(McpWarning {
            server: server.to_owned(),
            message: format!("MCP server '{server}' {message}"),
            skipped,
        });
    }

    fn push(&mut self, warning: McpWarning) {
        tracing::warn!("{warning}");
        self.warnings.push(warning);
    }
}

fn adopt_tools(
    out: &mut McpTools,
    connection: &Arc<Connection>,
    listed: &[RemoteTool],
    manifest: &Manifest,
    entry: &ServerEntry,
    events: &EventBus,
) {
    let server = connection.server.as_str();
    let mut taken = BTreeSet::new();
    for remote in listed {
        let Some(name) = names::namespaced(server, &remote.name) else {
            out.warn(
                server,
                &format!(
                    "lists a tool named {:?} that cannot be made a valid tool name; it is skipped",
                    names::shown(&remote.name)
                ),
                false,
            );
            continue;
        };
        if !taken.insert(name.clone()) {
            out.warn(
                server,
                &format!(
                    "lists more than one tool that would be named {name}; only the first is used"
                ),
                false,
            );
            continue;
        }
        let tier = manifest.tier(&remote.name);
        let effect = format!(
            "calls {} on the MCP server {server}",
            names::shown(&remote.name)
        );
        let spec = adopt_external_spec(
            external_spec(&name, server, remote),
            tier,
            &effect,
            entry.provenance_rule(),
        );
        out.tools.push(Arc::new(McpTool {
            spec,
            remote: remote.name.to_string(),
            connection: Arc::clone(connection),
            timeout: entry.timeout(),
            events: events.clone(),
        }));
        if entry.command.is_some() {
            let allowance = Allowance {
                sandboxed: connection.sandboxed(),
                reduced: connection.reduced(),
                network: entry.network,
            };
            out.programs.insert(name, (server.to_owned(), allowance));
        }
    }
    for tool in manifest.tiers.keys() {
        if !listed.iter().any(|remote| remote.name == tool.as_str()) {
            out.warn(
                server,
                &format!(
                    "does not list the tool '{}' named in its tier manifest",
                    names::shown(tool)
                ),
                false,
            );
        }
    }
}

/// The spec as the server described the tool: its description, input schema and hints
/// (shown to the person, never used for the tier).
fn external_spec(name: &str, server: &str, remote: &RemoteTool) -> ToolSpec {
    let description = remote
        .description
        .as_deref()
        .or(remote.title.as_deref())
        .filter(|d| !d.trim().is_empty())
        .map_or_else(
            || format!("A tool of the MCP server {server}."),
            str::to_owned,
        );
    let annotations = remote
        .annotations
        .as_ref()
        .and_then(|a| serde_json::to_value(a).ok())
        .and_then(|v| match v {
            Value::Object(map) => Some(map),
            _ => None,
        })
        .unwrap_or_default();
    ToolSpec {
        name: name.to_owned(),
        description,
        input_schema: Value::Object(remote.input_schema.as_ref().clone()),
        annotations,
    }
}
