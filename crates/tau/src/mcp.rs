//! `tau mcp`: tau's tools for an MCP client, on stdio or streamable HTTP, with the same
//! home, config and audit log as `tau chat`. Nothing but protocol goes to stdout.

use std::net::SocketAddr;
use std::sync::Arc;

use tau_mcp::{HttpOptions, MCP_PATH, McpServer, check_exposure, serve_http, serve_stdio};

use crate::audit::AuditLog;
use crate::context::Context;
use crate::errors::usage;

/// The `session` of this command's audit lines.
const AUDIT_SESSION: &str = "mcp";

pub(crate) async fn run(ctx: &Context, http: Option<SocketAddr>) -> anyhow::Result<()> {
    let config = &ctx.loaded.config;
    let max_message_bytes = config.mcp.server.max_message_bytes;
    // Refuse an exposed address before anything starts.
    let http = match http {
        Some(addr) => {
            let options = HttpOptions {
                addr,
                token: token(ctx)?,
                max_message_bytes,
            };
            check_exposure(&options).map_err(|e| usage(e.to_string()))?;
            Some(options)
        }
        None => None,
    };
    ctx.home.create()?;
    crate::logging::init(&ctx.home, &*ctx.env)?;
    ctx.events.subscribe(Arc::new(AuditLog::open(
        &ctx.home.audit_log(),
        AUDIT_SESSION,
    )?));
    let tools = ctx.catalog().await?;
    for event in &tools.startup_errors {
        ctx.events.emit(event);
    }
    let server = McpServer::new(
        tools.catalog,
        ctx.events.clone(),
        config.approval.timeout(),
        config.mcp.server.elicitation_timeout(),
    );
    match http {
        None => serve_stdio(server, max_message_bytes).await?,
        Some(options) => {
            let ready = |bound: SocketAddr| eprintln!("tau mcp: serving http://{bound}{MCP_PATH}");
            let stop = async {
                let _ = tokio::signal::ctrl_c().await;
            };
            serve_http(server, options, ready, stop).await?;
        }
    }
    Ok(())
}

/// The bearer token named by `[mcp.server] token_env`. A variable that is named but unset
/// is a mistake, not a reason to serve without one.
fn token(ctx: &Context) -> anyhow::Result<Option<String>> {
    match &ctx.loaded.config.mcp.server.token_env {
        None => Ok(None),
        Some(var) => (ctx.env)(var)
            .filter(|t| !t.trim().is_empty())
            .map(Some)
            .ok_or_else(|| {
                usage(format!(
                    "mcp.server.token_env: the environment variable {var} is not set or empty"
                ))
            }),
    }
}
