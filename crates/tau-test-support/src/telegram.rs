//! The npm `telegram-test-api` Bot API emulator as a test peer. It is found through
//! `TAU_TEST_NPM_BIN` (a `node_modules/.bin` folder; else `.npm-peers/node_modules/.bin` at
//! the repository root, which `scripts/test` fills). Without it a test says why and returns,
//! unless `TAU_PEERS_REQUIRED=1`: then a missing emulator fails the test.
//!
//! Blocking on purpose: end-to-end tests drive processes with `std`; an async test calls
//! these from a multi-threaded runtime.

// A test peer: when it cannot do what a test asks, failing the test loudly is its job.
#![allow(clippy::panic, clippy::indexing_slicing)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

/// The launcher script, beside this file.
const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src/telegram_emulator.js");

fn required() -> bool {
    std::env::var_os("TAU_PEERS_REQUIRED").is_some_and(|v| v == "1")
}

/// The `node_modules` folder holding the npm package `package`, or `None` after saying why
/// not (a failure instead when peers are required).
pub(crate) fn npm_modules(package: &str) -> Option<PathBuf> {
    let bin = std::env::var("TAU_TEST_NPM_BIN").map_or_else(
        |_| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.npm-peers/node_modules/.bin"),
        PathBuf::from,
    );
    let modules = bin.parent().map(Path::to_path_buf).unwrap_or_default();
    let node = Command::new("node").arg("--version").output();
    if modules.join(package).join("package.json").exists() && node.is_ok() {
        return Some(modules);
    }
    let reason = format!(
        "there is no npm peer {package} (and node) in {}; set TAU_TEST_NPM_BIN or run scripts/test, which installs it",
        modules.display()
    );
    assert!(!required(), "TAU_PEERS_REQUIRED is set, but {reason}");
    eprintln!("skipped: {reason}");
    None
}

/// A message the bot sent, as the emulator keeps it (edits applied).
#[derive(Debug, Clone, PartialEq)]
pub struct BotMessage {
    pub id: i64,
    pub chat: i64,
    pub text: String,
    /// The callback data of its buttons, row by row, left to right.
    pub buttons: Vec<String>,
}

/// A running emulator; stopped when dropped.
#[derive(Debug)]
pub struct Emulator {
    child: Child,
    /// Its Bot API root: a bot's methods are at `{url}/bot<token>/<method>`.
    pub url: String,
    port: u16,
    token: String,
}

impl Emulator {
    /// Starts one for the bot with `token`, or says why it cannot (`None`).
    pub fn start(token: &str) -> Option<Self> {
        let modules = npm_modules("telegram-test-api")?;
        let mut child = Command::new("node")
            .arg(SCRIPT)
            .env("NODE_PATH", &modules)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start node: {e}"));
        let mut line = String::new();
        if let Some(stdout) = child.stdout.take() {
            let _ = BufReader::new(stdout).read_line(&mut line);
        }
        let port: u16 = line
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("the emulator said {line:?}"));
        Some(Self {
            child,
            url: format!("http://127.0.0.1:{port}"),
            port,
            token: token.to_owned(),
        })
    }

    /// One POST of JSON to the emulator's client API; its JSON answer.
    fn post(&self, path: &str, body: &Value) -> Value {
        let body = body.to_string();
        let mut stream = TcpStream::connect(("127.0.0.1", self.port))
            .unwrap_or_else(|e| panic!("the emulator is gone: {e}"));
        let request = format!(
            "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        stream
            .write_all(request.as_bytes())
            .unwrap_or_else(|e| panic!("{e}"));
        let mut response = String::new();
        let _ = stream.read_to_string(&mut response);
        let body = response.split_once("\r\n\r\n").map_or("", |(_, body)| body);
        serde_json::from_str(body).unwrap_or(Value::Null)
    }

    fn now() -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
    }

    fn person(user: i64) -> Value {
        json!({"id": user, "first_name": format!("U{user}"), "username": format!("u{user}"), "is_bot": false})
    }

    fn chat(chat: i64) -> Value {
        json!({"id": chat, "first_name": "C", "type": if chat > 0 { "private" } else { "group" }})
    }

    /// `from` writes `text` in `chat`.
    pub fn write(&self, chat: i64, from: i64, text: &str) {
        let message = json!({"botToken": self.token, "from": Self::person(from),
            "chat": Self::chat(chat), "date": Self::now(), "text": text});
        self.post("/sendMessage", &message);
    }

    /// `from` writes `text` in `chat` with more of a message's fields (`forward_origin`,
    /// `quote`, `reply_to_message`), laid over the plain message's.
    pub fn write_with(&self, chat: i64, from: i64, text: &str, fields: &Value) {
        let mut message = json!({"botToken": self.token, "from": Self::person(from),
            "chat": Self::chat(chat), "date": Self::now(), "text": text});
        if let (Some(message), Some(fields)) = (message.as_object_mut(), fields.as_object()) {
            message.extend(fields.clone());
        }
        self.post("/sendMessage", &message);
    }

    /// `from` presses a button carrying `data` under a message in `chat`, as the emulator
    /// sends presses: the message has no id.
    pub fn press(&self, chat: i64, from: i64, data: &str) {
        let press = json!({"botToken": self.token, "from": Self::person(from),
            "message": {"from": Self::person(from), "chat": Self::chat(chat)},
            "date": Self::now(), "data": data});
        self.post("/sendCallback", &press);
    }

    /// The bot's messages, oldest first.
    pub fn bot_messages(&self) -> Vec<BotMessage> {
        let history = self.post("/getUpdatesHistory", &json!({"token": self.token}));
        let items = history["result"].as_array().cloned().unwrap_or_default();
        items
            .iter()
            .filter_map(|item| {
                let message = &item["message"];
                // The bot's messages carry `chat_id`; the people's carry `chat`.
                let chat = match &message["chat_id"] {
                    Value::Number(n) => n.as_i64()?,
                    Value::String(s) => s.parse().ok()?,
                    _ => return None,
                };
                let buttons = message["reply_markup"]["inline_keyboard"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .flat_map(|row| row.as_array().cloned().unwrap_or_default())
                    .filter_map(|b| b["callback_data"].as_str().map(str::to_owned))
                    .collect();
                Some(BotMessage {
                    id: item["messageId"].as_i64()?,
                    chat,
                    text: message["text"].as_str().unwrap_or_default().to_owned(),
                    buttons,
                })
            })
            .collect()
    }

    /// Waits (up to 30 s) until the bot's messages satisfy `check`.
    pub fn wait<T>(&self, what: &str, mut check: impl FnMut(&[BotMessage]) -> Option<T>) -> T {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let messages = self.bot_messages();
            if let Some(value) = check(&messages) {
                return value;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; the bot's messages: {messages:#?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `2026-12-02 14:03:05 UTC` -> `<time>`, so texts with times compare across runs.
pub fn mask_times(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(" UTC") {
        let start = at.saturating_sub(19);
        out.push_str(rest.get(..start).unwrap_or_default());
        out.push_str("<time>");
        rest = rest.get(at + 4..).unwrap_or_default();
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_masked() {
        assert_eq!(
            mask_times("✅ Approved by 1 at 2026-12-02 14:03:05 UTC: ok"),
            "✅ Approved by 1 at <time>: ok"
        );
        assert_eq!(mask_times("no time"), "no time");
    }
}
