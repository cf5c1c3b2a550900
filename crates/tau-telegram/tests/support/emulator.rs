//! The npm `telegram-test-api` Bot API emulator as a peer: found through
//! `TAU_TEST_NPM_BIN` (else `.npm-peers/node_modules/.bin` at the repository root, which
//! `scripts/test` fills). Without it a test says why and returns, unless
//! `TAU_PEERS_REQUIRED=1`: then a missing emulator fails the test.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use super::TOKEN;

fn required() -> bool {
    std::env::var_os("TAU_PEERS_REQUIRED").is_some_and(|v| v == "1")
}

fn missing<T>(reason: &str) -> Option<T> {
    assert!(!required(), "TAU_PEERS_REQUIRED is set, but {reason}");
    eprintln!("skipped: {reason}");
    None
}

/// The `node_modules` folder holding `telegram-test-api`.
fn modules() -> Option<PathBuf> {
    let bin = std::env::var("TAU_TEST_NPM_BIN").map_or_else(
        |_| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.npm-peers/node_modules/.bin"),
        PathBuf::from,
    );
    let modules = bin.parent()?.to_path_buf();
    let node = std::process::Command::new("node").arg("--version").output();
    if modules.join("telegram-test-api/package.json").exists() && node.is_ok() {
        Some(modules)
    } else {
        missing(&format!(
            "there is no npm peer telegram-test-api (and node) in {}; set TAU_TEST_NPM_BIN or run scripts/test, which installs it",
            modules.display()
        ))
    }
}

/// A running emulator, stopped when dropped.
pub struct Emulator {
    _child: Child,
    pub url: String,
    http: reqwest::Client,
}

impl Emulator {
    /// Starts one, or says why it cannot (`None`).
    pub async fn start() -> Option<Self> {
        let modules = modules()?;
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/emulator.js");
        let mut child = Command::new("node")
            .arg(script)
            .env("NODE_PATH", &modules)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .await
            .unwrap();
        let port: u16 = line
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("emulator said {line:?}"));
        Some(Self {
            _child: child,
            url: format!("http://127.0.0.1:{port}"),
            http: reqwest::Client::new(),
        })
    }

    async fn post(&self, path: &str, body: Value) -> Value {
        let response = self
            .http
            .post(format!("{}{path}", self.url))
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .unwrap();
        serde_json::from_slice(&response.bytes().await.unwrap()).unwrap_or(Value::Null)
    }

    fn person(user: i64) -> Value {
        json!({"id": user, "first_name": format!("U{user}"), "username": format!("u{user}"), "is_bot": false})
    }

    fn chat(chat: i64) -> Value {
        json!({"id": chat, "first_name": "C", "type": if chat > 0 { "private" } else { "group" }})
    }

    /// `from` writes `text` in `chat`.
    pub async fn write(&self, chat: i64, from: i64, text: &str) {
        let message = json!({"botToken": TOKEN, "from": Self::person(from), "chat": Self::chat(chat),
            "date": jiff::Timestamp::now().as_second(), "text": text});
        self.post("/sendMessage", message).await;
    }

    /// `from` presses a button carrying `data` under a message in `chat` (as the emulator
    /// does it: the message has no id).
    pub async fn press(&self, chat: i64, from: i64, data: &str) {
        let press = json!({"botToken": TOKEN, "from": Self::person(from),
            "message": {"from": Self::person(from), "chat": Self::chat(chat)},
            "date": jiff::Timestamp::now().as_second(), "data": data});
        self.post("/sendCallback", press).await;
    }

    /// The bot's messages (edits applied), oldest first: (message id, chat, text, buttons'
    /// callback data).
    pub async fn bot_messages(&self) -> Vec<BotMessage> {
        let history = self
            .post("/getUpdatesHistory", json!({"token": TOKEN}))
            .await;
        history["result"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .filter(|item| {
                item["message"]["chat_id"].is_number() || item["message"]["chat_id"].is_string()
            })
            .map(|item| BotMessage {
                id: item["messageId"].as_i64().unwrap_or_default(),
                chat: item["message"]["chat_id"]
                    .to_string()
                    .trim_matches('"')
                    .parse()
                    .unwrap_or_default(),
                text: item["message"]["text"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                buttons: item["message"]["reply_markup"]["inline_keyboard"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
                    .iter()
                    .flat_map(|row| row.as_array().cloned().unwrap_or_default())
                    .filter_map(|b| b["callback_data"].as_str().map(str::to_owned))
                    .collect(),
            })
            .collect()
    }

    /// Waits until the bot's messages satisfy `check`.
    pub async fn wait<T>(
        &self,
        what: &str,
        mut check: impl FnMut(&[BotMessage]) -> Option<T>,
    ) -> T {
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
        loop {
            let messages = self.bot_messages().await;
            if let Some(value) = check(&messages) {
                return value;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "timed out waiting for {what}; the bot's messages: {messages:#?}"
            );
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }
}

/// A message the bot sent, as the emulator keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct BotMessage {
    pub id: i64,
    pub chat: i64,
    pub text: String,
    pub buttons: Vec<String>,
}
