//! What can go wrong in tau-mcp, in words a person can act on.

/// A server that could not be used, or a `tau mcp` that could not start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpError {
    /// An MCP server tau uses failed: it did not start, answer or list its tools.
    #[error("MCP server '{server}' {message}")]
    Server { server: String, message: String },
    /// `tau mcp --http` was asked for something unsafe or impossible.
    #[error("{0}")]
    Serve(String),
}
