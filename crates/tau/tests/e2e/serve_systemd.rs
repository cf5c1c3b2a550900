//! `tau serve` under systemd, with a notify socket of the test's own: `READY=1` once TauBar
//! listens, `WATCHDOG=1` while the hub serves, `STOPPING=1` on SIGTERM and the exit soon
//! after; with `JOURNAL_STREAM` naming its stderr, log lines for the journal there.

use crate::common;

use std::os::unix::fs::MetadataExt;
use std::os::unix::net::UnixDatagram;
use std::time::{Duration, Instant};

use common::{Tau, answer};
use serde_json::json;

/// The datagrams `tau serve` sent, each as its `KEY=VALUE` lines, until `done` holds for
/// one (30 s at most).
fn until(socket: &UnixDatagram, seen: &mut Vec<String>, done: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut buffer = vec![0; 4096];
    loop {
        assert!(Instant::now() < deadline, "never came; heard: {seen:#?}");
        let Ok(read) = socket.recv(&mut buffer) else {
            continue;
        };
        let message = String::from_utf8_lossy(&buffer[..read])
            .trim_end_matches('\n')
            .to_owned();
        seen.push(message.clone());
        if done(&message) {
            return message;
        }
    }
}

#[test]
fn the_hub_says_ready_feeds_the_watchdog_and_stops_within_a_second_of_sigterm() {
    let tau = Tau::new();
    let socket_path = tau.dir.path().join("notify.sock");
    let socket = UnixDatagram::bind(&socket_path).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let config = tau.serve_config("");
    let serve = tau.serve_env(
        &tau.replay(&json!([answer("unused")])),
        &config,
        &[
            ("NOTIFY_SOCKET", socket_path.to_str().unwrap()),
            // A watchdog of 0.4 s: fed every 0.2 s.
            ("WATCHDOG_USEC", "400000"),
        ],
    );
    let mut seen = Vec::new();
    let ready = until(&socket, &mut seen, |m| m.lines().any(|l| l == "READY=1"));
    assert!(
        seen.iter()
            .any(|m| m == "STATUS=starting: checking the config"),
        "{seen:#?}"
    );
    assert!(
        ready.contains(&format!(
            "STATUS=serving: TauBar at http://{}/; 0 questions wait",
            serve.addr
        )),
        "{ready}"
    );
    // Ready means TauBar answers.
    assert_eq!(serve.get("/api/sessions").status, 200);
    for _ in 0..3 {
        until(&socket, &mut seen, |m| m == "WATCHDOG=1");
    }
    let asked_to_stop = Instant::now();
    let pid = serve.child.id().to_string();
    std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    let stopping = until(&socket, &mut seen, |m| m.lines().any(|l| l == "STOPPING=1"));
    let heard_stopping = asked_to_stop.elapsed();
    let mut serve = serve;
    let status = serve.child.wait().unwrap();
    let stopped = asked_to_stop.elapsed();
    eprintln!("SIGTERM to STOPPING=1: {heard_stopping:?}; SIGTERM to exit: {stopped:?}");
    assert!(stopping.contains("STATUS=stopping"), "{stopping}");
    assert_eq!(status.code(), Some(0));
    assert!(
        stopped < Duration::from_secs(1),
        "tau serve took {stopped:?} to stop"
    );
}

#[test]
fn under_the_journal_log_lines_go_to_stderr_with_their_priority_and_no_time() {
    let tau = Tau::new();
    let stderr_path = tau.dir.path().join("stderr");
    let stderr = std::fs::File::create(&stderr_path).unwrap();
    let meta = stderr.metadata().unwrap();
    let stream = format!("{}:{}", meta.dev(), meta.ino());
    let config = tau.serve_config("");
    let model = tau.replay(&json!([answer("unused")]));
    let mut command = tau.command(&[
        "--config",
        config.to_str().unwrap(),
        "--model",
        &model,
        "serve",
    ]);
    command
        .env("JOURNAL_STREAM", &stream)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(stderr);
    let mut child = common::spawn(&mut command);
    let deadline = Instant::now() + Duration::from_secs(30);
    let text = loop {
        let text = std::fs::read_to_string(&stderr_path).unwrap();
        if text.contains("state.db migrated") {
            break text;
        }
        assert!(Instant::now() < deadline, "nothing logged: {text:?}");
        std::thread::sleep(Duration::from_millis(50));
    };
    child.kill().unwrap();
    child.wait().unwrap();
    let first = text.lines().next().unwrap();
    // `<6>` is INFO for journald; then the target, no time stamp.
    assert!(first.starts_with("<6>"), "{text}");
    assert!(
        !first.chars().nth(3).unwrap().is_ascii_digit(),
        "no time stamp: {first}"
    );
    // The same line is in the day's file, with its time.
    let logged = tau.log();
    let body = first.trim_start_matches("<6>");
    assert!(
        logged.lines().any(|l| l.ends_with(body.trim_start())),
        "{logged}\n---\n{text}"
    );
}
