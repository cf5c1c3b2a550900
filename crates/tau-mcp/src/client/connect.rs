//! Starting or reaching one MCP server and listing its tools, each step bounded by the
//! server's timeout.

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, ProtocolVersion, Tool};
use rmcp::service::{RoleClient, RunningService, ServiceExt};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, Peer};

use crate::client::spawn::{ServerProgram, log_stderr};
use crate::config::Endpoint;
use crate::error::McpError;

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
) -> Result<(Arc<Connection>, Vec<Tool>), McpError> {
    let service = bounded(server, timeout, "start", start(server, endpoint, env)).await??;
    let connection = Arc::new(Connection {
        server: server.to_owned(),
        service,
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
) -> Result<RunningService<RoleClient, TauClient>, McpError> {
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
        } => {
            // A session of its own, pipes only, the allow-listed environment (see `spawn`).
            let started = ServerProgram::new(program, args, values, pass_env, env)
                .map(|server| server.command())
                .and_then(|command| {
                    TokioChildProcess::builder(command)
                        .stderr(Stdio::piped())
                        .spawn()
                });
            let (transport, stderr) =
                started.map_err(|e| failed(format!("cannot start {program:?}: {e}")))?;
            // Its own diagnostics would break into the chat: they go to the log.
            if let Some(stderr) = stderr {
                log_stderr(server, stderr);
            }
            TauClient
                .serve(transport)
                .await
                .map_err(|e| failed(format!("did not start speaking MCP: {e}")))
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
            TauClient
                .serve(transport)
                .await
                .map_err(|e| failed(format!("cannot connect to {url}: {e}")))
        }
    }
}
