//! `tau serve` as a test drives it: the real binary on a free loopback port, and a
//! small HTTP/1.1 client that sends exactly the bytes a test asks for (a wrong `Host`, a
//! request cut in half).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::Tau;

/// A running `tau serve`.
/// Where a test build of tau writes the failpoint it stopped at.
const FAILPOINT_MARK: &str = "failpoint-reached";

/// The bot token the Telegram tests give tau and the emulator.
pub const TELEGRAM_TOKEN: &str = "123456:TEST-token_x";

pub struct Serve {
    pub child: Child,
    pub addr: SocketAddr,
    pub token: String,
    /// Every line it printed so far arrives here.
    pub stdout: mpsc::Receiver<String>,
    /// The lines read before it was ready.
    pub banner: Vec<String>,
}

/// An HTTP response.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Reply {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

impl Tau {
    /// A replay model that runs `echo made >> proof.txt` (tier 2) and then says "Done.".
    pub fn make_proof(&self) -> String {
        self.replay(&serde_json::json!([
            super::tool_call(
                "t1",
                "run_command",
                &serde_json::json!({"command": "echo made >> proof.txt"})
            ),
            super::answer("Done."),
        ]))
    }

    /// What the proof command wrote, if it ran.
    pub fn proof(&self) -> Option<String> {
        std::fs::read_to_string(self.workspace().join("proof.txt")).ok()
    }

    /// `tau.toml` for a hub on a free port, plus `extra`.
    pub fn serve_config(&self, extra: &str) -> std::path::PathBuf {
        self.config(&format!("[web]\nlisten = \"127.0.0.1:0\"\n{extra}"))
    }

    /// `tau serve` with Telegram on the Bot API emulator at `api_url` (the bot's token in
    /// [`TELEGRAM_TOKEN`], `owner` its owner, quick polls and edits; `telegram` adds keys to
    /// `[telegram]`) and `model`.
    pub fn serve_telegram(&self, model: &str, api_url: &str, owner: i64, telegram: &str) -> Serve {
        let config = self.serve_config(&format!(
            "[telegram]\nowners = [{owner}]\napi_url = \"{api_url}\"\npoll_timeout_seconds = 0\n\
             min_poll_interval_ms = 50\nedit_interval_ms = 50\n{telegram}"
        ));
        self.serve_env(model, &config, &[("TAU_TELEGRAM_TOKEN", TELEGRAM_TOKEN)])
    }

    /// `tau serve` that stops dead at the failpoint `failpoint` (only test builds have
    /// them) and says so in a mark file; [`Tau::at_failpoint`] reads it.
    pub fn serve_at_failpoint(
        &self,
        model: &str,
        config: &std::path::Path,
        failpoint: &str,
    ) -> Serve {
        let mark = self.home().join(FAILPOINT_MARK);
        self.serve_env(
            model,
            config,
            &[
                ("TAU_FAILPOINT", failpoint),
                ("TAU_FAILPOINT_MARK", mark.to_str().unwrap()),
            ],
        )
    }

    /// `Some` once a `tau serve` started by [`Tau::serve_at_failpoint`] stopped at
    /// `failpoint`.
    pub fn at_failpoint(&self, failpoint: &str) -> Option<()> {
        std::fs::read_to_string(self.home().join(FAILPOINT_MARK))
            .ok()
            .filter(|m| m == failpoint)
            .map(|_| ())
    }

    /// Starts `tau serve` with `model` and waits until it says where TauBar is.
    pub fn serve(&self, model: &str, config: &std::path::Path) -> Serve {
        self.serve_env(model, config, &[])
    }

    /// [`Tau::serve`] with these extra environment variables.
    pub fn serve_env(&self, model: &str, config: &std::path::Path, env: &[(&str, &str)]) -> Serve {
        self.serve_under(&[], model, config, env)
    }

    /// [`Tau::serve_env`] started with this open-files limit (soft, hard), as a shell's
    /// `ulimit -n` would leave it, through util-linux `prlimit`, which execs tau in place
    /// (its pid is tau's).
    pub fn serve_with_open_files(
        &self,
        model: &str,
        config: &std::path::Path,
        env: &[(&str, &str)],
        (soft, hard): (u64, u64),
    ) -> Serve {
        let nofile = format!("--nofile={soft}:{hard}");
        self.serve_under(&["prlimit", &nofile], model, config, env)
    }

    /// `tau serve` under `setsid -w`, `before` coming between the two.
    fn serve_under(
        &self,
        before: &[&str],
        model: &str,
        config: &std::path::Path,
        env: &[(&str, &str)],
    ) -> Serve {
        let mut command = self.command_in_session(
            before,
            &[
                "--config",
                config.to_str().unwrap(),
                "--model",
                model,
                "serve",
            ],
        );
        for (key, value) in env {
            command.env(key, value);
        }
        let mut child = super::spawn(
            command
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit()),
        );
        let (sender, receiver) = mpsc::channel();
        let stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        let mut banner = Vec::new();
        let addr = loop {
            let line = receiver
                .recv_timeout(Duration::from_secs(30))
                .unwrap_or_else(|_| panic!("tau serve did not start: {banner:?}"));
            banner.push(line.clone());
            if let Some(rest) = line.strip_prefix("tau serve: TauBar at http://") {
                break rest.trim_end_matches('/').parse().unwrap();
            }
        };
        // The token line comes right after, then what recovery found, in one write.
        banner.push(receiver.recv_timeout(Duration::from_secs(5)).unwrap());
        while let Ok(line) = receiver.recv_timeout(Duration::from_millis(300)) {
            banner.push(line);
        }
        let token = std::fs::read_to_string(self.home().join("web-token"))
            .unwrap()
            .trim()
            .to_owned();
        Serve {
            child,
            addr,
            token,
            stdout: receiver,
            banner,
        }
    }
}

/// What a request to a running hub needs: where it listens and its token. Unlike
/// [`Serve`] (which owns the process and its output) it can be cloned into other threads.
#[derive(Debug, Clone)]
pub struct Api {
    pub addr: SocketAddr,
    pub token: String,
}

impl Api {
    pub fn host(&self) -> String {
        self.addr.to_string()
    }

    pub fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A request with the token, `Host` set right and, for a change, `Origin` too.
    pub fn call(&self, method: &str, path: &str, body: Option<&str>) -> Reply {
        let bearer = format!("Bearer {}", self.token);
        let host = self.host();
        let origin = self.origin();
        let mut headers = vec![("Host", host.as_str()), ("Authorization", bearer.as_str())];
        if method != "GET" {
            headers.push(("Origin", origin.as_str()));
        }
        request(self.addr, method, path, &headers, body)
    }

    pub fn get(&self, path: &str) -> Reply {
        self.call("GET", path, None)
    }

    pub fn post(&self, path: &str, body: &str) -> Reply {
        self.call("POST", path, Some(body))
    }

    /// A new conversation's id.
    pub fn new_session(&self) -> String {
        let reply = self.post("/api/sessions", "");
        assert_eq!(reply.status, 201, "{reply:?}");
        reply.json()["id"].as_str().unwrap().to_owned()
    }

    /// Sends a message and waits until the question it leads to is stored.
    pub fn ask(&self, session: &str, text: &str) -> Value {
        let body = serde_json::json!({ "text": text }).to_string();
        let reply = self.post(&format!("/api/sessions/{session}/messages"), &body);
        assert_eq!(reply.status, 202, "{reply:?}");
        self.until(|api| {
            let rows = api.get("/api/approvals?state=pending").json();
            rows.as_array()
                .unwrap()
                .iter()
                .find(|r| r["session"] == session)
                .cloned()
        })
    }

    /// The question `id` as the API lists it now (every channel's), `None` for none.
    pub fn question(&self, id: &str) -> Option<Value> {
        let rows = self.get("/api/approvals?channel=all").json();
        rows.as_array()?.iter().find(|r| r["id"] == id).cloned()
    }

    /// Answers question `id` with `body` as a script must: an approving answer reads the
    /// question first and names the card it approves (`card_sha256`).
    pub fn answer(&self, id: &str, body: &Value) -> Reply {
        let mut body = body.clone();
        if body["decision"] == "approve"
            && let Some(question) = self.question(id)
        {
            body["card_sha256"] = question["card_sha256"].clone();
        }
        self.post(&format!("/api/approvals/{id}"), &body.to_string())
    }

    /// A plain yes to question `id`, naming its card.
    pub fn approve(&self, id: &str) -> Reply {
        self.answer(id, &serde_json::json!({"decision": "approve"}))
    }

    /// Polls `check` until it gives a value (10 s at most).
    pub fn until<T>(&self, mut check: impl FnMut(&Self) -> Option<T>) -> T {
        poll(|| check(self))
    }

    /// The stored messages once the last one is the model's text `answer`.
    pub fn until_answered(&self, session: &str, answer: &str) -> Vec<Value> {
        self.until(|api| {
            let messages = api.get(&format!("/api/sessions/{session}/messages")).json();
            let messages = messages.as_array().unwrap().clone();
            let last = messages.last()?;
            (last["role"] == "assistant" && last["content"][0]["text"] == answer)
                .then_some(messages)
        })
    }
}

/// Polls `check` every 50 ms until it gives a value (10 s at most).
fn poll<T>(mut check: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(value) = check() {
            return value;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "timed out waiting"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

impl Serve {
    /// A handle for requests that other threads can hold.
    pub fn api(&self) -> Api {
        Api {
            addr: self.addr,
            token: self.token.clone(),
        }
    }

    pub fn host(&self) -> String {
        self.api().host()
    }

    pub fn origin(&self) -> String {
        self.api().origin()
    }

    /// A request with the token, `Host` set right and, for a change, `Origin` too.
    pub fn call(&self, method: &str, path: &str, body: Option<&str>) -> Reply {
        self.api().call(method, path, body)
    }

    pub fn get(&self, path: &str) -> Reply {
        self.call("GET", path, None)
    }

    pub fn post(&self, path: &str, body: &str) -> Reply {
        self.call("POST", path, Some(body))
    }

    /// A new conversation's id.
    pub fn new_session(&self) -> String {
        self.api().new_session()
    }

    /// Sends a message and waits until the question it leads to is stored.
    pub fn ask(&self, session: &str, text: &str) -> Value {
        self.api().ask(session, text)
    }

    /// Polls `check` until it gives a value (10 s at most).
    pub fn until<T>(&self, mut check: impl FnMut(&Self) -> Option<T>) -> T {
        poll(|| check(self))
    }

    /// The stored messages once the last one is the model's text `answer`.
    pub fn until_answered(&self, session: &str, answer: &str) -> Vec<Value> {
        self.api().until_answered(session, answer)
    }

    /// The question `id` as the API lists it now (every channel's), `None` for none.
    pub fn question(&self, id: &str) -> Option<Value> {
        self.api().question(id)
    }

    /// Answers question `id` with `body`; an approving answer names the card it approves.
    pub fn answer(&self, id: &str, body: &Value) -> Reply {
        self.api().answer(id, body)
    }

    /// A plain yes to question `id`, naming its card.
    pub fn approve(&self, id: &str) -> Reply {
        self.api().approve(id)
    }

    /// SIGKILL: no shutdown at all.
    pub fn kill_hard(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    /// SIGTERM, and the exit code and what it printed last.
    pub fn terminate(mut self) -> (i32, Vec<String>) {
        let pid = self.child.id().to_string();
        std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap();
        let status = self.child.wait().unwrap();
        let rest: Vec<String> = self.stdout.try_iter().collect();
        (status.code().unwrap_or(-1), rest)
    }
}

impl Drop for Serve {
    /// A test that fails leaves no hub behind.
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Sends one request with exactly these headers (and `Content-Length` for a body) and
/// reads the whole response.
pub fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> Reply {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut head = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    let body = body.unwrap_or("");
    if method != "GET" {
        head.push_str("Content-Type: application/json\r\n");
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body.as_bytes()).unwrap();
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    parse(&raw)
}

fn parse(raw: &[u8]) -> Reply {
    let text = String::from_utf8_lossy(raw).into_owned();
    let (head, body) = text
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("no response: {text:?}"));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {head:?}"));
    let headers = lines
        .filter_map(|l| l.split_once(": "))
        .map(|(n, v)| (n.to_owned(), v.to_owned()))
        .collect();
    Reply {
        status,
        headers,
        body: body.to_owned(),
    }
}

/// An open event stream: reads `event:`/`data:` pairs as they come.
pub struct Events {
    reader: BufReader<TcpStream>,
}

impl Events {
    pub fn open(serve: &Serve, session: &str) -> Self {
        let mut stream = TcpStream::connect(serve.addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(15)))
            .unwrap();
        let head = format!(
            "GET /api/sessions/{session}/events HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\n\r\n",
            serve.host(),
            serve.token
        );
        stream.write_all(head.as_bytes()).unwrap();
        let mut reader = BufReader::new(stream);
        let mut status = String::new();
        reader.read_line(&mut status).unwrap();
        assert!(status.contains(" 200 "), "{status}");
        Self { reader }
    }

    /// The next event as (name, data); `message` when it has no name.
    pub fn next(&mut self) -> (String, Value) {
        let mut name = "message".to_owned();
        let mut data = None;
        loop {
            let mut line = String::new();
            let read = self.reader.read_line(&mut line).unwrap();
            assert!(read > 0, "the stream ended");
            let line = line.trim_end();
            if let Some(event) = line.strip_prefix("event:") {
                name = event.trim().to_owned();
            } else if let Some(text) = line.strip_prefix("data:") {
                data = Some(serde_json::from_str(text.trim()).unwrap());
            } else if line.is_empty()
                && let Some(data) = data.take()
            {
                return (name, data);
            }
        }
    }

    /// Events until a `turn_ended` with `stop_reason`.
    pub fn until_turn_ends(&mut self, stop_reason: &str) -> Vec<Value> {
        let mut seen = Vec::new();
        loop {
            let (name, data) = self.next();
            let done = name == "message"
                && data["type"] == "turn_ended"
                && data["stop_reason"] == stop_reason;
            seen.push(serde_json::json!({"event": name, "data": data}));
            if done {
                return seen;
            }
        }
    }
}

/// The open-files limit (soft, hard) of process `pid` (`self` for this one), from
/// `/proc/PID/limits`; "unlimited" reads as `u64::MAX`.
pub fn open_files(pid: &str) -> (u64, u64) {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap_or_else(|| panic!("no open-files line: {limits}"));
    let value = |word: &str| word.parse().unwrap_or(u64::MAX);
    let words: Vec<&str> = line["Max open files".len()..].split_whitespace().collect();
    (value(words[0]), value(words[1]))
}
