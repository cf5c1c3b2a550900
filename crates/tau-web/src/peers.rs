//! Connections by peer, and the caps that keep a flood from locking the person out.
//!
//! A connection is *unproven* until one of its requests carries the token or the page's
//! cookie (or, on a webhook's path, that routine's secret); from then on it is *proven*
//! and never closed for another. Unproven connections are capped twice, both caps
//! computed from the open-files limit ([`Caps`]): one peer may hold a share of them, and
//! all peers together a total. A new connection over either cap closes the oldest
//! unproven one (the peer's own, then the oldest of all), so a flood costs the flood its
//! own connections: the newest one, the person's among them, always gets its turn to
//! prove itself, and nothing proven is touched.
//!
//! A peer is who is behind an address: every loopback address (all of 127.0.0.0/8 and
//! `::1`, IPv4-mapped or not) is this machine, one peer, so opening connections from many
//! of them gains nothing; an IPv6 peer is its /64, which one host holds whole.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio_util::sync::CancellationToken;

/// The fewest and most connections served at once, whatever the open-files limit. The
/// most bounds memory (an idle connection costs some 10 KiB) and is far above what one
/// person's browsers and scripts open.
const MIN_CONNECTIONS: usize = 16;
const MAX_CONNECTIONS: usize = 8192;

/// How many connections are served at once, from the open-files limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Caps {
    /// Connections served at once, proven or not; more wait in the listen queue.
    pub(crate) connections: usize,
    /// Unproven connections over every peer.
    pub(crate) unproven: usize,
    /// Unproven connections of one peer.
    pub(crate) per_peer: usize,
}

impl Caps {
    /// Half the descriptors for connections, the other half kept for tau's own work (its
    /// database and logs, commands and their pipes, MCP servers), so idle connections
    /// never leave an approved command without one; half of the connections for
    /// unproven ones, so proven ones always have room; half of those for one peer, so a
    /// flood from this machine leaves room for the person reaching tau from another.
    pub(crate) fn for_open_files(limit: u64) -> Self {
        let half = usize::try_from(limit / 2).unwrap_or(usize::MAX);
        let connections = half.clamp(MIN_CONNECTIONS, MAX_CONNECTIONS);
        let unproven = connections / 2;
        Self {
            connections,
            unproven,
            per_peer: unproven / 2,
        }
    }
}

/// Who is behind a peer address, as far as the caps go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Peer {
    /// This machine: any loopback address.
    Loopback,
    V4(Ipv4Addr),
    /// An IPv6 address's first 64 bits.
    V6Prefix(u64),
}

impl Peer {
    pub(crate) fn of(ip: IpAddr) -> Self {
        match ip.to_canonical() {
            ip if ip.is_loopback() => Self::Loopback,
            IpAddr::V4(ip) => Self::V4(ip),
            IpAddr::V6(ip) => Self::V6Prefix(u64::try_from(u128::from(ip) >> 64).unwrap_or(0)),
        }
    }
}

/// Every unproven connection, oldest first.
pub(crate) struct Peers {
    caps: Caps,
    inner: Mutex<Unproven>,
}

#[derive(Default)]
struct Unproven {
    next_id: u64,
    /// By id: ids grow, so the first is the oldest.
    all: BTreeMap<u64, (Peer, CancellationToken)>,
    by_peer: HashMap<Peer, BTreeSet<u64>>,
}

impl Unproven {
    /// Takes `id` off both lists; its token, when it was on them.
    fn take(&mut self, id: u64) -> Option<CancellationToken> {
        let (peer, dropped) = self.all.remove(&id)?;
        if let Some(ids) = self.by_peer.get_mut(&peer) {
            ids.remove(&id);
            if ids.is_empty() {
                self.by_peer.remove(&peer);
            }
        }
        Some(dropped)
    }

    /// Closes the oldest unproven connection of `peer`, or of all when `None`.
    fn close_oldest(&mut self, peer: Option<Peer>) -> bool {
        let oldest = match peer {
            Some(peer) => self.by_peer.get(&peer).and_then(|ids| ids.first().copied()),
            None => self.all.first_key_value().map(|(id, _)| *id),
        };
        match oldest.and_then(|id| self.take(id)) {
            Some(dropped) => {
                dropped.cancel();
                true
            }
            None => false,
        }
    }

    fn of_peer(&self, peer: Peer) -> usize {
        self.by_peer.get(&peer).map_or(0, BTreeSet::len)
    }
}

/// One accepted connection; every request on it carries it (as a request extension).
pub(crate) struct Connection {
    pub(crate) peer: SocketAddr,
    id: u64,
    peers: Arc<Peers>,
    proven: AtomicBool,
    /// Cancelled when a newer connection pushed this one out.
    pub(crate) dropped: CancellationToken,
}

impl Peers {
    pub(crate) fn new(caps: Caps) -> Self {
        Self {
            caps,
            inner: Mutex::new(Unproven::default()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Unproven> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A new connection from `addr`, unproven; over the peer's share or the total, the
    /// oldest unproven connection goes (the peer's own first).
    pub(crate) fn admit(self: &Arc<Self>, addr: SocketAddr) -> Arc<Connection> {
        let peer = Peer::of(addr.ip());
        let dropped = CancellationToken::new();
        let mut unproven = self.lock();
        let id = unproven.next_id;
        unproven.next_id = unproven.next_id.wrapping_add(1);
        unproven.all.insert(id, (peer, dropped.clone()));
        unproven.by_peer.entry(peer).or_default().insert(id);
        while unproven.of_peer(peer) > self.caps.per_peer.max(1)
            && unproven.close_oldest(Some(peer))
        {}
        while unproven.all.len() > self.caps.unproven.max(1) && unproven.close_oldest(None) {}
        drop(unproven);
        Arc::new(Connection {
            peer: addr,
            id,
            peers: Arc::clone(self),
            proven: AtomicBool::new(false),
            dropped,
        })
    }

    /// Closes the oldest unproven connection of all, to free its descriptor; whether
    /// there was one.
    pub(crate) fn close_oldest(&self) -> bool {
        self.lock().close_oldest(None)
    }

    fn forget(&self, id: u64) {
        self.lock().take(id);
    }

    /// Unproven connections now, over every peer (tests).
    #[cfg(test)]
    fn unproven(&self) -> usize {
        self.lock().all.len()
    }
}

impl Connection {
    /// A request on this connection proved it may ask: it is never dropped for a newer one.
    pub(crate) fn prove(&self) {
        if !self.proven.swap(true, Ordering::SeqCst) {
            self.peers.forget(self.id);
        }
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        if !self.proven.load(Ordering::SeqCst) {
            self.peers.forget(self.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(text: &str) -> SocketAddr {
        text.parse().unwrap()
    }

    fn peers(unproven: usize, per_peer: usize) -> Arc<Peers> {
        Arc::new(Peers::new(Caps {
            connections: unproven * 2,
            unproven,
            per_peer,
        }))
    }

    #[test]
    fn the_caps_leave_half_the_descriptors_to_tau_and_grow_with_the_limit() {
        let usual = Caps::for_open_files(1024);
        assert_eq!(
            usual,
            Caps {
                connections: 512,
                unproven: 256,
                per_peer: 128
            }
        );
        assert_eq!(Caps::for_open_files(20_000).per_peer, 2048);
        let huge = Caps::for_open_files(u64::MAX);
        assert_eq!(huge.connections, MAX_CONNECTIONS);
        let tiny = Caps::for_open_files(3);
        assert_eq!(tiny.connections, MIN_CONNECTIONS);
        assert!(tiny.per_peer >= 1);
        for limit in [64, 256, 1024, 4096, 65_536, 1 << 20] {
            let caps = Caps::for_open_files(limit);
            assert!(caps.connections as u64 <= limit / 2, "{limit}: {caps:?}");
            assert!(caps.per_peer < caps.unproven && caps.unproven < caps.connections);
        }
    }

    #[test]
    fn loopback_in_every_form_is_one_peer() {
        let loopback = [
            "127.0.0.1",
            "127.0.0.2",
            "127.1.2.3",
            "127.255.255.254",
            "::1",
            "::ffff:127.0.0.1",
            "::ffff:127.9.9.9",
        ];
        for ip in loopback {
            assert_eq!(Peer::of(ip.parse().unwrap()), Peer::Loopback, "{ip}");
        }
        assert_eq!(
            Peer::of("::ffff:192.168.1.5".parse().unwrap()),
            Peer::of("192.168.1.5".parse().unwrap()),
            "an IPv4-mapped address is its IPv4 address"
        );
        assert_ne!(
            Peer::of("192.168.1.5".parse().unwrap()),
            Peer::of("192.168.1.6".parse().unwrap())
        );
        assert_eq!(
            Peer::of("2001:db8:1:2::1".parse().unwrap()),
            Peer::of("2001:db8:1:2:ffff:ffff:ffff:ffff".parse().unwrap()),
            "one /64 is one peer"
        );
        assert_ne!(
            Peer::of("2001:db8:1:2::1".parse().unwrap()),
            Peer::of("2001:db8:1:3::1".parse().unwrap())
        );
        assert_ne!(Peer::of("128.0.0.1".parse().unwrap()), Peer::Loopback);
    }

    #[test]
    fn many_loopback_addresses_share_one_share_and_the_oldest_goes() {
        let peers = peers(100, 8);
        let proven = peers.admit(addr("127.0.0.1:1000"));
        proven.prove();
        let flood: Vec<_> = (0..8)
            .map(|i| peers.admit(addr(&format!("127.0.0.{}:2000", 2 + i))))
            .collect();
        assert!(
            flood.iter().all(|c| !c.dropped.is_cancelled()),
            "at the share"
        );
        let mapped = peers.admit(addr("[::ffff:127.0.0.99]:3000"));
        assert!(flood[0].dropped.is_cancelled(), "the oldest goes");
        assert!(flood[1..].iter().all(|c| !c.dropped.is_cancelled()));
        assert!(!mapped.dropped.is_cancelled(), "the newest gets its turn");
        let v6 = peers.admit(addr("[::1]:3001"));
        assert!(flood[1].dropped.is_cancelled());
        assert!(!v6.dropped.is_cancelled());
        assert!(!proven.dropped.is_cancelled(), "a proven one never goes");
        assert_eq!(peers.unproven(), 8);
    }

    #[test]
    fn at_the_total_the_oldest_of_all_goes_and_a_proven_one_never() {
        let peers = peers(10, 4);
        let person = peers.admit(addr("192.168.1.2:1000"));
        person.prove();
        let mut flood = Vec::new();
        for i in 0..10 {
            flood.push(peers.admit(addr(&format!("10.0.0.{i}:2000"))));
        }
        assert!(
            flood.iter().all(|c| !c.dropped.is_cancelled()),
            "at the total"
        );
        let next = peers.admit(addr("10.0.1.1:2000"));
        assert!(flood[0].dropped.is_cancelled(), "the oldest of all goes");
        assert!(flood[1..].iter().all(|c| !c.dropped.is_cancelled()));
        assert!(!next.dropped.is_cancelled());
        // Any number more: the person's proven connection stays, and the newest is
        // always one of those kept.
        for i in 0..1000 {
            let newest = peers.admit(addr(&format!("10.1.{}.{}:2000", i / 250, i % 250)));
            assert!(!newest.dropped.is_cancelled());
            flood.push(newest);
        }
        assert!(!person.dropped.is_cancelled());
        assert_eq!(peers.unproven(), 10);
        assert_eq!(
            flood.iter().filter(|c| !c.dropped.is_cancelled()).count(),
            10,
            "the newest ten are kept"
        );
        assert!(
            flood[flood.len() - 10..]
                .iter()
                .all(|c| !c.dropped.is_cancelled())
        );
        drop(flood);
        drop(next);
        assert_eq!(peers.unproven(), 0, "ended connections are forgotten");
    }

    #[test]
    fn one_peer_over_its_share_loses_its_own_oldest_not_another_peers() {
        let peers = peers(100, 4);
        let other = peers.admit(addr("192.168.1.2:1000"));
        let own: Vec<_> = (0..4)
            .map(|port| peers.admit(addr(&format!("10.0.0.1:{}", 2000 + port))))
            .collect();
        let newest = peers.admit(addr("10.0.0.1:3000"));
        assert!(own[0].dropped.is_cancelled());
        assert!(!other.dropped.is_cancelled(), "another peer is not touched");
        assert!(!newest.dropped.is_cancelled());
        assert_eq!(peers.unproven(), 5);
    }

    #[test]
    fn closing_the_oldest_frees_one_and_a_proven_one_is_not_on_the_list() {
        let peers = peers(10, 5);
        let proven = peers.admit(addr("127.0.0.1:1"));
        proven.prove();
        assert!(!peers.close_oldest(), "nothing unproven to close");
        let first = peers.admit(addr("127.0.0.1:2"));
        let second = peers.admit(addr("127.0.0.1:3"));
        assert!(peers.close_oldest());
        assert!(first.dropped.is_cancelled());
        assert!(!second.dropped.is_cancelled());
        assert!(!proven.dropped.is_cancelled());
        // A proven connection proven again, or one closed and then dropped, changes nothing.
        proven.prove();
        drop(first);
        assert_eq!(peers.unproven(), 1);
    }
}
