//! The accept loop: HTTP/1.1 with a deadline for the request head, a cap on
//! connections, and a stop that ends every connection (event streams included).

use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// A client that has not sent its request head by then is dropped.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections served at once; more wait in the listen queue.
const MAX_CONNECTIONS: usize = 256;
/// How long a stop waits for connections to finish what they were answering.
const STOP_GRACE: Duration = Duration::from_secs(3);

pub(crate) async fn serve(listener: TcpListener, router: Router, stop: CancellationToken) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            () = stop.cancelled() => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            accepted = listener.accept(), if connections.len() < MAX_CONNECTIONS => match accepted {
                Ok((stream, _)) => {
                    let service = TowerToHyperService::new(router.clone());
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
