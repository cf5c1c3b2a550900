//! npm's `web-push-testing` as a test peer: a mock push service (RFC 8030) that takes
//! subscriptions, accepts pushes only with a valid VAPID token (RFC 8292), decrypts each
//! (RFC 8291) with the subscription's keys and keeps it to be read back, and answers 410
//! for a subscription made to expire. Found like the other npm peers (`TAU_TEST_NPM_BIN`,
//! else `.npm-peers`); without it a test says why and returns, unless
//! `TAU_PEERS_REQUIRED=1`.

// A test peer: when it cannot do what a test asks, failing the test loudly is its job.
#![allow(clippy::panic, clippy::indexing_slicing)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};

use crate::telegram::npm_modules;

/// The launcher script, beside this file.
const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src/web_push_service.js");

/// A running mock push service; stopped when dropped.
#[derive(Debug)]
pub struct PushService {
    child: Child,
    port: u16,
}

/// A device's subscription as the push service made it.
#[derive(Debug, Clone)]
pub struct Subscribed {
    /// `PushSubscription.toJSON()`: `endpoint` and `keys` (`p256dh`, `auth`).
    pub subscription: Value,
    /// Names it to the service's own API.
    pub client_hash: String,
}

impl PushService {
    /// Starts one, or says why it cannot (`None`).
    pub fn start() -> Option<Self> {
        let modules = npm_modules("web-push-testing")?;
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
            .unwrap_or_else(|_| panic!("the push service said {line:?}"));
        Some(Self { child, port })
    }

    /// One POST of JSON to the service's API: the status and the JSON answer.
    fn post(&self, path: &str, body: &Value) -> (u16, Value) {
        let body = body.to_string();
        let mut stream = TcpStream::connect(("127.0.0.1", self.port))
            .unwrap_or_else(|e| panic!("the push service is gone: {e}"));
        let request = format!(
            "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        stream
            .write_all(request.as_bytes())
            .unwrap_or_else(|e| panic!("{e}"));
        let mut response = String::new();
        let _ = stream.read_to_string(&mut response);
        let status = response
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let body = response.split_once("\r\n\r\n").map_or("", |(_, body)| body);
        (status, serde_json::from_str(body).unwrap_or(Value::Null))
    }

    /// Subscribes a device to pushes signed with the VAPID public key `server_key`
    /// (base64url), as a browser's `pushManager.subscribe` would.
    pub fn subscribe(&self, server_key: &str) -> Subscribed {
        let (status, answer) = self.post(
            "/subscribe",
            &json!({"userVisibleOnly": "true", "applicationServerKey": server_key}),
        );
        assert_eq!(status, 200, "subscribe: {answer}");
        let data = &answer["data"];
        Subscribed {
            subscription: json!({"endpoint": data["endpoint"], "keys": data["keys"]}),
            client_hash: data["clientHash"]
                .as_str()
                .unwrap_or_else(|| panic!("no clientHash: {answer}"))
                .to_owned(),
        }
    }

    /// The pushes the device received, decrypted, oldest first.
    pub fn received(&self, device: &Subscribed) -> Vec<String> {
        let (status, answer) = self.post(
            "/get-notifications",
            &json!({"clientHash": device.client_hash}),
        );
        assert_eq!(status, 200, "get-notifications: {answer}");
        answer["data"]["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|m| m.as_str().map(str::to_owned))
            .collect()
    }

    /// The device unsubscribed: the service answers 410 to every push for it from now on.
    pub fn expire(&self, device: &Subscribed) {
        let (status, answer) = self.post(
            &format!("/expire-subscription/{}", device.client_hash),
            &json!({}),
        );
        assert_eq!(status, 200, "expire-subscription: {answer}");
    }
}

impl Drop for PushService {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
