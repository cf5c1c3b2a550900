//! Starting or reaching one MCP server and listing its tools, each step bounded by the
//! server's timeout.

use std::ffi::OsStr;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, ProtocolVersion, Tool};
use rmcp::service::{RoleClient, RunningService, ServiceExt};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, Peer};

use tau_sandbox::{Sandbox, SandboxError, SandboxMode, Started};

use crate::config::Endpoint;
use crate::error::McpError;

/// Where servers started as programs run: the sandbox (or none) and the workspace, the
/// one place a sandboxed server may write.
#[derive(Debug, Clone)]
pub struct Place {
    pub sandbox: Sandbox,
    pub workspace: PathBuf,
}

/// How tau introduces itself to servers. It declares no capabilities: a server can never
/// ask tau's user anything or make tau's model write for it.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct TauClient;

impl ClientHandler for TauClient {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("tau", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }
}

/// A live connection. Dropping the last handle closes it (and stops the program).
pub(crate) struct Connection {
    pub server: String,
    service: RunningService<RoleClient, TauClient>,
    /// A sandboxed program's private temp dir, removed with the connection.
    _sandbox: Option<Started>,
}

impl Connection {
    pub(crate) fn peer(&self) -> &Peer<RoleClient> {
        self.service.peer()
    }
}

/// Connects to `server` and lists its tools, all within `timeout`.
pub(crate) async fn connect(
    server: &str,
    endpoint: &Endpoint,
    timeout: Duration,
    env: &dyn Fn(&str) -> Option<String>,
    place: &Place,
) -> Result<(Arc<Connection>, Vec<Tool>), McpError> {
    let (service, sandbox) = bounded(
        server,
        timeout,
        "start",
        start(server, endpoint, env, place),
    )
    .await??;
    let connection = Arc::new(Connection {
        server: server.to_owned(),
        service,
        _sandbox: sandbox,
    });
    let tools = bounded(
        server,
        timeout,
        "list its tools",
        connection.peer().list_all_tools(),
    )
    .await?
    .map_err(|e| McpError::Server {
        server: server.to_owned(),
        message: format!("cannot list its tools: {e}"),
    })?;
    Ok((connection, tools))
}

/// Why a server was not started: the sandbox could not be set up.
fn sandbox_refused_text(server: &str, error: &tau_sandbox::SandboxError) -> String {
    format!(
        "was not started: the sandbox could not be set up ({error}); `tau doctor` shows what \
         this machine has, and `sandbox = \"off\"` under [mcp.servers.{server}] starts it \
         without one"
    )
}

async fn bounded<T>(
    server: &str,
    timeout: Duration,
    what: &str,
    future: impl Future<Output = T>,
) -> Result<T, McpError> {
    tokio::time::timeout(timeout, future)
        .await
        .map_err(|_| McpError::Server {
            server: server.to_owned(),
            message: format!(
                "did not {what} within {} s",
                crate::client::tool::seconds(timeout)
            ),
        })
}

async fn start(
    server: &str,
    endpoint: &Endpoint,
    env: &dyn Fn(&str) -> Option<String>,
    place: &Place,
) -> Result<(RunningService<RoleClient, TauClient>, Option<Started>), McpError> {
    let failed = |message: String| McpError::Server {
        server: server.to_owned(),
        message,
    };
    match endpoint {
        Endpoint::Command {
            program,
            args,
            env: values,
            pass_env,
            sandbox,
            network,
        } => {
            // The allow-list, what the config passes on, then what it sets (the later
            // wins): never the rest of tau's environment, which holds its keys and tokens.
            let mut all_env = tau_core::child_env(pass_env, env);
            all_env.extend(values.iter().map(|(n, v)| (n.clone(), v.clone())));
            let (mut command, pending) = match (&place.sandbox, sandbox) {
                (Sandbox::On(confinement), SandboxMode::On) => {
                    let prepared = confinement
                        .command(
                            OsStr::new(program),
                            args.iter().map(OsStr::new),
                            &place.workspace,
                            all_env.iter().map(|(n, v)| (n.as_str(), v.as_str())),
                            *network,
                            true,
                        )
                        .map_err(|e| match e {
                            SandboxError::NotFound(e) => {
                                failed(format!("cannot start {program:?}: {e}"))
                            }
                            e => failed(sandbox_refused_text(server, &e)),
                        })?;
                    (prepared.command, Some(prepared.pending))
                }
                (Sandbox::On(_) | Sandbox::Off, SandboxMode::On | SandboxMode::Off) => {
                    let mut command = tokio::process::Command::new(program);
                    command.args(args).env_clear().envs(all_env);
                    (command, None)
                }
            };
            command.kill_on_drop(true);
            // The server's own diagnostics would break into the chat; they are dropped (in
            // the sandbox, the launcher's report comes first on the same stream).
            let stderr = if pending.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            };
            let (transport, report) = TokioChildProcess::builder(command)
                .stderr(stderr)
                .spawn()
                .map_err(|e| failed(format!("cannot start {program:?}: {e}")))?;
            let started = match (pending, report) {
                (Some(pending), Some(mut report)) => {
                    let started = pending
                        .started_on(&mut report)
                        .await
                        .map_err(|e| failed(sandbox_refused_text(server, &e)))?;
                    // The server's own diagnostics follow; they would break into the chat.
                    tokio::spawn(async move {
                        let _ = tokio::io::copy(&mut report, &mut tokio::io::sink()).await;
                    });
                    Some(started)
                }
                (Some(_), None) => {
                    return Err(failed(
                        "was not started: its sandbox's report could not be read".to_owned(),
                    ));
                }
                (None, _) => None,
            };
            let service = TauClient
                .serve(transport)
                .await
                .map_err(|e| failed(format!("did not start speaking MCP: {e}")))?;
            Ok((service, started))
        }
        Endpoint::Url { url, token_env } => {
            let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
            if let Some(var) = token_env {
                let token = env(var)
                    .filter(|t| !t.is_empty())
                    .ok_or_else(|| failed(format!("its token variable {var} is not set")))?;
                config = config.auth_header(token);
            }
            let transport = StreamableHttpClientTransport::from_config(config);
            let service = TauClient
                .serve(transport)
                .await
                .map_err(|e| failed(format!("cannot connect to {url}: {e}")))?;
            Ok((service, None))
        }
    }
}
