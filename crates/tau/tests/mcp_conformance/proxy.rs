//! A loopback forwarding proxy that adds tau's bearer token to each request. The
//! conformance suite has no option to send an `Authorization` header, and `tau mcp --http`
//! rightly refuses a request without one; the proxy lets the suite test tau as it is.
//! Everything else passes through unchanged, `Host` and `Origin` included, so the suite's
//! DNS-rebinding checks reach tau's own checks. Requests are parsed one by one (a client
//! keeps its connection alive), responses are copied as they come (SSE streams).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

/// The largest request head the proxy reads (the suite's are far smaller).
const MAX_HEAD_BYTES: usize = 64 * 1024;

pub struct Proxy {
    pub addr: SocketAddr,
    stopped: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

impl Proxy {
    /// Listens on a free loopback port and forwards every connection to `upstream`.
    pub fn start(upstream: &str, token: &str) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let stopped = Arc::new(AtomicBool::new(false));
        let upstream = upstream.to_owned();
        let authorization = format!("Authorization: Bearer {token}\r\n");
        let stop = Arc::clone(&stopped);
        let accept = std::thread::spawn(move || {
            for client in listener.incoming() {
                if stop.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(client) = client else { continue };
                let upstream = upstream.clone();
                let authorization = authorization.clone();
                std::thread::spawn(move || forward(client, &upstream, &authorization));
            }
        });
        Self {
            addr,
            stopped,
            accept: Some(accept),
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stopped.store(true, Ordering::SeqCst);
        // Wakes the accept loop so it sees the flag.
        let _ = TcpStream::connect(self.addr);
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
    }
}

/// One client connection: its requests to `upstream` with the token added, and whatever
/// `upstream` answers back.
fn forward(client: TcpStream, upstream: &str, authorization: &str) {
    let Ok(mut to_server) = TcpStream::connect(upstream) else {
        let _ = client.shutdown(Shutdown::Both);
        return;
    };
    let (Ok(mut from_server), Ok(mut to_client)) = (to_server.try_clone(), client.try_clone())
    else {
        return;
    };
    let answers = std::thread::spawn(move || {
        let _ = std::io::copy(&mut from_server, &mut to_client);
        let _ = to_client.shutdown(Shutdown::Write);
    });
    let mut from_client = BufReader::new(client);
    while forward_request(&mut from_client, &mut to_server, authorization).unwrap_or(false) {}
    let _ = to_server.shutdown(Shutdown::Write);
    let _ = answers.join();
}

/// Forwards one request; false when the client is done (or sent what is not HTTP).
fn forward_request(
    from: &mut BufReader<TcpStream>,
    to: &mut TcpStream,
    authorization: &str,
) -> std::io::Result<bool> {
    let mut head = Vec::new();
    let mut length = 0u64;
    let mut chunked = false;
    let mut authorized = false;
    loop {
        let mut line = Vec::new();
        if from.read_until(b'\n', &mut line)? == 0 || head.len() > MAX_HEAD_BYTES {
            return Ok(false);
        }
        if line == b"\r\n" {
            break;
        }
        let text = String::from_utf8_lossy(&line).to_ascii_lowercase();
        if let Some(value) = text.strip_prefix("content-length:") {
            length = value.trim().parse().unwrap_or(0);
        }
        if text.starts_with("transfer-encoding:") && text.contains("chunked") {
            chunked = true;
        }
        authorized |= text.starts_with("authorization:");
        head.extend_from_slice(&line);
    }
    if !authorized {
        head.extend_from_slice(authorization.as_bytes());
    }
    head.extend_from_slice(b"\r\n");
    to.write_all(&head)?;
    if chunked {
        forward_chunks(from, to)?;
    } else {
        let copied = std::io::copy(&mut from.by_ref().take(length), to)?;
        if copied < length {
            return Ok(false);
        }
    }
    Ok(true)
}

/// A chunked body, chunk by chunk, up to and with its trailer.
fn forward_chunks(from: &mut BufReader<TcpStream>, to: &mut TcpStream) -> std::io::Result<()> {
    loop {
        let mut line = Vec::new();
        from.read_until(b'\n', &mut line)?;
        to.write_all(&line)?;
        let text = String::from_utf8_lossy(&line);
        let size = text.split(';').next().unwrap_or_default().trim();
        let size = u64::from_str_radix(size, 16)
            .map_err(|_| std::io::Error::other(format!("bad chunk size {text:?}")))?;
        if size == 0 {
            // The trailer, up to its empty line.
            loop {
                let mut trailer = Vec::new();
                if from.read_until(b'\n', &mut trailer)? == 0 {
                    return Ok(());
                }
                to.write_all(&trailer)?;
                if trailer == b"\r\n" {
                    return Ok(());
                }
            }
        }
        // The chunk and its CRLF.
        std::io::copy(&mut from.by_ref().take(size + 2), to)?;
    }
}
