//! Starting or reaching one MCP server and listing its tools, each step bounded by the
//! server's timeout.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, ProtocolVersion, Tool};
use rmcp::service::{RoleClient, RunningService, ServiceExt};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, Peer};

use tau_sandbox::{Sandbox, SandboxMode, Started};

use crate::client::spawn::{ServerProgram, log_stderr};
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
    sandbox: Option<Started>,
}

impl Connection {
    pub(crate) fn peer(&self) -> &Peer<RoleClient> {
        self.service.peer()
    }

    /// Whether the program runs in the sandbox.
    pub(crate) fn sandboxed(&self) -> bool {
        self.sandbox.is_some()
    }

    /// Whether it runs in the sandbox without namespaces (`sandbox = "reduced"`).
    pub(crate) fn reduced(&self) -> bool {
        self.sandbox
            .as_ref()
            .is_some_and(|started| !started.pid_namespace)
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
        sandbox,
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
    let instead = if error.layer() == tau_sandbox::SandboxLayer::Namespaces {
        format!(
            "`sandbox = \"reduced\"` under [mcp.servers.{server}] starts it without namespaces \
             (a weaker sandbox), `sandbox = \"off\"` without one"
        )
    } else {
        format!("`sandbox = \"off\"` under [mcp.servers.{server}] starts it without one")
    };
    format!(
        "was not started: the sandbox could not be set up ({error}); `tau doctor` shows what \
         this machine has, and {instead}"
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
            // A session of its own, pipes only, the allow-listed environment (see `spawn`).
            let program_found = ServerProgram::new(program, args, values, pass_env, env)
                .map_err(|e| failed(format!("cannot start {program:?}: {e}")))?;
            let (command, pending) = match (&place.sandbox, sandbox, program_found.server()) {
                (
                    Sandbox::On(confinement),
                    mode @ (SandboxMode::On | SandboxMode::Reduced),
                    Some((found, rest)),
                ) => {
                    // The server's own "reduced" weakens tau's "on" for it alone.
                    let confinement = if *mode == SandboxMode::Reduced {
                        Arc::new(confinement.reduced())
                    } else {
                        Arc::clone(confinement)
                    };
                    // The launcher gives it a session of its own, like `setsid` does.
                    let prepared = confinement
                        .command(
                            found,
                            rest.iter().map(OsString::as_os_str),
                            &place.workspace,
                            program_found
                                .env
                                .iter()
                                .map(|(n, v)| (n.as_str(), v.as_str())),
                            *network,
                            true,
                        )
                        .map_err(|e| failed(sandbox_refused_text(server, &e)))?;
                    let mut command = prepared.command;
                    command
                        .stdin(Stdio::piped())
                        .stdout(Stdio::piped())
                        .kill_on_drop(true);
                    (command, Some(prepared.pending))
                }
                (Sandbox::On(_) | Sandbox::Off, _, _) => (program_found.command(), None),
            };
            let (transport, stderr) = TokioChildProcess::builder(command)
                .stderr(Stdio::piped())
                .spawn()
                .map_err(|e| failed(format!("cannot start {program:?}: {e}")))?;
            let Some(mut stderr) = stderr else {
                return Err(failed(
                    "was not started: its stderr is not a pipe".to_owned(),
                ));
            };
            // In the sandbox the launcher's report comes first on stderr.
            let started = match pending {
                Some(pending) => Some(
                    pending
                        .started_on(&mut stderr)
                        .await
                        .map_err(|e| failed(sandbox_refused_text(server, &e)))?,
                ),
                None => None,
            };
            // Its own diagnostics would break into the chat: they go to the log.
            log_stderr(server, stderr);
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
