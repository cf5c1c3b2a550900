//! TauBar's browser tests' share: Debian's headless Chromium and chromedriver, a client
//! per window size, clicks, and waits on what the page shows. Included by the browser
//! test files with `#[path]`.
// Each test file that includes it uses its own part of it.
#![allow(dead_code)]

use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};

/// Chromium and its driver, or `None` after saying why not.
pub fn browser() -> Option<(PathBuf, PathBuf)> {
    let find = |names: &[&str]| names.iter().map(PathBuf::from).find(|p| p.exists());
    let chromium = find(&["/usr/bin/chromium", "/usr/bin/chromium-browser"]);
    let driver = find(&["/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver"]);
    match (chromium, driver) {
        (Some(chromium), Some(driver)) => Some((chromium, driver)),
        _ => {
            let reason = "Debian's chromium and chromium-driver are not installed";
            assert!(
                !crate::common::peers::required(),
                "TAU_PEERS_REQUIRED is set, but {reason}"
            );
            eprintln!("skipped: {reason}");
            None
        }
    }
}

pub struct Driver {
    child: Child,
    port: u16,
    _profile: tempfile::TempDir,
}

impl Drop for Driver {
    fn drop(&mut self) {
        // The driver leads a process group of its own: the Chromium it started goes with
        // it, not only the driver (an orphaned browser would outlive the test).
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.child.id())])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

pub fn start_driver(driver: &Path) -> Driver {
    let port = free_port();
    let child = Command::new(driver)
        .arg(format!("--port={port}"))
        .process_group(0)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "chromedriver did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    Driver {
        child,
        port,
        _profile: tempfile::tempdir().unwrap(),
    }
}

pub async fn connect(driver: &Driver, chromium: &Path, width: u32, height: u32) -> Client {
    let profile = driver._profile.path().join(format!("profile-{width}"));
    let capabilities = json!({
        "goog:chromeOptions": {
            "binary": chromium,
            "args": [
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync",
                "--disable-dev-shm-usage",
                format!("--window-size={width},{height}"),
                format!("--user-data-dir={}", profile.display()),
            ],
            // The test profile allows notifications, as a person who said yes once has.
            "prefs": {"profile.default_content_setting_values.notifications": 1}
        }
    });
    let Value::Object(capabilities) = capabilities else {
        unreachable!("a JSON object")
    };
    ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
        .capabilities(capabilities)
        .connect(&format!("http://127.0.0.1:{}", driver.port))
        .await
        .unwrap()
}

/// Runs the DevTools command `cmd` in `client`'s browser through chromedriver's
/// `goog/cdp/execute` (fantoccini has no call for it) and returns its result.
pub async fn cdp(driver: &Driver, client: &Client, cmd: &str, params: Value) -> Value {
    use std::io::{Read, Write};
    let session = client.session_id().await.unwrap().unwrap();
    let body = json!({"cmd": cmd, "params": params}).to_string();
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", driver.port)).unwrap();
    write!(
        stream,
        "POST /session/{session}/goog/cdp/execute HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        driver.port,
        body.len()
    )
    .unwrap();
    // chromedriver keeps the connection open: the answer ends where its length says.
    let mut response = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let read = stream.read(&mut chunk).unwrap();
        assert!(read > 0, "{cmd}: chromedriver closed the connection");
        response.extend_from_slice(&chunk[..read]);
        let text = String::from_utf8_lossy(&response);
        let Some((head, body)) = text.split_once("\r\n\r\n") else {
            continue;
        };
        let length: usize = head
            .lines()
            .find_map(|line| {
                let (name, value) = line.split_once(':')?;
                name.eq_ignore_ascii_case("content-length")
                    .then(|| value.trim().parse().ok())?
            })
            .unwrap_or_else(|| panic!("{cmd}: no length in {head}"));
        if body.len() < length {
            continue;
        }
        assert!(head.starts_with("HTTP/1.1 200"), "{cmd}: {text}");
        let reply: Value = serde_json::from_str(body).unwrap();
        return reply["value"].clone();
    }
}

/// Opens TauBar on `host` with the token in the address (the page trades it for its
/// cookie) and waits until the app shows.
pub async fn open_page(client: &Client, host: &str, token: &str) {
    client
        .goto(&format!("http://{host}/#token={token}"))
        .await
        .unwrap();
    until(
        client,
        "the app",
        "return !document.getElementById('app').hidden",
    )
    .await;
}

/// Clicks the element `locator` finds.
pub async fn click(client: &Client, locator: Locator<'_>) {
    client.find(locator).await.unwrap().click().await.unwrap();
}

/// Waits until `script` (returning a value) gives something truthy; returns it.
pub async fn until(client: &Client, what: &str, script: &str) -> Value {
    let started = Instant::now();
    loop {
        let value = client.execute(script, vec![]).await.unwrap();
        let truthy = !matches!(&value, Value::Null | Value::Bool(false))
            && value != json!("")
            && value != json!(0);
        if truthy {
            return value;
        }
        if started.elapsed() > Duration::from_secs(20) {
            let page = client
                .execute("return document.body.innerText", vec![])
                .await
                .unwrap();
            panic!(
                "timed out waiting for {what}; the page reads:\n{}",
                page.as_str().unwrap_or("")
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
