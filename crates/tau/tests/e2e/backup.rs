//! `tau backup` beside a hub that serves 20 conversations under load, and `tau restore` into
//! a new home: the copy verifies, its waiting question runs there once when answered, a
//! question restored after its deadline is expired and never runs, and a home that holds
//! state (or a damaged backup) is refused with nothing changed.
//! The model is a local OpenAI-compatible server that answers from the request alone, so
//! the restored hub goes on exactly where the copied history stands.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::model_server::ModelServer;
use common::{Tau, answer};
use pretty_assertions::assert_eq;
use serde_json::json;
use sha2::Digest;

fn model() -> ModelServer {
    ModelServer::start(
        "run_command",
        &json!({"command": "echo made >> proof.txt"}),
        "Done.",
    )
}

/// The turn of `session` ended paused on its question (its state is saved).
fn paused(tau: &Tau, session: &str) -> Option<()> {
    tau.audit()
        .iter()
        .any(|l| {
            l["type"] == "turn_end" && l["session"] == session && l["stop_reason"] == "interrupt"
        })
        .then_some(())
}

fn sha256(path: &std::path::Path) -> String {
    format!("{:x}", sha2::Sha256::digest(std::fs::read(path).unwrap()))
}

#[test]
fn a_backup_taken_under_load_restores_verifies_and_its_waiting_question_runs_once_there() {
    let tau = Tau::new();
    let server = model();
    let config = tau.serve_config("");
    let serve = tau.serve(&server.spec(), &config);
    let api = serve.api();
    let sessions: Vec<String> = (0..20).map(|_| api.new_session()).collect();
    // The question the restored home answers.
    let kept = api.ask(&sessions[0], "make a file");
    let kept_id = kept["id"].as_str().unwrap().to_owned();
    serve.until(|_| paused(&tau, &sessions[0]));

    // The other 19 conversations talk all the while: each message replaces the question
    // before it, so the hub stores, supersedes and audits without a pause.
    let stop = Arc::new(AtomicBool::new(false));
    let asked = Arc::new(AtomicUsize::new(0));
    let sent = Arc::new(AtomicUsize::new(0));
    let load: Vec<_> = sessions[1..]
        .iter()
        .cloned()
        .map(|session| {
            let (api, stop) = (api.clone(), Arc::clone(&stop));
            let (asked, sent) = (Arc::clone(&asked), Arc::clone(&sent));
            std::thread::spawn(move || {
                // Its first question is stored before the backup starts, so every
                // conversation has a session to copy.
                api.ask(&session, "make file 0");
                asked.fetch_add(1, Ordering::SeqCst);
                let mut n = 1;
                while !stop.load(Ordering::SeqCst) {
                    let body = json!({ "text": format!("make file {n}") }).to_string();
                    let reply = api.post(&format!("/api/sessions/{session}/messages"), &body);
                    assert!(reply.status < 500, "{reply:?}");
                    if reply.status == 202 {
                        sent.fetch_add(1, Ordering::SeqCst);
                    }
                    n += 1;
                    std::thread::sleep(Duration::from_millis(20));
                }
            })
        })
        .collect();
    while asked.load(Ordering::SeqCst) < 19 {
        std::thread::sleep(Duration::from_millis(20));
    }
    let before = sent.load(Ordering::SeqCst);
    while sent.load(Ordering::SeqCst) < before + 40 {
        std::thread::sleep(Duration::from_millis(20));
    }
    let file = tau.dir.path().join("home.tar");
    let started = Instant::now();
    let backup = tau.run(&["backup", file.to_str().unwrap()], "");
    let took = started.elapsed();
    let during = sent.load(Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, Ordering::SeqCst);
    for thread in load {
        thread.join().unwrap();
    }
    assert_eq!(
        (backup.code, backup.stderr.as_str()),
        (0, ""),
        "{}",
        backup.stdout
    );
    let size = std::fs::metadata(&file).unwrap().len();
    eprintln!(
        "backup of 20 conversations under load: {took:?}, {size} bytes ({during} messages sent before it ended, {} in all)",
        sent.load(Ordering::SeqCst)
    );
    assert_eq!(common::mode(&file), 0o600);
    assert!(
        backup.stdout.starts_with(&format!(
            "backed up {} into {} ({size} bytes): state.db at schema step {}, the audit log's ",
            tau.home().display(),
            file.display(),
            tau_state::SCHEMA_VERSION
        )),
        "{}",
        backup.stdout
    );
    let asked_to_stop = Instant::now();
    let (code, _) = serve.terminate();
    eprintln!(
        "SIGTERM to exit with 20 conversations: {:?}",
        asked_to_stop.elapsed()
    );
    assert_eq!(code, 0);
    assert_eq!(tau.proof(), None, "nothing was approved here");

    let restored = Tau::new();
    let run = restored.run(&["restore", file.to_str().unwrap()], "");
    assert_eq!((run.code, run.stderr.as_str()), (0, ""), "{}", run.stdout);
    assert!(
        run.stdout.contains(" into ") && run.stdout.contains(": 20 sessions, "),
        "{}",
        run.stdout
    );
    let verified = restored.run(&["audit", "verify"], "");
    assert_eq!(verified.code, 0, "{}{}", verified.stdout, verified.stderr);
    assert!(
        verified.stdout.starts_with("audit log intact: "),
        "{}",
        verified.stdout
    );
    assert_eq!(
        std::fs::read_to_string(restored.home().join("web-token")).unwrap(),
        std::fs::read_to_string(tau.home().join("web-token")).unwrap(),
        "TauBar's token came along"
    );

    let serve = restored.serve(&server.spec(), &restored.serve_config(""));
    assert_eq!(serve.question(&kept_id).unwrap()["state"], "pending");
    let approved = serve.approve(&kept_id);
    assert_eq!(approved.status, 200, "{approved:?}");
    serve.until_answered(&sessions[0], "Done.");
    assert_eq!(restored.proof().as_deref(), Some("made\n"), "ran once");
    let again = serve.approve(&kept_id);
    assert_ne!(again.status, 500);
    let (code, _) = serve.terminate();
    assert_eq!(code, 0);
    assert_eq!(restored.proof().as_deref(), Some("made\n"), "still once");
    let verified = restored.run(&["audit", "verify"], "");
    assert_eq!(verified.code, 0, "{}{}", verified.stdout, verified.stderr);
}

#[test]
fn a_question_restored_after_its_deadline_is_expired_and_never_runs() {
    let tau = Tau::new();
    let server = model();
    let config = tau.serve_config("[approval]\nremote_timeout_seconds = 3\n");
    let serve = tau.serve(&server.spec(), &config);
    let session = serve.new_session();
    let row = serve.ask(&session, "make a file");
    let id = row["id"].as_str().unwrap().to_owned();
    serve.until(|_| paused(&tau, &session));
    let file = tau.dir.path().join("home.tar");
    let backup = tau.run(&["backup", file.to_str().unwrap()], "");
    assert_eq!(backup.code, 0, "{}", backup.stderr);
    serve.kill_hard();

    // The deadline passes while the backup waits to be restored.
    std::thread::sleep(Duration::from_millis(3_500));
    let restored = Tau::new();
    let run = restored.run(&["restore", file.to_str().unwrap()], "");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.ends_with(
            "1 waiting question is past its deadline: tau serve expires it when it starts, and it never runs\n"
        ),
        "{}",
        run.stdout
    );
    let config = restored.serve_config("[approval]\nremote_timeout_seconds = 3\n");
    let serve = restored.serve(&server.spec(), &config);
    assert!(
        serve
            .banner
            .iter()
            .any(|l| l == "tau serve: 1 question expired while tau was not running"),
        "{:?}",
        serve.banner
    );
    assert_eq!(serve.question(&id).unwrap()["state"], "expired");
    let late = serve.approve(&id);
    assert_ne!(late.status, 200, "{late:?}");
    serve.until_answered(&session, "Done.");
    assert_eq!(restored.proof(), None, "never ran");
    serve.kill_hard();
}

#[test]
fn restore_refuses_a_home_that_holds_state_or_a_damaged_backup_and_changes_nothing() {
    let tau = Tau::new();
    let model = tau.replay(&json!([answer("Hello.")]));
    let chat = tau.run(&["--model", &model, "chat", "--session", "s1"], "hi\n");
    assert_eq!(chat.code, 0, "{}", chat.stderr);
    let device = tau.run(
        &[
            "devices",
            "add",
            "porch-light",
            "--label",
            "Porch light",
            "--kind",
            "light",
            "--command-topic",
            "home/porch/set",
            "--action",
            "on=ON",
        ],
        "",
    );
    assert_eq!(device.code, 0, "{}", device.stderr);
    let file = tau.dir.path().join("home.tar");
    let backup = tau.run(&["backup", file.to_str().unwrap()], "");
    assert_eq!(backup.code, 0, "{}", backup.stderr);
    let twice = tau.run(&["backup", file.to_str().unwrap()], "");
    assert_eq!(
        (twice.code, twice.stderr.clone()),
        (
            2,
            format!(
                "tau: {} exists: tau never writes a backup over a file; name a new one\n",
                file.display()
            )
        )
    );

    // A home with state of its own.
    let other = Tau::new();
    let model = other.replay(&json!([answer("Mine.")]));
    let chat = other.run(&["--model", &model, "chat", "--session", "mine"], "hi\n");
    assert_eq!(chat.code, 0, "{}", chat.stderr);
    let before = (
        sha256(&other.home().join("state.db")),
        sha256(&other.home().join("audit.jsonl")),
    );
    let refused = other.run(&["restore", file.to_str().unwrap()], "");
    assert_eq!(refused.code, 2, "{}", refused.stdout);
    assert_eq!(
        refused.stderr,
        format!(
            "tau: {} already holds tau's state (state.db, audit.jsonl, chat-history): a backup is restored only into a new home; name one with --home\n",
            other.home().display()
        )
    );
    assert_eq!(
        (
            sha256(&other.home().join("state.db")),
            sha256(&other.home().join("audit.jsonl")),
        ),
        before
    );

    // A backup with one byte of its state.db changed.
    let mut bytes = std::fs::read(&file).unwrap();
    let at = bytes
        .windows(16)
        .position(|w| w == b"SQLite format 3\0")
        .unwrap();
    bytes[at + 100] ^= 0xff;
    let damaged = tau.dir.path().join("damaged.tar");
    std::fs::write(&damaged, &bytes).unwrap();
    let fresh = Tau::new();
    let refused = fresh.run(&["restore", damaged.to_str().unwrap()], "");
    assert_eq!(refused.code, 2, "{}", refused.stdout);
    assert!(
        refused.stderr.starts_with(&format!(
            "tau: {} is not a backup tau can restore: state.db has ",
            damaged.display()
        )) && refused.stderr.ends_with("; nothing was restored\n"),
        "{}",
        refused.stderr
    );
    assert!(!fresh.home().join("state.db").exists());
    assert!(!fresh.home().join("audit.jsonl").exists());
    // The same backup, whole, restores there.
    let restored = fresh.run(&["restore", file.to_str().unwrap()], "");
    assert_eq!(restored.code, 0, "{}", restored.stderr);
    assert!(
        restored.stdout.contains(": 1 session, 0 waiting questions, 0 live grants, 0 routines made in conversations, 1 device\n"),
        "{}",
        restored.stdout
    );
    let listed = fresh.run(&["sessions", "list"], "");
    assert!(listed.stdout.contains("s1"), "{}", listed.stdout);
    let devices = fresh.run(&["devices", "list"], "");
    assert!(devices.stdout.contains("porch-light"), "{}", devices.stdout);
}
