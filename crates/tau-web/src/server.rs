//! The accept loop: HTTP/1.1 through hyper, whose `header_read_timeout` bounds every
//! request head, also the wait for the next one on a kept-alive connection (so an idle or
//! trickling client is dropped within [`HEADER_TIMEOUT`]); the rest of a request (its
//! body) is bounded by the router's timeout (`lib.rs`). Connections are capped in total
//! and, while unproven, per peer address (`peers.rs`), so no flood from one address can
//! keep the person's requests waiting. A stop ends every connection, event streams
//! included.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpSocket};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use crate::peers::Peers;

/// A client that has not sent a whole request head by then is dropped; so is a
/// kept-alive connection that sends no next request.
pub(crate) const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections served at once, over every peer; more wait in the listen queue. Far above
/// what one person's browsers and scripts open, far below the open-files limit `tau
/// serve` asks for.
const MAX_CONNECTIONS: usize = 4096;
/// How long a stop waits for connections to finish what they were answering.
const STOP_GRACE: Duration = Duration::from_secs(3);
/// Connections the system keeps for tau before it accepts them. The usual 128 is
/// overrun by one burst of connections, and the kernel then drops the next ones, the
/// person's among them, for a second or more.
const LISTEN_BACKLOG: u32 = 1024;

/// Binds `addr` with room for a burst of connections.
pub(crate) fn listen(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}

pub(crate) async fn serve(listener: TcpListener, router: Router, stop: CancellationToken) {
    let peers = Arc::new(Peers::default());
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            () = stop.cancelled() => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            accepted = listener.accept(), if connections.len() < MAX_CONNECTIONS => match accepted {
                Ok((stream, peer)) => {
                    let connection = peers.admit(peer);
                    let dropped = connection.dropped.clone();
                    // Every request carries its connection: the checks prove it, a webhook
                    // names its sender by it.
                    let router = router.clone().map_request(move |mut request: http::Request<hyper::body::Incoming>| {
                        request.extensions_mut().insert(Arc::clone(&connection));
                        request
                    });
                    let service = TowerToHyperService::new(router);
                    let stop = stop.clone();
                    connections.spawn(async move {
                        let connection = http1::Builder::new()
                            .timer(TokioTimer::new())
                            .header_read_timeout(HEADER_TIMEOUT)
                            .serve_connection(TokioIo::new(stream), service);
                        tokio::pin!(connection);
                        tokio::select! {
                            result = connection.as_mut() => {
                                if let Err(error) = result {
                                    tracing::debug!(%error, "web connection ended");
                                }
                            }
                            // A newer unproven connection of the same peer took its place.
                            () = dropped.cancelled() => {}
                            () = stop.cancelled() => {
                                connection.as_mut().graceful_shutdown();
                                let _ = tokio::time::timeout(STOP_GRACE, connection).await;
                            }
                        }
                    });
                }
                Err(error) => {
                    // Out of file descriptors, most likely: let some connections end.
                    tracing::warn!(%error, "cannot accept a web connection");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
        }
    }
    let _ = tokio::time::timeout(STOP_GRACE, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    connections.abort_all();
}
