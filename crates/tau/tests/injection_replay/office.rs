//! The office MCP server (`fixtures/office_server.py`) as tau reaches it: one process over
//! streamable HTTP for the whole suite, each run at its own address with its own
//! scenario file, or a process of its own over stdio, the way a person would set it up.
//! Starting the Python SDK takes about a second, the run itself a fifth of one: sharing the
//! process is what keeps the suite at a few minutes.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};

/// A run's `[mcp.servers.office]` lines that say where the office is, and the ledger file
/// it writes the run's calls to.
pub struct Endpoint {
    pub lines: String,
    pub ledger: PathBuf,
}

/// The office over streamable HTTP, stopped when dropped.
pub struct HttpOffice {
    child: Child,
    url: String,
    runs: tempfile::TempDir,
}

impl HttpOffice {
    /// Starts the office on a loopback port and waits until it listens.
    // The child is waited for by `Drop`, or right here when it ends before serving.
    #[allow(clippy::zombie_processes)]
    pub fn start(python: &str) -> Self {
        let runs = tempfile::tempdir().unwrap();
        let mut child = Command::new(python)
            .arg(server())
            .args(["--http", "127.0.0.1:0", "--runs"])
            .arg(runs.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let Some(url) = line.trim().strip_prefix("serving ") else {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the office did not start: {line:?}");
        };
        Self {
            url: url.to_owned(),
            child,
            runs,
        }
    }

    /// Writes run `name`'s scenario (`placed`: vector to injected text) and says where
    /// tau finds it.
    pub fn endpoint(&self, name: &str, placed: &Value) -> Endpoint {
        let ledger = self.runs.path().join(format!("{name}.ledger.jsonl"));
        let scenario = json!({"injections": placed, "ledger": ledger.to_str().unwrap()});
        let path = self.runs.path().join(format!("{name}.json"));
        std::fs::write(path, scenario.to_string()).unwrap();
        Endpoint {
            lines: format!("url = {}\n", json!(format!("{}/runs/{name}/mcp", self.url))),
            ledger,
        }
    }
}

impl Drop for HttpOffice {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The office as a program of its own for one run, its scenario in its environment; the
/// ledger goes in the workspace, where a sandboxed server may write.
pub fn stdio_endpoint(python: &str, placed: &Value, workspace: &Path) -> Endpoint {
    let ledger = workspace.join("office-ledger.jsonl");
    // A JSON string is a TOML basic string: the same escapes, raw Unicode allowed.
    let lines = format!(
        "command = {}\nargs = [{}]\nenv = {{ OFFICE_INJECTIONS = {}, OFFICE_LEDGER = {} }}\n",
        json!(python),
        json!(server().to_str().unwrap()),
        json!(placed.to_string()),
        json!(ledger.to_str().unwrap()),
    );
    Endpoint { lines, ledger }
}

/// The calls the office served in one run, as it recorded them.
pub fn ledger(endpoint: &Endpoint) -> Vec<Value> {
    std::fs::read_to_string(&endpoint.ledger)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn server() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/office_server.py")
}
