//! Connections by peer address. A connection is *unproven* until one of its requests
//! carries the token, the page's cookie or a webhook's secret. A peer address may hold a
//! few unproven connections at once; when it opens one more, its oldest unproven
//! connection is dropped, so a flood from one address costs that address its own
//! connections, never the person's: a proven connection is never dropped, and a new one
//! always gets its turn to prove itself.

use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio_util::sync::CancellationToken;

/// Unproven connections one peer address may hold; the next one drops the oldest.
pub(crate) const MAX_UNPROVEN_PER_PEER: usize = 64;

/// Every unproven connection, by peer address, oldest first.
#[derive(Default)]
pub(crate) struct Peers {
    inner: Mutex<Waiting>,
}

#[derive(Default)]
struct Waiting {
    next_id: u64,
    by_peer: HashMap<IpAddr, VecDeque<(u64, CancellationToken)>>,
}

/// One accepted connection; every request on it carries it (as a request extension).
pub(crate) struct Connection {
    pub(crate) peer: SocketAddr,
    id: u64,
    peers: Arc<Peers>,
    proven: AtomicBool,
    /// Cancelled when a newer connection of the same peer pushed this one out.
    pub(crate) dropped: CancellationToken,
}

impl Peers {
    fn lock(&self) -> MutexGuard<'_, Waiting> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A new connection from `peer`, unproven; the peer's oldest unproven connection is
    /// dropped when it holds too many.
    pub(crate) fn admit(self: &Arc<Self>, peer: SocketAddr) -> Arc<Connection> {
        let dropped = CancellationToken::new();
        let mut waiting = self.lock();
        let id = waiting.next_id;
        waiting.next_id = waiting.next_id.wrapping_add(1);
        let list = waiting.by_peer.entry(peer.ip()).or_default();
        list.push_back((id, dropped.clone()));
        while list.len() > MAX_UNPROVEN_PER_PEER {
            if let Some((_, oldest)) = list.pop_front() {
                oldest.cancel();
            }
        }
        drop(waiting);
        Arc::new(Connection {
            peer,
            id,
            peers: Arc::clone(self),
            proven: AtomicBool::new(false),
            dropped,
        })
    }

    fn forget(&self, peer: IpAddr, id: u64) {
        let mut waiting = self.lock();
        if let Some(list) = waiting.by_peer.get_mut(&peer) {
            list.retain(|(other, _)| *other != id);
            if list.is_empty() {
                waiting.by_peer.remove(&peer);
            }
        }
    }

    /// Unproven connections now, over every peer (tests).
    #[cfg(test)]
    fn unproven(&self) -> usize {
        self.lock().by_peer.values().map(VecDeque::len).sum()
    }
}

impl Connection {
    /// A request on this connection proved it may ask: it is never dropped for a newer one.
    pub(crate) fn prove(&self) {
        if !self.proven.swap(true, Ordering::SeqCst) {
            self.peers.forget(self.peer.ip(), self.id);
        }
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        if !self.proven.load(Ordering::SeqCst) {
            self.peers.forget(self.peer.ip(), self.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(text: &str) -> SocketAddr {
        text.parse().unwrap()
    }

    #[test]
    fn a_peer_over_its_share_loses_its_oldest_unproven_connection() {
        let peers = Arc::new(Peers::default());
        let first = peers.admit(addr("127.0.0.1:1000"));
        let proven = peers.admit(addr("127.0.0.1:1001"));
        proven.prove();
        let other_peer = peers.admit(addr("127.0.0.2:1000"));
        let mut later = Vec::new();
        for port in 0..MAX_UNPROVEN_PER_PEER - 1 {
            later.push(peers.admit(addr(&format!("127.0.0.1:{}", 2000 + port))));
        }
        assert!(
            !first.dropped.is_cancelled(),
            "the share is not exceeded yet"
        );
        let newest = peers.admit(addr("127.0.0.1:3000"));
        assert!(first.dropped.is_cancelled(), "the oldest unproven one goes");
        assert!(!proven.dropped.is_cancelled(), "a proven one never goes");
        assert!(
            !other_peer.dropped.is_cancelled(),
            "another peer is not touched"
        );
        assert!(!newest.dropped.is_cancelled(), "the newest gets its turn");
        assert!(later.iter().all(|c| !c.dropped.is_cancelled()));
        assert_eq!(peers.unproven(), MAX_UNPROVEN_PER_PEER + 1);
        drop(later);
        drop(newest);
        drop(other_peer);
        assert_eq!(peers.unproven(), 0, "ended connections are forgotten");
    }
}
