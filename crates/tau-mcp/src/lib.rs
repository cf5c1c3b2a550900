//! tau-mcp: tau and the Model Context Protocol, in both directions.
//!
//! Owns `tau mcp` (tau's tool catalog served over stdio or streamable HTTP, every
//! `tools/call` decided by a `TierGate` of its own connection, approvals asked back through
//! `elicitation/create`) and the MCP client that turns the tools of configured servers into
//! tau tools, with tiers from tau's own manifest. Must not know the agent loop, channels or
//! model providers: the server calls the gate directly, and the client hands plain tools to
//! whoever builds the catalog. A peer's claims (a `tau` annotation, `readOnlyHint`) never
//! choose a tier.
//!
//! Layout
//! - `config.rs`: `[mcp.server]` and `[mcp.servers.NAME]`, tier manifests
//! - `server/`: the handler and its gate, the elicitation approver, stdio and HTTP
//! - `client/`: connecting to servers, adopting their tools, calling them with a timeout
//! - `names.rs`: `NAME__TOOL` names and names shown on one line

mod client;
mod config;
mod error;
mod names;
mod server;

pub use client::{McpTools, McpWarning, Place, connect_servers};
pub use config::{Endpoint, Manifest, McpConfig, ServeConfig, ServerEntry};
pub use error::McpError;
pub use server::McpServer;
pub use server::http::{HttpOptions, MCP_PATH, serve_http};
pub use server::stdio::{serve, serve_stdio};
