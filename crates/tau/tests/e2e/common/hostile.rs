//! Hostile clients of TauBar's listener, as someone on the same machine without the token
//! would open them: connections that send nothing, half a request head, a head one byte
//! at a time, or a webhook's whole head and then 2 bytes of its body, spread over several
//! loopback addresses (`127.0.0.N`) as one local user can. One thread keeps them
//! (nonblocking sockets) and notes when the server closed each.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What a hostile connection does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Connects and sends nothing.
    Idle,
    /// Sends half a request head, then nothing.
    HalfHead,
    /// Sends a request head one byte at a time, one byte per round.
    Trickle,
    /// Sends `POST /hooks/NAME` with a whole head (60,000 bytes announced, no secret)
    /// and then 2 bytes of the body.
    StalledHook,
}

pub const KINDS: [Kind; 4] = [Kind::Idle, Kind::HalfHead, Kind::Trickle, Kind::StalledHook];

struct Hostile {
    kind: Kind,
    stream: TcpStream,
    opened: Instant,
    /// The head still to send, for a trickle.
    rest: Vec<u8>,
    closed_after: Option<Duration>,
    /// The first bytes the server answered with, if any.
    answered: Vec<u8>,
}

/// Hostile connections kept by a thread of their own.
pub struct Flood {
    connections: Arc<Mutex<Vec<Hostile>>>,
    stop: Arc<AtomicBool>,
    keeper: Option<std::thread::JoinHandle<()>>,
}

/// What became of one kind of hostile connection.
#[derive(Debug, Clone)]
pub struct Fate {
    pub kind: Kind,
    pub opened: usize,
    pub closed: usize,
    /// The longest any of them stayed open before the server closed it.
    pub longest: Duration,
    /// How many got an HTTP status line, by status.
    pub statuses: Vec<(u16, usize)>,
}

fn head(kind: Kind, host: &str, hook: &str) -> Vec<u8> {
    match kind {
        Kind::Idle => Vec::new(),
        Kind::HalfHead => format!("POST /api/sessions HTTP/1.1\r\nHost: {host}\r\nAuthori").into_bytes(),
        Kind::Trickle => format!(
            "GET /api/sessions HTTP/1.1\r\nHost: {host}\r\nUser-Agent: {}\r\n\r\n",
            "x".repeat(200)
        )
        .into_bytes(),
        Kind::StalledHook => format!(
            "POST /hooks/{hook} HTTP/1.1\r\nHost: {host}\r\nContent-Type: text/plain\r\nContent-Length: 60000\r\n\r\nri"
        )
        .into_bytes(),
    }
}

impl Flood {
    /// Opens `per_kind` connections of every kind in `kinds` to `addr` (`hook`: the webhook
    /// routine a stalled hook names) from `sources` loopback addresses in turn
    /// (127.0.0.1, 127.0.0.2, ...), and keeps them until the server closes them.
    pub fn open(
        addr: SocketAddr,
        kinds: &[Kind],
        per_kind: usize,
        sources: u8,
        hook: &str,
    ) -> Self {
        let host = addr.to_string();
        let mut connections = Vec::new();
        let mut opened = 0usize;
        for round in 0..per_kind {
            for &kind in kinds {
                let source = 1 + (opened % usize::from(sources.max(1))) as u8;
                opened += 1;
                let stream = connect_from(source, addr).unwrap_or_else(|e| {
                    panic!("hostile connection {round} ({kind:?}) could not connect: {e}")
                });
                let mut bytes = head(kind, &host, hook);
                let rest = if kind == Kind::Trickle {
                    std::mem::take(&mut bytes)
                } else {
                    Vec::new()
                };
                let mut hostile = Hostile {
                    kind,
                    stream,
                    opened: Instant::now(),
                    rest,
                    closed_after: None,
                    answered: Vec::new(),
                };
                if hostile.stream.write_all(&bytes).is_err() {
                    hostile.closed_after = Some(hostile.opened.elapsed());
                }
                hostile.stream.set_nonblocking(true).unwrap();
                connections.push(hostile);
            }
        }
        let connections = Arc::new(Mutex::new(connections));
        let stop = Arc::new(AtomicBool::new(false));
        let keeper = {
            let (connections, stop) = (Arc::clone(&connections), Arc::clone(&stop));
            std::thread::spawn(move || keep(&connections, &stop))
        };
        Self {
            connections,
            stop,
            keeper: Some(keeper),
        }
    }

    /// How many are still open.
    pub fn open_now(&self) -> usize {
        self.connections
            .lock()
            .unwrap()
            .iter()
            .filter(|c| c.closed_after.is_none())
            .count()
    }

    /// When the server closed each one, counted from its opening (`None`: still open), in
    /// the order they were opened.
    pub fn closed_after(&self) -> Vec<Option<Duration>> {
        self.connections
            .lock()
            .unwrap()
            .iter()
            .map(|c| c.closed_after)
            .collect()
    }

    /// Waits until the server closed every one, or `limit` passed; then what became of
    /// each kind.
    pub fn wait_closed(mut self, limit: Duration) -> Vec<Fate> {
        let started = Instant::now();
        while self.open_now() > 0 && started.elapsed() < limit {
            std::thread::sleep(Duration::from_millis(100));
        }
        self.stop.store(true, Ordering::SeqCst);
        if let Some(keeper) = self.keeper.take() {
            keeper.join().unwrap();
        }
        let connections = self.connections.lock().unwrap();
        let mut fates: Vec<Fate> = Vec::new();
        for hostile in connections.iter() {
            let fate = match fates.iter_mut().find(|f| f.kind == hostile.kind) {
                Some(fate) => fate,
                None => {
                    fates.push(Fate {
                        kind: hostile.kind,
                        opened: 0,
                        closed: 0,
                        longest: Duration::ZERO,
                        statuses: Vec::new(),
                    });
                    fates.last_mut().unwrap()
                }
            };
            fate.opened += 1;
            match hostile.closed_after {
                Some(after) => {
                    fate.closed += 1;
                    fate.longest = fate.longest.max(after);
                }
                None => fate.longest = fate.longest.max(hostile.opened.elapsed()),
            }
            if let Some(status) = status_of(&hostile.answered) {
                match fate.statuses.iter_mut().find(|(s, _)| *s == status) {
                    Some((_, count)) => *count += 1,
                    None => fate.statuses.push((status, 1)),
                }
            }
        }
        fates
    }
}

impl Drop for Flood {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(keeper) = self.keeper.take() {
            let _ = keeper.join();
        }
    }
}

/// A connection to `addr` from `127.0.0.{source}`.
fn connect_from(source: u8, addr: SocketAddr) -> std::io::Result<TcpStream> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()?;
    runtime.block_on(async {
        let socket = tokio::net::TcpSocket::new_v4()?;
        socket.bind(SocketAddr::from(([127, 0, 0, source], 0)))?;
        let stream = socket.connect(addr).await?.into_std()?;
        stream.set_nonblocking(false)?;
        Ok(stream)
    })
}

fn status_of(answered: &[u8]) -> Option<u16> {
    let text = String::from_utf8_lossy(answered);
    text.strip_prefix("HTTP/1.1 ")?.get(..3)?.parse().ok()
}

/// One round every 200 ms: a trickle sends its next byte; every open connection is read
/// (an end of stream or a reset means the server closed it).
fn keep(connections: &Mutex<Vec<Hostile>>, stop: &AtomicBool) {
    let mut buffer = [0u8; 4096];
    while !stop.load(Ordering::SeqCst) {
        {
            let mut connections = connections.lock().unwrap();
            for hostile in connections.iter_mut().filter(|c| c.closed_after.is_none()) {
                if !hostile.rest.is_empty() {
                    let byte = hostile.rest.remove(0);
                    if hostile.stream.write_all(&[byte]).is_err() {
                        hostile.closed_after = Some(hostile.opened.elapsed());
                        continue;
                    }
                }
                loop {
                    match hostile.stream.read(&mut buffer) {
                        Ok(0) => {
                            hostile.closed_after = Some(hostile.opened.elapsed());
                            break;
                        }
                        Ok(read) => {
                            if hostile.answered.len() < 64 {
                                hostile.answered.extend_from_slice(&buffer[..read]);
                            }
                        }
                        Err(error) if error.kind() == ErrorKind::WouldBlock => break,
                        Err(_) => {
                            hostile.closed_after = Some(hostile.opened.elapsed());
                            break;
                        }
                    }
                }
            }
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// What a [`Surge`] did so far.
#[derive(Debug, Default)]
pub struct SurgeCounts {
    /// Connections opened.
    pub opened: AtomicUsize,
    /// Of those, closed by the server.
    pub closed_by_server: AtomicUsize,
    /// Connects that failed (a full listen queue, no free port).
    pub failed: AtomicUsize,
}

/// A flood that does not stop by itself: one thread holds `per_source` idle connections
/// from each of `sources` loopback addresses (127.0.0.1, 127.0.0.2, ...) and opens a new
/// one for each the server closes; another opens idle connections from 127.0.0.1 one
/// after another as fast as it can, keeping its newest `hold` open. Both stop when the
/// surge is dropped, or after `most` connections each.
pub struct Surge {
    pub counts: Arc<SurgeCounts>,
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Surge {
    pub fn start(
        addr: SocketAddr,
        sources: u8,
        per_source: usize,
        hold: usize,
        most: usize,
    ) -> Self {
        let counts = Arc::new(SurgeCounts::default());
        let stop = Arc::new(AtomicBool::new(false));
        let mut threads = Vec::new();
        if per_source > 0 {
            let (counts, stop) = (Arc::clone(&counts), Arc::clone(&stop));
            threads.push(std::thread::spawn(move || {
                keep_held(addr, sources, per_source, most, &counts, &stop);
            }));
        }
        if hold > 0 {
            let (counts, stop) = (Arc::clone(&counts), Arc::clone(&stop));
            threads.push(std::thread::spawn(move || {
                churn(addr, hold, most, &counts, &stop);
            }));
        }
        Self {
            counts,
            stop,
            threads,
        }
    }

    /// How many it opened so far.
    pub fn opened(&self) -> usize {
        self.counts.opened.load(Ordering::SeqCst)
    }

    /// How many of those the server closed so far.
    pub fn closed_by_server(&self) -> usize {
        self.counts.closed_by_server.load(Ordering::SeqCst)
    }
}

impl Drop for Surge {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

/// Opens one idle connection from `127.0.0.{source}` on `runtime`, counted.
fn surge_connect(
    runtime: &tokio::runtime::Runtime,
    source: u8,
    addr: SocketAddr,
    counts: &SurgeCounts,
) -> Option<TcpStream> {
    let connected = runtime.block_on(async {
        let socket = tokio::net::TcpSocket::new_v4()?;
        socket.bind(SocketAddr::from(([127, 0, 0, source], 0)))?;
        socket.connect(addr).await?.into_std()
    });
    match connected {
        Ok(stream) => {
            counts.opened.fetch_add(1, Ordering::SeqCst);
            Some(stream)
        }
        Err(_) => {
            counts.failed.fetch_add(1, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(5));
            None
        }
    }
}

/// Whether the server closed `stream` (nonblocking; what it sent is read and dropped).
fn closed_by_server(stream: &mut TcpStream) -> bool {
    let mut buffer = [0u8; 1024];
    loop {
        match stream.read(&mut buffer) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(error) if error.kind() == ErrorKind::WouldBlock => return false,
            Err(_) => return true,
        }
    }
}

fn surge_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .unwrap()
}

fn keep_held(
    addr: SocketAddr,
    sources: u8,
    per_source: usize,
    most: usize,
    counts: &SurgeCounts,
    stop: &AtomicBool,
) {
    let runtime = surge_runtime();
    let mut held: Vec<(u8, Option<TcpStream>)> = (1..=sources.max(1))
        .flat_map(|source| std::iter::repeat_n(source, per_source))
        .map(|source| (source, None))
        .collect();
    let mut opened = 0;
    while !stop.load(Ordering::SeqCst) && opened < most {
        for (source, slot) in &mut held {
            if stop.load(Ordering::SeqCst) || opened >= most {
                break;
            }
            if let Some(stream) = slot
                && closed_by_server(stream)
            {
                counts.closed_by_server.fetch_add(1, Ordering::SeqCst);
                *slot = None;
            }
            if slot.is_none() {
                opened += 1;
                *slot = surge_connect(&runtime, *source, addr, counts)
                    .filter(|stream| stream.set_nonblocking(true).is_ok());
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn churn(addr: SocketAddr, hold: usize, most: usize, counts: &SurgeCounts, stop: &AtomicBool) {
    let runtime = surge_runtime();
    let mut held = std::collections::VecDeque::new();
    let mut opened = 0;
    while !stop.load(Ordering::SeqCst) && opened < most {
        opened += 1;
        if let Some(stream) = surge_connect(&runtime, 1, addr, counts)
            && stream.set_nonblocking(true).is_ok()
        {
            held.push_back(stream);
        }
        if held.len() > hold {
            held.pop_front();
        }
        // Now and then, let go of what the server closed.
        if opened % 256 == 0 {
            let before = held.len();
            held.retain_mut(|stream| !closed_by_server(stream));
            counts
                .closed_by_server
                .fetch_add(before - held.len(), Ordering::SeqCst);
        }
    }
}
