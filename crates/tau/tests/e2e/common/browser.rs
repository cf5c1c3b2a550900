//! TauBar's browser tests' share: Debian's headless Chromium and chromedriver, a client
//! per window size, clicks, waits on what the page shows, and axe-core's accessibility
//! run. Included by the browser test files with `#[path]`.
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
    session_call(
        driver,
        client,
        "goog/cdp/execute",
        &json!({"cmd": cmd, "params": params}),
    )
    .await
}

/// POSTs `body` to chromedriver's `/session/{id}/{path}` (a WebDriver extension fantoccini
/// has no call for: DevTools, the WebAuthn virtual authenticators) and returns its `value`.
pub async fn session_call(driver: &Driver, client: &Client, path: &str, body: &Value) -> Value {
    use std::io::{Read, Write};
    let session = client.session_id().await.unwrap().unwrap();
    let body = body.to_string();
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", driver.port)).unwrap();
    write!(
        stream,
        "POST /session/{session}/{path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        driver.port,
        body.len()
    )
    .unwrap();
    // chromedriver keeps the connection open: the answer ends where its length says.
    let mut response = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let read = stream.read(&mut chunk).unwrap();
        assert!(read > 0, "{path}: chromedriver closed the connection");
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
            .unwrap_or_else(|| panic!("{path}: no length in {head}"));
        if body.len() < length {
            continue;
        }
        assert!(head.starts_with("HTTP/1.1 200"), "{path}: {text}");
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

/// Runs axe-core's WCAG 2.0 and 2.1 A and AA rules on the whole page; each violation as
/// its rule, impact, help and, per element, its selector and axe's summary.
pub const AXE_RUN: &str = "const done = arguments[arguments.length - 1]; \
    axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] }, resultTypes: ['violations', 'incomplete'] }) \
      .then((r) => done({ passed: r.passes.map((p) => p.id), \
        undecided: r.incomplete.flatMap((i) => i.nodes.map((n) => `${i.id} ${n.target}: ${n.any.map((c) => c.message).join('; ')}`)), violations: r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, \
        nodes: v.nodes.map((n) => ({ target: n.target, summary: n.failureSummary })) })) }), \
        (e) => done({ error: String(e) }));";

/// Asserts axe-core finds nothing on the page as it is now, in `theme`; returns the rules
/// that applied and passed.
pub async fn no_violations(client: &Client, theme: &str) -> Vec<String> {
    let report = client.execute_async(AXE_RUN, vec![]).await.unwrap();
    assert!(report["error"].is_null(), "axe failed: {report}");
    let passed = report["passed"].as_array().unwrap();
    assert!(
        passed.contains(&json!("color-contrast")),
        "the contrast rule ran and passed in {theme}: {report}"
    );
    // What axe could not decide is told. Contrast it could not decide fails: a badge's one
    // digit is "too short" for axe to call it text, and white on the dark theme's amber
    // would slip through as undecided.
    let undecided = report["undecided"].as_array().unwrap();
    for item in undecided {
        eprintln!("{theme}: axe-core could not decide {item}");
    }
    assert!(
        !undecided
            .iter()
            .any(|item| item.as_str().unwrap().starts_with("color-contrast ")),
        "axe-core could not decide some contrast in the {theme} theme: {undecided:?}"
    );
    let violations = report["violations"].as_array().unwrap();
    if !violations.is_empty() {
        let mut told = String::new();
        for violation in violations {
            told.push_str(&format!(
                "\n{} ({}): {}",
                violation["id"].as_str().unwrap_or(""),
                violation["impact"].as_str().unwrap_or(""),
                violation["help"].as_str().unwrap_or("")
            ));
            for node in violation["nodes"].as_array().unwrap() {
                told.push_str(&format!(
                    "\n  {}\n    {}",
                    node["target"],
                    node["summary"]
                        .as_str()
                        .unwrap_or("")
                        .replace('\n', "\n    ")
                ));
            }
        }
        panic!(
            "axe-core finds {} violations in the {theme} theme:{told}",
            violations.len()
        );
    }
    passed
        .iter()
        .filter_map(|rule| rule.as_str().map(str::to_owned))
        .collect()
}

/// Puts axe-core into the page as it is now (WebDriver's script runs past the page's
/// content security policy, which allows no inline script).
pub async fn inject(client: &Client, axe: &str) {
    let loaded = client
        .execute(&format!("{axe}\n;return typeof window.axe"), vec![])
        .await
        .unwrap();
    assert_eq!(loaded, json!("object"), "axe-core is in the page");
}

pub async fn scheme(driver: &Driver, client: &Client, theme: &str) {
    cdp(
        driver,
        client,
        "Emulation.setEmulatedMedia",
        json!({"features": [{"name": "prefers-color-scheme", "value": theme}]}),
    )
    .await;
    until(
        client,
        "the color scheme",
        &format!("return matchMedia('(prefers-color-scheme: {theme})').matches"),
    )
    .await;
}
