//! The PostgreSQL store's wire: the socket to the server and the client's connection,
//! driven by the thread that asks, never by a thread or a runtime of their own.
//!
//! A request is the client's future and the connection's state machine polled together on
//! the calling thread; when neither can move, the thread sleeps in `poll(2)` on the socket
//! until the server sends (or, for a long request, until the socket takes more). An answer
//! is then a write, a sleep and a read on one thread: no hand-over to another thread and
//! back at every statement, which cost as much CPU as the statement itself.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_postgres::config::Host;
use tokio_postgres::config::SslMode;
use tokio_postgres::{Client, Config, Connection};

use crate::pg_support::with_causes;
use crate::pg_tls::{Connector, Encrypted};

/// How long a TCP connection may sit idle before the kernel asks whether the server is
/// still there: a server gone without a word is found, not waited on forever.
const KEEPALIVE_IDLE: Duration = Duration::from_secs(10);

/// The stream to the server, non-blocking: a read or write that cannot go on says so
/// (`Pending`) and the caller waits on the socket.
pub(crate) struct Socket {
    stream: Stream,
    /// Set when a write found the socket full: the wait then also waits for room.
    wants_room: Arc<AtomicBool>,
}

enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Stream {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match self {
            Self::Tcp(stream) => stream.as_fd(),
            Self::Unix(stream) => stream.as_fd(),
        }
    }
}

/// What the store keeps of an open connection besides its client.
pub(crate) struct Wire {
    /// `None` once the connection ended: the server closed it, or it broke.
    connection: Option<Connection<Socket, Encrypted>>,
    /// The socket's own descriptor, duplicated: what the thread sleeps on.
    fd: OwnedFd,
    wants_room: Arc<AtomicBool>,
}

/// Why a request has no answer.
#[derive(Debug)]
pub(crate) enum Stalled {
    /// Nothing came before the deadline.
    Late,
    /// The connection ended with the request unanswered.
    Ended,
}

/// Connects a socket to the first of `config`'s hosts that answers, then logs in, all
/// before `deadline`; over TLS with `tls` when it is given and the socket is TCP.
pub(crate) fn connect(
    config: &Config,
    tls: Option<&Arc<rustls::ClientConfig>>,
    deadline: Instant,
) -> Result<(Client, Wire), String> {
    let (stream, host) = open_stream(config, deadline)?;
    let mut config = config.clone();
    let connector = match (tls, host) {
        (Some(tls), Some(host)) => Connector::to(Arc::clone(tls), &host)?,
        // Not asked for (the url's `prefer` included: plain is what tau speaks unless
        // told), or a unix socket, which PostgreSQL never encrypts and which never leaves
        // the machine.
        _ => {
            config.ssl_mode(SslMode::Disable);
            Connector::plain()
        }
    };
    let fd = stream
        .as_fd()
        .try_clone_to_owned()
        .map_err(|e| e.to_string())?;
    let wants_room = Arc::new(AtomicBool::new(false));
    let socket = Socket {
        stream,
        wants_room: Arc::clone(&wants_room),
    };
    let login = config.connect_raw(socket, connector);
    let (client, connection) = match wait(login, fd.as_fd(), &wants_room, deadline, |_| true) {
        Ok(Ok(pair)) => pair,
        Ok(Err(error)) => return Err(with_causes(&error)),
        Err(_) => return Err("the server did not finish the login in time".to_owned()),
    };
    let wire = Wire {
        connection: Some(connection),
        fd,
        wants_room,
    };
    Ok((client, wire))
}

/// A stream to one of `config`'s hosts (each tried in turn, as libpq does), connected in
/// non-blocking mode, and the host's name when it is reached over TCP.
fn open_stream(config: &Config, deadline: Instant) -> Result<(Stream, Option<String>), String> {
    let ports = config.get_ports();
    let addrs = config.get_hostaddrs();
    let mut why = "the url names no host".to_owned();
    for (i, host) in config.get_hosts().iter().enumerate() {
        let port = match ports {
            [one] => *one,
            many => many.get(i).copied().unwrap_or(5432),
        };
        let opened = match host {
            Host::Unix(dir) => UnixStream::connect(dir.join(format!(".s.PGSQL.{port}")))
                .map(Stream::Unix)
                .map_err(|e| format!("{}: {e}", dir.display())),
            Host::Tcp(name) => match addrs.get(i) {
                Some(addr) => tcp([(*addr, port).into()], deadline),
                None => (name.as_str(), port)
                    .to_socket_addrs()
                    .map_err(|e| format!("{name}: {e}"))
                    .and_then(|found| tcp(found, deadline)),
            }
            .map(Stream::Tcp),
        };
        match opened {
            Ok(stream) => {
                let nonblocking = match &stream {
                    Stream::Tcp(stream) => stream.set_nonblocking(true),
                    Stream::Unix(stream) => stream.set_nonblocking(true),
                };
                nonblocking.map_err(|e| e.to_string())?;
                let name = match host {
                    Host::Tcp(name) => Some(name.clone()),
                    Host::Unix(_) => None,
                };
                return Ok((stream, name));
            }
            Err(error) => why = error,
        }
    }
    Err(why)
}

/// The first of `addrs` that accepts a connection before `deadline`.
fn tcp(
    addrs: impl IntoIterator<Item = std::net::SocketAddr>,
    deadline: Instant,
) -> Result<TcpStream, String> {
    let mut why = "the host has no address".to_owned();
    for addr in addrs {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(format!("{addr}: no answer in time"));
        }
        match TcpStream::connect_timeout(&addr, left) {
            Ok(stream) => {
                // As the client's own connect does: small requests go at once.
                let _ = stream.set_nodelay(true);
                let _ = rustix::net::sockopt::set_socket_keepalive(&stream, true);
                let _ = rustix::net::sockopt::set_tcp_keepidle(&stream, KEEPALIVE_IDLE);
                return Ok(stream);
            }
            Err(error) => why = format!("{addr}: {error}"),
        }
    }
    Err(why)
}

impl Wire {
    /// Runs `request` (a future of this connection's client) to its answer, driving the
    /// connection meanwhile, until `deadline`.
    pub(crate) fn run<F: Future>(
        &mut self,
        request: F,
        deadline: Instant,
    ) -> Result<F::Output, Stalled> {
        let Self {
            connection,
            fd,
            wants_room,
        } = self;
        wait(request, fd.as_fd(), wants_room, deadline, |cx| {
            drive(connection, cx);
            connection.is_some()
        })
    }

    /// Reads what the server sent while nobody asked (a notice, a notification, or that it
    /// is shutting down and the socket's end), without waiting: true when the connection
    /// has ended, so the store connects again before it asks, rather than fail a call on a
    /// connection the server closed long ago.
    pub(crate) fn ended_while_idle(&mut self) -> bool {
        let mut cx = Context::from_waker(Waker::noop());
        drive(&mut self.connection, &mut cx);
        self.connection.is_none()
    }

    /// Whether the connection ended.
    pub(crate) fn ended(&self) -> bool {
        self.connection.is_none()
    }

    /// A copy of the socket's descriptor, for a wait outside the store's lock.
    pub(crate) fn fd(&self) -> std::io::Result<OwnedFd> {
        self.fd.try_clone()
    }
}

/// Moves the connection as far as it goes now: what the client queued is sent, what the
/// server sent is read and handed to the requests. Notifications and notices are read and
/// dropped: a waiter for others' commits reads the change counter, not these.
fn drive(connection: &mut Option<Connection<Socket, Encrypted>>, cx: &mut Context<'_>) {
    while let Some(open) = connection {
        match open.poll_message(cx) {
            Poll::Ready(Some(Ok(_))) => {}
            Poll::Ready(Some(Err(error))) => {
                tracing::warn!(%error, "the PostgreSQL connection ended");
                // Dropped, so every request still waiting hears that it ended.
                *connection = None;
            }
            Poll::Ready(None) => *connection = None,
            Poll::Pending => return,
        }
    }
}

/// Polls `future`, and `between` after it (which moves the connection; false once there
/// is none), until the future is done; sleeps on `fd` whenever neither can move.
fn wait<F: Future>(
    future: F,
    fd: BorrowedFd<'_>,
    wants_room: &AtomicBool,
    deadline: Instant,
    mut between: impl FnMut(&mut Context<'_>) -> bool,
) -> Result<F::Output, Stalled> {
    let woken = Arc::new(Woken(AtomicBool::new(false)));
    let waker = Waker::from(Arc::clone(&woken));
    let mut cx = Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        woken.0.store(false, Ordering::Relaxed);
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return Ok(output);
        }
        wants_room.store(false, Ordering::Relaxed);
        if !between(&mut cx) {
            // The connection's end woke the request with its error, if it was waiting.
            return match future.as_mut().poll(&mut cx) {
                Poll::Ready(output) => Ok(output),
                Poll::Pending => Err(Stalled::Ended),
            };
        }
        if woken.0.load(Ordering::Relaxed) {
            // Something moved between the client and the connection: poll again.
            continue;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(Stalled::Late);
        }
        let mut flags = PollFlags::IN;
        if wants_room.load(Ordering::Relaxed) {
            flags |= PollFlags::OUT;
        }
        let timeout = Timespec::try_from(left).unwrap_or(Timespec {
            tv_sec: 1,
            tv_nsec: 0,
        });
        // An interruption or an error only polls once more: the read finds the error.
        let _ = poll(&mut [PollFd::from_borrowed_fd(fd, flags)], Some(&timeout));
    }
}

/// The waker of [`wait`]: a flag that something moved.
struct Woken(AtomicBool);

impl Wake for Woken {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::Relaxed);
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Waits up to `limit` for `fd` to have something to read.
pub(crate) fn readable_within(fd: BorrowedFd<'_>, limit: Duration) {
    let timeout = Timespec::try_from(limit).unwrap_or(Timespec {
        tv_sec: 1,
        tv_nsec: 0,
    });
    let _ = poll(
        &mut [PollFd::from_borrowed_fd(fd, PollFlags::IN)],
        Some(&timeout),
    );
}

impl AsyncRead for Socket {
    fn poll_read(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        loop {
            let read = match &self.stream {
                Stream::Tcp(stream) => (&*stream).read(buf.initialize_unfilled()),
                Stream::Unix(stream) => (&*stream).read(buf.initialize_unfilled()),
            };
            return match read {
                Ok(n) => {
                    buf.advance(n);
                    Poll::Ready(Ok(()))
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                // The wait in `wait` is the waker: it polls again once the socket has data.
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Poll::Pending,
                Err(e) => Poll::Ready(Err(e)),
            };
        }
    }
}

impl AsyncWrite for Socket {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        loop {
            let written = match &self.stream {
                Stream::Tcp(stream) => (&*stream).write(data),
                Stream::Unix(stream) => (&*stream).write(data),
            };
            return match written {
                Ok(n) => Poll::Ready(Ok(n)),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    self.wants_room.store(true, Ordering::Relaxed);
                    Poll::Pending
                }
                Err(e) => Poll::Ready(Err(e)),
            };
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        // Nothing is buffered here: every write went to the kernel.
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let shut = match &self.stream {
            Stream::Tcp(stream) => stream.shutdown(std::net::Shutdown::Write),
            Stream::Unix(stream) => stream.shutdown(std::net::Shutdown::Write),
        };
        Poll::Ready(shut.or_else(|e| match e.kind() {
            std::io::ErrorKind::NotConnected => Ok(()),
            _ => Err(e),
        }))
    }
}
