//! `tau mcp` over stdin and stdout, one JSON-RPC message a line.
//!
//! A front door reads the lines first: a line too long or not JSON at all gets a JSON-RPC
//! error back (the SDK would drop it without a word) and the next line is read as usual.
//! Everything else goes on to the SDK, which answers malformed requests and unknown
//! methods itself.

use std::sync::Arc;

use rmcp::ServiceExt;
use serde_json::{Value, json};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use super::McpServer;
use crate::error::McpError;

pub(crate) const PARSE_ERROR: i64 = -32700;
pub(crate) const INVALID_REQUEST: i64 = -32600;
const PIPE_BYTES: usize = 64 * 1024;

/// Serves one client on stdin and stdout until stdin ends.
pub async fn serve_stdio(server: Arc<McpServer>, max_message_bytes: usize) -> Result<(), McpError> {
    serve(
        server,
        tokio::io::stdin(),
        tokio::io::stdout(),
        max_message_bytes,
    )
    .await
}

/// Serves one client on any pair of streams (stdio in `tau mcp`, pipes in tests).
pub async fn serve<R, W>(
    server: Arc<McpServer>,
    input: R,
    output: W,
    max_message_bytes: usize,
) -> Result<(), McpError>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (to_sdk, sdk_in) = tokio::io::duplex(PIPE_BYTES);
    let (sdk_out, from_sdk) = tokio::io::duplex(PIPE_BYTES);
    let (errors, error_lines) = mpsc::unbounded_channel();
    let reader = tokio::spawn(front_door(
        BufReader::new(input),
        to_sdk,
        errors,
        max_message_bytes,
    ));
    let writer = tokio::spawn(merge_out(BufReader::new(from_sdk), error_lines, output));
    let running = server
        .connection()
        .serve((sdk_in, sdk_out))
        .await
        .map_err(|e| McpError::Serve(format!("the MCP session did not start: {e}")));
    let result = match running {
        Ok(running) => running
            .waiting()
            .await
            .map(drop)
            .map_err(|e| McpError::Serve(format!("the MCP session failed: {e}"))),
        Err(error) => Err(error),
    };
    reader.abort();
    let _ = writer.await;
    result
}

/// Reads lines of at most `max` bytes; answers the ones that are too long or not JSON and
/// passes the rest on.
async fn front_door<R: AsyncBufRead + Unpin>(
    mut input: R,
    mut to_sdk: impl AsyncWrite + Unpin,
    errors: mpsc::UnboundedSender<String>,
    max: usize,
) {
    let mut line = Vec::new();
    loop {
        line.clear();
        let (ended, too_long) = match read_bounded_line(&mut input, &mut line, max).await {
            Ok(read) => read,
            Err(error) => {
                tracing::warn!(%error, "cannot read from the MCP client");
                return;
            }
        };
        if too_long {
            tracing::warn!(
                max,
                "a message from the MCP client was too long; it was answered with an error"
            );
            let _ = errors.send(error_line(
                INVALID_REQUEST,
                &format!("Invalid request: a message may have at most {max} bytes"),
            ));
        } else if !line.iter().all(u8::is_ascii_whitespace) {
            match serde_json::from_slice::<Value>(&line) {
                Ok(_) => {
                    line.push(b'\n');
                    if to_sdk.write_all(&line).await.is_err() {
                        return;
                    }
                }
                Err(error) => {
                    tracing::warn!(%error, "a message from the MCP client was not JSON");
                    let _ = errors.send(error_line(PARSE_ERROR, &format!("Parse error: {error}")));
                }
            }
        }
        if ended {
            // Closing the pipe ends the session after the answers already on their way.
            let _ = to_sdk.shutdown().await;
            return;
        }
    }
}

/// Reads one line into `line` without keeping more than `max` bytes of it. Returns
/// (input ended, line was too long).
async fn read_bounded_line<R: AsyncBufRead + Unpin>(
    input: &mut R,
    line: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<(bool, bool)> {
    let mut too_long = false;
    loop {
        let buffer = input.fill_buf().await?;
        if buffer.is_empty() {
            return Ok((true, too_long));
        }
        let (chunk, found) = match buffer.iter().position(|b| *b == b'\n') {
            Some(at) => (buffer.get(..at).unwrap_or_default(), Some(at)),
            None => (buffer, None),
        };
        if !too_long && line.len() + chunk.len() <= max {
            line.extend_from_slice(chunk);
        } else {
            too_long = true;
            line.clear();
        }
        let used = found.map_or(buffer.len(), |at| at + 1);
        input.consume(used);
        if found.is_some() {
            return Ok((false, too_long));
        }
    }
}

fn error_line(code: i64, message: &str) -> String {
    json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}}).to_string()
}

/// Writes whole lines, from the SDK and from the front door, so they never interleave.
async fn merge_out(
    mut from_sdk: impl AsyncBufRead + Unpin,
    mut errors: mpsc::UnboundedReceiver<String>,
    mut output: impl AsyncWrite + Unpin,
) {
    // A line the SDK has only partly written stays in `line` while an error line goes out.
    let mut line = Vec::new();
    let mut errors_open = true;
    loop {
        let written = tokio::select! {
            read = from_sdk.read_until(b'\n', &mut line) => match read {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    let written = write_line(&mut output, &line).await;
                    line.clear();
                    written
                }
            },
            error = errors.recv(), if errors_open => match error {
                Some(text) => write_line(&mut output, format!("{text}\n").as_bytes()).await,
                None => {
                    errors_open = false;
                    true
                }
            },
        };
        if !written {
            break;
        }
    }
}

async fn write_line(output: &mut (impl AsyncWrite + Unpin), bytes: &[u8]) -> bool {
    output.write_all(bytes).await.is_ok() && output.flush().await.is_ok()
}
