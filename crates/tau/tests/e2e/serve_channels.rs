//! A channel that fails stops alone: a Bot API that answers `getUpdates` with 409 (another
//! program polls) or 401 (a refused token) stops Telegram with one clear error, an audit
//! line, a line in `tau serve`'s output and log, and a note on TauBar, while TauBar and the
//! routines go on. A proxy in front of the Bot API that answers with an error page quoting
//! the token's URL never gets the token into a log. The Bot API here is a scripted one: it
//! answers every request the same way.

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::serve::Serve;
use common::{Tau, answer};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// A token in the shape BotFather gives out.
const TOKEN: &str = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw";
const OWNER: i64 = 4242;

/// A Bot API (or a proxy in front of one) that answers every request with `status`,
/// `content_type` and `body`, where `{path}` stands for the request's path (which holds
/// the token). Returns its URL and how many requests it got.
fn scripted_bot_api(
    status: &'static str,
    content_type: &'static str,
    body: &'static str,
) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let requests = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&requests);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request_line = String::new();
            let _ = reader.read_line(&mut request_line);
            let mut length = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = value.trim().parse().unwrap_or(0);
                }
            }
            let mut request_body = vec![0; length];
            let _ = reader.read_exact(&mut request_body);
            counted.fetch_add(1, Ordering::SeqCst);
            let path = request_line.split(' ').nth(1).unwrap_or_default();
            let body = body.replace("{path}", path);
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (url, requests)
}

/// `tau serve` with TauBar, Telegram at `api_url` and a routine that notes a tick every
/// second.
fn serve_with_telegram(tau: &Tau, api_url: &str) -> Serve {
    let config = tau.serve_config(&format!(
        "[telegram]\nowners = [{OWNER}]\napi_url = \"{api_url}\"\npoll_timeout_seconds = 0\n\
         min_poll_interval_ms = 50\n\n\
         [[routines]]\nname = \"tick\"\nevery = \"1s\"\ntool = \"append_note\"\narguments = {{ text = \"tick\" }}\n"
    ));
    tau.serve_env(
        &tau.replay(&json!([answer("still here")])),
        &config,
        &[("TAU_TELEGRAM_TOKEN", TOKEN)],
    )
}

fn wait_for<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(value) = check() {
            return value;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn log_of(tau: &Tau) -> String {
    tau.log()
}

fn ticks(tau: &Tau) -> usize {
    tau.audit()
        .iter()
        .filter(|l| l["type"] == "routine_run" && l["routine"] == "tick")
        .count()
}

#[test]
fn a_409_or_a_401_stops_telegram_alone_and_says_why_everywhere() {
    let cases = [
        (
            "409 Conflict",
            r#"{"ok":false,"error_code":409,"description":"Conflict: terminated by other getUpdates request; make sure that only one bot instance is running"}"#,
            "another program is reading this bot's updates (409: Conflict: terminated by other getUpdates request; make sure that only one bot instance is running); stop it or remove the bot's webhook, then start tau again",
        ),
        (
            "401 Unauthorized",
            r#"{"ok":false,"error_code":401,"description":"Unauthorized"}"#,
            "Telegram does not accept the bot token (401: Unauthorized)",
        ),
    ];
    for (status, body, why) in cases {
        let (url, requests) = scripted_bot_api(status, "application/json", body);
        let tau = Tau::new();
        let serve = serve_with_telegram(&tau, &url);

        // The page learns which channel is down and why.
        let channels = wait_for("telegram shown as stopped", || {
            let channels = serve.get("/api/channels").json();
            let down = channels
                .as_array()?
                .iter()
                .any(|c| c["name"] == "telegram" && c["state"] == "stopped");
            down.then_some(channels)
        });
        let mut channels = channels.as_array().unwrap().clone();
        channels.sort_by_key(|c| c["name"].as_str().unwrap_or_default().to_owned());
        assert_eq!(
            channels,
            vec![
                json!({"name": "telegram", "state": "stopped", "error": why}),
                json!({"name": "web", "state": "running"}),
            ],
            "{status}"
        );
        // Polling stopped: no retry storm against a Bot API that said no.
        let asked = requests.load(Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(500));
        assert_eq!(requests.load(Ordering::SeqCst), asked, "{status}");

        // TauBar and the routines go on.
        let session = serve.new_session();
        let sent = serve.post(
            &format!("/api/sessions/{session}/messages"),
            r#"{"text":"are you there?"}"#,
        );
        assert_eq!(sent.status, 202, "{status}");
        serve.until_answered(&session, "still here");
        let before = ticks(&tau);
        wait_for("the routine ticking on", || {
            (ticks(&tau) > before).then_some(())
        });

        // One audit line, one line of output, one error in the log.
        let stopped: Vec<Value> = tau
            .audit()
            .into_iter()
            .filter(|l| l["type"] == "channel_stopped")
            .map(|mut l| {
                let line = l.as_object_mut().unwrap();
                for key in ["at", "seq", "prev"] {
                    line.remove(key);
                }
                l
            })
            .collect();
        assert_eq!(
            stopped,
            vec![
                json!({"type": "channel_stopped", "session": "serve", "channel": "telegram", "error": why})
            ],
            "{status}"
        );
        // Said once, whether before or after the banner was read.
        let said: Vec<String> = serve
            .banner
            .iter()
            .cloned()
            .chain(serve.stdout.try_iter())
            .filter(|l| l.contains("stopped"))
            .collect();
        assert_eq!(
            said,
            vec![format!(
                "tau serve: the telegram channel stopped: {why}; the other channels and the routines go on"
            )],
            "{status}"
        );
        let log = log_of(&tau);
        let errors: Vec<&str> = log.lines().filter(|l| l.contains("ERROR")).collect();
        assert_eq!(errors.len(), 1, "{status}: {log}");
        assert!(
            errors[0].contains("a channel stopped") && errors[0].contains(why),
            "{status}: {}",
            errors[0]
        );
        for (place, text) in [
            ("log", log),
            ("audit", tau.audit().iter().map(Value::to_string).collect()),
        ] {
            assert!(
                !text.contains(TOKEN),
                "{status}: the token is in the {place}"
            );
        }
        serve.kill_hard();
    }
}

#[test]
fn a_proxy_error_page_quoting_the_token_url_is_logged_without_the_token() {
    let (url, requests) = scripted_bot_api(
        "502 Bad Gateway",
        "text/html",
        "<html><head><title>502 Bad Gateway</title></head><body><h1>Bad Gateway</h1>\
         <p>The proxy could not reach the upstream server for POST https://api.telegram.org{path}</p></body></html>",
    );
    let tau = Tau::new();
    let serve = serve_with_telegram(&tau, &url);
    let logged = wait_for("the error page in the log", || {
        let log = log_of(&tau);
        log.contains("Bad Gateway").then_some(log)
    });
    assert!(requests.load(Ordering::SeqCst) > 0);
    assert!(
        !logged.contains(TOKEN),
        "the token is in the log:\n{logged}"
    );
    assert!(
        !logged.contains("AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"),
        "a part of the token is in the log:\n{logged}"
    );
    assert!(
        logged.contains("/bot[redacted]/getUpdates"),
        "the log says where, without the token:\n{logged}"
    );
    // A proxy's failure is retried, not fatal: Telegram is still up.
    let channels = serve.get("/api/channels").json();
    assert!(
        channels
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["name"] == "telegram" && c["state"] == "running"),
        "{channels}"
    );
    serve.kill_hard();
    let audit = std::fs::read_to_string(tau.home().join("audit.jsonl")).unwrap_or_default();
    assert!(!audit.contains(TOKEN));
}

#[test]
fn a_routines_prompt_on_telegram_is_the_routines_with_what_fired_it() {
    use tau_test_support::telegram::Emulator;
    const BOT: &str = "123456:TEST-token_x";
    let Some(emulator) = Emulator::start(BOT) else {
        return;
    };
    let tau = Tau::new();
    let secret = "a-doorbell-secret-long-enough";
    let config = tau.serve_config(&format!(
        "[telegram]\nowners = [{OWNER}]\napi_url = \"{}\"\npoll_timeout_seconds = 0\n\
         min_poll_interval_ms = 50\nedit_interval_ms = 50\n\n\
         [[routines]]\nname = \"doorbell\"\nwebhook = {{ secret_env = \"TAU_TEST_DOORBELL\" }}\n\
         prompt = \"Someone rang: <b>open</b> the door.\"\nask = \"telegram\"\n",
        emulator.url
    ));
    let model = tau.replay(&json!([
        common::tool_call(
            "t1",
            "run_command",
            &json!({"command": "echo open >> door.txt"})
        ),
        answer("I did not open it."),
    ]));
    let serve = tau.serve_env(
        &model,
        &config,
        &[("TAU_TELEGRAM_TOKEN", BOT), ("TAU_TEST_DOORBELL", secret)],
    );
    let host = serve.host();
    let bearer = format!("Bearer {secret}");
    let fired = common::serve::request(
        serve.addr,
        "POST",
        "/hooks/doorbell",
        &[("Host", &host), ("Authorization", &bearer)],
        Some(""),
    );
    assert_eq!(fired.status, 202, "{fired:?}");
    let id = emulator.wait("the routine's question", |messages| {
        messages
            .iter()
            .find_map(|m| m.buttons.iter().find_map(|b| b.strip_prefix("v1:a:")))
            .map(str::to_owned)
    });
    // Before the turn's answer and its question: the routine's prompt, as the routine's.
    let messages = emulator.bot_messages();
    assert_eq!(
        messages[0].text,
        "<b>⚙ Routine doorbell (webhook doorbell) asks tau:</b>\nSomeone rang: &lt;b&gt;open&lt;/b&gt; the door.",
        "tau's words in bold, the prompt escaped"
    );
    assert_eq!(messages[0].chat, OWNER);
    emulator.press(OWNER, OWNER, &format!("v1:r:{id}"));
    emulator.wait("the answer", |m| {
        m.iter()
            .find(|m| m.text.contains("I did not open it."))
            .cloned()
    });
    assert!(!tau.workspace().join("door.txt").exists());
    serve.kill_hard();
}
