//! `tau mcp`: tau's tools for an MCP client, on stdio or streamable HTTP, with the same
//! home, config and audit log as `tau chat`. Nothing but protocol goes to stdout.
//!
//! HTTP always needs a bearer token: the one `[mcp.server] token_env` names, or else one
//! tau generates into `mcp-token` in the home (loopback only: an address others can reach
//! needs a token the person chose).

use std::net::SocketAddr;
use std::sync::Arc;

use tau_mcp::{HttpOptions, MCP_PATH, McpServer, serve_http, serve_stdio};

use crate::context::Context;
use crate::errors::usage;
use tau_audit::AuditLog;

/// The `session` of this command's audit lines.
const AUDIT_SESSION: &str = "mcp";

pub(crate) async fn run(ctx: &Context, http: Option<SocketAddr>) -> anyhow::Result<()> {
    let config = &ctx.loaded.config;
    let max_message_bytes = config.mcp.server.max_message_bytes;
    // Refuse an exposed address or a missing token before anything starts.
    let configured = match http {
        Some(addr) => Some((addr, configured_token(ctx, addr)?)),
        None => None,
    };
    ctx.create_home()?;
    tau_home::logging::init(&ctx.home, &*ctx.env, tau_models::is_unscrubbed_log_target)?;
    ctx.events.subscribe(Arc::new(AuditLog::open(
        &ctx.home.audit_log(),
        AUDIT_SESSION,
        ctx.state()?.audit_anchor(),
    )?));
    let tools = ctx.catalog().await?;
    for event in &tools.startup_errors {
        ctx.events.emit(event);
    }
    let http = match configured {
        Some((addr, token)) => {
            let token = match token {
                Some(token) => token,
                None => {
                    let path = ctx.home.mcp_token();
                    let token = tau_home::token_file::load_or_create(&path)?;
                    crate::output::eprint_line(&format!(
                        "tau mcp: the bearer token is in {}",
                        path.display()
                    ));
                    token
                }
            };
            Some(HttpOptions {
                addr,
                token,
                max_message_bytes,
            })
        }
        None => None,
    };
    let server = McpServer::new(
        tools.catalog,
        ctx.events.clone(),
        config.approval.timeout(),
        config.mcp.server.elicitation_timeout(),
    );
    match http {
        None => serve_stdio(server, max_message_bytes).await?,
        Some(options) => {
            let ready = |bound: SocketAddr| {
                crate::output::eprint_line(&format!("tau mcp: serving http://{bound}{MCP_PATH}"));
            };
            let stop = async {
                let _ = tokio::signal::ctrl_c().await;
            };
            serve_http(server, options, ready, stop).await?;
        }
    }
    Ok(())
}

/// The bearer token named by `[mcp.server] token_env`, or `None` to use the generated one.
/// A variable that is named but unset is a mistake, not a reason to fall back; an address
/// off loopback needs a token the person chose.
fn configured_token(ctx: &Context, addr: SocketAddr) -> anyhow::Result<Option<String>> {
    match &ctx.loaded.config.mcp.server.token_env {
        None if addr.ip().is_loopback() => Ok(None),
        None => Err(usage(format!(
            "refusing to serve MCP on {addr}, which is not a loopback address, with a generated token: set [mcp.server] token_env to an environment variable holding a token of your own"
        ))),
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
