//! tau's home is private, and its audit log is anchored in `state.db`: a dropped tail, an
//! edited last line or an emptied log never verify as intact.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use common::{Tau, answer, mode, tool_call};
use pretty_assertions::assert_eq;
use serde_json::json;
use sha2::Digest;

/// One chat with a clock call: two audit lines (the call, the end of the turn).
fn chat(tau: &Tau, session: &str) {
    let model = tau.replay(&json!([
        tool_call("t1", "clock", &json!({})),
        answer("Noon.")
    ]));
    let run = tau.run(
        &["--model", &model, "chat", "--session", session],
        "time?\n",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
}

fn verify(tau: &Tau) -> (i32, String) {
    let run = tau.run(&["audit", "verify"], "");
    assert_eq!(run.stderr, "");
    (run.code, run.stdout)
}

fn audit_path(tau: &Tau) -> std::path::PathBuf {
    tau.home().join("audit.jsonl")
}

fn audit_lines(tau: &Tau) -> Vec<String> {
    std::fs::read_to_string(audit_path(tau))
        .unwrap()
        .lines()
        .map(|l| format!("{l}\n"))
        .collect()
}

const PRIVATE: [(&str, u32); 5] = [
    ("", 0o700),
    ("logs", 0o700),
    ("locks", 0o700),
    ("state.db", 0o600),
    ("audit.jsonl", 0o600),
];

fn modes(home: &Path) -> Vec<(&'static str, u32)> {
    PRIVATE
        .iter()
        .map(|(name, _)| (*name, mode(&home.join(name))))
        .collect()
}

/// Each file in `logs/` with its mode; today's among them.
fn log_modes(home: &Path) -> Vec<(String, u32)> {
    let mut files: Vec<(String, u32)> = std::fs::read_dir(home.join("logs"))
        .unwrap()
        .map(|entry| {
            let entry = entry.unwrap();
            (
                entry.file_name().to_string_lossy().into_owned(),
                mode(&entry.path()),
            )
        })
        .collect();
    files.sort();
    let today = format!("tau.log.{}", jiff::Timestamp::now().strftime("%Y-%m-%d"));
    assert!(files.iter().any(|(name, _)| *name == today), "{files:?}");
    files
}

#[test]
fn the_home_is_created_private() {
    let tau = Tau::new();
    chat(&tau, "s1");
    assert_eq!(modes(&tau.home()), PRIVATE.to_vec());
    for (name, mode) in log_modes(&tau.home()) {
        assert_eq!(mode, 0o600, "{name}");
    }
}

#[test]
fn a_home_with_looser_modes_is_tightened() {
    let tau = Tau::new();
    let home = tau.home();
    std::fs::create_dir_all(home.join("logs")).unwrap();
    std::fs::create_dir_all(home.join("locks")).unwrap();
    for name in ["state.db", "audit.jsonl", "logs/tau.log"] {
        std::fs::write(home.join(name), "").unwrap();
        std::fs::set_permissions(home.join(name), std::fs::Permissions::from_mode(0o666)).unwrap();
    }
    for name in ["", "logs", "locks"] {
        std::fs::set_permissions(home.join(name), std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    chat(&tau, "s1");
    assert_eq!(modes(&home), PRIVATE.to_vec());
    let logs = log_modes(&home);
    assert!(logs.iter().any(|(name, _)| name == "tau.log"), "{logs:?}");
    for (name, mode) in logs {
        assert_eq!(mode, 0o600, "{name}: an earlier tau's log is tightened too");
    }
}

#[test]
fn a_dropped_tail_is_reported() {
    let tau = Tau::new();
    chat(&tau, "s1");
    chat(&tau, "s2");
    assert_eq!(verify(&tau), (0, "audit log intact: 4 lines\n".to_owned()));
    let lines = audit_lines(&tau);
    std::fs::write(audit_path(&tau), lines[..2].concat()).unwrap();
    assert_eq!(
        verify(&tau),
        (
            1,
            "audit log broken after line 2: state.db's anchor says entry 4 was written: the last 2 lines were dropped\n".to_owned()
        )
    );
}

#[test]
fn an_edited_last_line_is_reported() {
    let tau = Tau::new();
    chat(&tau, "s1");
    let mut lines = audit_lines(&tau);
    lines[1] = lines[1].replace("\"end_turn\"", "\"cancelled\"");
    std::fs::write(audit_path(&tau), lines.concat()).unwrap();
    assert_eq!(
        verify(&tau),
        (
            1,
            "audit log broken at line 2: it does not match the anchor in state.db: line 2 was edited\n".to_owned()
        )
    );
}

#[test]
fn an_emptied_or_deleted_log_is_reported() {
    let tau = Tau::new();
    chat(&tau, "s1");
    std::fs::write(audit_path(&tau), "").unwrap();
    assert_eq!(
        verify(&tau),
        (
            1,
            "audit log broken: it is empty, but state.db's anchor says entry 2 was written: it was emptied\n".to_owned()
        )
    );
    std::fs::remove_file(audit_path(&tau)).unwrap();
    assert_eq!(
        verify(&tau),
        (
            1,
            format!(
                "audit log missing at {}, but state.db's anchor says entry 2 was written: it was deleted\n",
                audit_path(&tau).display()
            )
        )
    );
}

#[test]
fn appending_after_a_dropped_tail_keeps_the_gap_visible() {
    let tau = Tau::new();
    chat(&tau, "s1");
    let lines = audit_lines(&tau);
    std::fs::write(audit_path(&tau), lines[..1].concat()).unwrap();
    // The next chat must not paper over the missing line by continuing from the file.
    chat(&tau, "s2");
    assert_eq!(
        verify(&tau),
        (
            1,
            "audit log broken at line 2: expected entry 2, found entry 3: lines were dropped or reordered\n".to_owned()
        )
    );
}

#[test]
fn a_log_without_an_anchor_is_not_called_intact() {
    let tau = Tau::new();
    chat(&tau, "s1");
    std::fs::remove_file(tau.home().join("state.db")).unwrap();
    assert_eq!(
        verify(&tau),
        (
            1,
            "audit log chain intact for 2 lines, but state.db holds no anchor for it: lines dropped from its end would not show\n".to_owned()
        )
    );
}

/// Moves the anchor in `state.db` back to `seq`, as a tau that stopped between writing
/// lines and anchoring them would leave it.
fn anchor_back_to(tau: &Tau, seq: usize) {
    let line = audit_lines(tau)[seq - 1].trim_end().to_owned();
    let hash: String = sha2::Sha256::digest(line.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let db = rusqlite::Connection::open(tau.home().join("state.db")).unwrap();
    db.execute(
        "UPDATE audit_anchor SET seq = ?1, hash = ?2",
        rusqlite::params![seq as i64, hash],
    )
    .unwrap();
}

#[test]
fn one_line_past_the_anchor_is_accepted_and_said_two_are_not() {
    let tau = Tau::new();
    chat(&tau, "s1");
    chat(&tau, "s2");
    anchor_back_to(&tau, 3);
    assert_eq!(
        verify(&tau),
        (
            0,
            "audit log intact: 4 lines; the last one is not anchored in state.db yet (tau stopped between writing and anchoring it; the next entry anchors it)\n".to_owned()
        )
    );
    anchor_back_to(&tau, 2);
    assert_eq!(
        verify(&tau),
        (
            1,
            "audit log broken after line 2: state.db's anchor says it is the last: 2 lines were added behind tau's back\n".to_owned()
        )
    );
}
