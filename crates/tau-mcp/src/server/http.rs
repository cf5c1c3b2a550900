//! `tau mcp --http ADDR`: streamable HTTP at `/mcp`, one gate per MCP session.
//!
//! There is no way to serve without a bearer token: every request without
//! `Authorization: Bearer <token>` gets 401 before the MCP layer sees it, on loopback too,
//! where any local process could otherwise connect, answer its own elicitation and run
//! tier-2 tools. Where the token comes from is the caller's business.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, LengthLimitError, Limited, combinators::BoxBody};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::{Connection, McpServer};
use crate::error::McpError;
use crate::server::stdio::{INVALID_REQUEST, PARSE_ERROR};

/// The one path tau serves.
pub const MCP_PATH: &str = "/mcp";
const HEADER_TIMEOUT: Duration = Duration::from_secs(30);

type Body = BoxBody<Bytes, Infallible>;

/// Where and how `tau mcp --http` listens.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    pub addr: SocketAddr,
    /// The bearer token every request must carry.
    pub token: String,
    pub max_message_bytes: usize,
}

struct Front {
    token: String,
    max_message_bytes: usize,
    mcp: StreamableHttpService<Connection, LocalSessionManager>,
}

impl Front {
    async fn route(&self, request: Request<Incoming>) -> Response<Body> {
        if request.uri().path() != MCP_PATH {
            return plain(StatusCode::NOT_FOUND, "tau serves MCP at /mcp\n");
        }
        if !bearer_matches(request.headers().get(header::AUTHORIZATION), &self.token) {
            let mut response = plain(StatusCode::UNAUTHORIZED, "a bearer token is required\n");
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                http::HeaderValue::from_static("Bearer"),
            );
            return response;
        }
        if request.method() != http::Method::POST {
            return self.mcp.handle(request).await;
        }
        // A body that is too large or not JSON gets a JSON-RPC error, as on stdio; the SDK
        // answers everything else, malformed requests and unknown methods included.
        let (parts, body) = request.into_parts();
        let bytes = match Limited::new(body, self.max_message_bytes).collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(error) if error.is::<LengthLimitError>() => {
                return rpc_error(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    INVALID_REQUEST,
                    &format!(
                        "Invalid request: a message may have at most {} bytes",
                        self.max_message_bytes
                    ),
                );
            }
            Err(error) => {
                tracing::debug!(%error, "cannot read an MCP request body");
                return rpc_error(
                    StatusCode::BAD_REQUEST,
                    INVALID_REQUEST,
                    "Invalid request: the body could not be read",
                );
            }
        };
        if let Err(error) = serde_json::from_slice::<serde_json::Value>(&bytes) {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                PARSE_ERROR,
                &format!("Parse error: {error}"),
            );
        }
        self.mcp
            .handle(Request::from_parts(parts, Full::new(bytes)))
            .await
    }
}

fn rpc_error(status: StatusCode, code: i64, message: &str) -> Response<Body> {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}});
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
}

/// An empty token would let `Authorization: Bearer ` in.
fn check_token(token: &str) -> Result<(), McpError> {
    if token.trim().is_empty() {
        Err(McpError::Serve(
            "an empty bearer token protects nothing; refusing to serve".into(),
        ))
    } else {
        Ok(())
    }
}

/// Compares in time independent of where the first difference is.
fn bearer_matches(header: Option<&http::HeaderValue>, token: &str) -> bool {
    let Some(given) = header
        .and_then(|h| h.to_str().ok())
        .and_then(|h| h.strip_prefix("Bearer "))
    else {
        return false;
    };
    let (a, b) = (given.as_bytes(), token.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn plain(status: StatusCode, text: &'static str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from_static(text.as_bytes())).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// Serves until `shutdown` resolves. `ready` receives the bound address (port 0 picks one).
pub async fn serve_http(
    server: Arc<McpServer>,
    options: HttpOptions,
    ready: impl FnOnce(SocketAddr),
    shutdown: impl Future<Output = ()>,
) -> Result<(), McpError> {
    check_token(&options.token)?;
    let listener = TcpListener::bind(options.addr)
        .await
        .map_err(|e| McpError::Serve(format!("cannot listen on {}: {e}", options.addr)))?;
    let bound = listener
        .local_addr()
        .map_err(|e| McpError::Serve(format!("cannot listen on {}: {e}", options.addr)))?;
    let stop = CancellationToken::new();
    let mut config = StreamableHttpServerConfig::default()
        .with_max_request_body_bytes(options.max_message_bytes)
        .with_cancellation_token(stop.clone());
    if !bound.ip().is_loopback() {
        // Host checks guard loopback servers against DNS rebinding; off loopback the
        // bearer token is the guard, and clients name the host however they reach it.
        config = config.disable_allowed_hosts();
    }
    let mcp = StreamableHttpService::new(
        move || Ok(server.connection()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let front = Arc::new(Front {
        token: options.token,
        max_message_bytes: options.max_message_bytes,
        mcp,
    });
    ready(bound);
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    tracing::warn!(%error, "cannot accept an MCP connection");
                    continue;
                }
            },
        };
        let front = Arc::clone(&front);
        tokio::spawn(async move {
            let service = service_fn(move |request| {
                let front = Arc::clone(&front);
                async move { Ok::<_, Infallible>(front.route(request).await) }
            });
            let served = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .serve_connection(TokioIo::new(stream), service)
                .await;
            if let Err(error) = served {
                tracing::debug!(%peer, %error, "MCP HTTP connection ended");
            }
        });
    }
    stop.cancel();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn an_empty_token_is_refused() {
        assert_eq!(check_token("s3cret"), Ok(()));
        for empty in ["", " "] {
            assert_eq!(
                check_token(empty),
                Err(McpError::Serve(
                    "an empty bearer token protects nothing; refusing to serve".into()
                ))
            );
        }
        let header = http::HeaderValue::from_static("Bearer ");
        assert!(bearer_matches(Some(&header), ""), "why the check exists");
    }

    #[test]
    fn only_the_exact_bearer_token_passes() {
        let header = |v: &str| http::HeaderValue::from_str(v).unwrap();
        assert!(bearer_matches(Some(&header("Bearer s3cret")), "s3cret"));
        for wrong in [
            "Bearer s3cre",
            "Bearer s3cret ",
            "bearer s3cret",
            "Basic s3cret",
            "s3cret",
            "",
        ] {
            assert!(!bearer_matches(Some(&header(wrong)), "s3cret"), "{wrong:?}");
        }
        assert!(!bearer_matches(None, "s3cret"));
    }
}
