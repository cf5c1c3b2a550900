//! The accept loop: HTTP/1.1 through hyper, whose `header_read_timeout` bounds every
//! request head, also the wait for the next one on a kept-alive connection (so an idle or
//! trickling client is dropped within [`HEADER_TIMEOUT`]); the rest of a request (its
//! body) is bounded by the router's timeout (`lib.rs`). Connections are capped from the
//! open-files limit, in total and, while unproven, in total and per peer (`peers.rs`), so
//! no flood without the token can keep the person's requests waiting or leave tau without
//! descriptors. A stop ends every connection, event streams included.

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

use crate::peers::{Caps, Peers};

/// A client that has not sent a whole request head by then is dropped; so is a
/// kept-alive connection that sends no next request.
pub(crate) const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a stop waits for connections to finish what they were answering.
const STOP_GRACE: Duration = Duration::from_secs(3);
/// Connections the system keeps for tau before it accepts them. The usual 128 is
/// overrun by one burst of connections, and the kernel then drops the next ones, the
/// person's among them, for a second or more.
const LISTEN_BACKLOG: u32 = 1024;
/// After an accept failed, so a lasting failure does not spin; shorter when an unproven
/// connection was closed to free a descriptor.
const ACCEPT_PAUSE: Duration = Duration::from_millis(100);
const ACCEPT_PAUSE_FREED: Duration = Duration::from_millis(10);

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

/// Where the hard open-files limit is unlimited, the soft one is raised to this (Linux's
/// default `fs.nr_open`).
const OPEN_FILES_CEILING: u64 = 1 << 20;

/// Raises the soft open-files limit to the hard one (said in the log at debug), before
/// TauBar is bound. Its caps on connections are computed from it and leave half of it to
/// tau's own work (its database and logs, commands and their pipes, MCP servers); the
/// usual soft limit of 1,024 would leave both little room.
pub fn raise_open_files_limit() {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    let Some(soft) = limit.current else {
        tracing::debug!("open files limit: unlimited");
        return;
    };
    let hard = limit.maximum.unwrap_or(OPEN_FILES_CEILING);
    if soft >= hard {
        tracing::debug!(soft, "open files limit already at the hard limit");
        return;
    }
    let raised = Rlimit {
        current: Some(hard),
        maximum: limit.maximum,
    };
    match setrlimit(Resource::Nofile, raised) {
        Ok(()) => tracing::debug!(
            from = soft,
            to = hard,
            "open files limit raised to the hard limit"
        ),
        Err(error) => tracing::debug!(soft, hard, %error, "open files limit not raised"),
    }
}

/// This process's open-files limit now (`tau serve` raised it to the hard limit).
fn open_files_limit() -> u64 {
    rustix::process::getrlimit(rustix::process::Resource::Nofile)
        .current
        .unwrap_or(u64::MAX)
}

/// Whether an accept failed for want of descriptors (the process's or the system's).
fn out_of_descriptors(error: &std::io::Error) -> bool {
    use rustix::io::Errno;
    Errno::from_io_error(error).is_some_and(|errno| errno == Errno::MFILE || errno == Errno::NFILE)
}

pub(crate) async fn serve(listener: TcpListener, router: Router, stop: CancellationToken) {
    let open_files = open_files_limit();
    let caps = Caps::for_open_files(open_files);
    tracing::debug!(
        open_files,
        connections = caps.connections,
        unproven = caps.unproven,
        unproven_per_peer = caps.per_peer,
        "web connections capped"
    );
    let peers = Arc::new(Peers::new(caps));
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            () = stop.cancelled() => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            accepted = listener.accept(), if connections.len() < caps.connections => match accepted {
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
                            // A newer unproven connection took its place.
                            () = dropped.cancelled() => {}
                            () = stop.cancelled() => {
                                connection.as_mut().graceful_shutdown();
                                let _ = tokio::time::timeout(STOP_GRACE, connection).await;
                            }
                        }
                    });
                }
                Err(error) => {
                    tracing::warn!(%error, "cannot accept a web connection");
                    // tau's own work holds more descriptors than the caps leave it: an
                    // unproven connection gives its up, never a proven one.
                    let freed = out_of_descriptors(&error) && peers.close_oldest();
                    tokio::time::sleep(if freed { ACCEPT_PAUSE_FREED } else { ACCEPT_PAUSE }).await;
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
