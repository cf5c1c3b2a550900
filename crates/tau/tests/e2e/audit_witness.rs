//! The audit chain against a head kept elsewhere: `tau audit head` prints `SEQ:HASH`, and
//! `tau audit verify --from SEQ:HASH` catches the rewrites that a plain `verify` cannot
//! (a cut log with an old anchor restored, a recomputed chain with its anchor updated) and
//! a forged line appended; `[audit] witness = "telegram"` has `tau serve` send the head to
//! the owner (against the npm Bot API emulator).

use crate::common;

use std::path::Path;

use common::{Tau, answer, tool_call};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tau_test_support::telegram::Emulator;

const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

fn hash(line: &str) -> String {
    Sha256::digest(line.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// One chat turn with a tool call: a few audit lines.
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

fn head(tau: &Tau) -> String {
    let run = tau.run(&["audit", "head"], "");
    assert_eq!(run.code, 0, "{}", run.stdout);
    run.stdout.trim().to_owned()
}

/// `tau audit verify` with these arguments: its exit code and what it printed.
fn verify(tau: &Tau, args: &[&str]) -> (i32, String) {
    let mut all = vec!["audit", "verify"];
    all.extend(args);
    let run = tau.run(&all, "");
    (run.code, run.stdout)
}

fn log_lines(tau: &Tau) -> Vec<String> {
    std::fs::read_to_string(tau.home().join("audit.jsonl"))
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn write_log(tau: &Tau, lines: &[String]) {
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(tau.home().join("audit.jsonl"), text).unwrap();
}

/// Sets state.db's anchor (and what it says was announced) as someone who can write the
/// home does.
fn set_anchor(home: &Path, seq: usize, hash: &str) {
    let db = rusqlite::Connection::open(home.join("state.db")).unwrap();
    for table in ["audit_anchor", "audit_announced"] {
        db.execute(
            &format!("UPDATE {table} SET seq = ?1, hash = ?2 WHERE id = 1"),
            rusqlite::params![seq as i64, hash],
        )
        .unwrap();
    }
}

/// Every line with its `seq` and `prev` recomputed, as a rewriter does.
fn rechain(lines: &[String]) -> Vec<String> {
    let mut prev = GENESIS.to_owned();
    lines
        .iter()
        .enumerate()
        .map(|(i, line)| {
            let mut value: Value = serde_json::from_str(line).unwrap();
            value["seq"] = json!(i + 1);
            value["prev"] = json!(prev);
            let text = value.to_string();
            prev = hash(&text);
            text
        })
        .collect()
}

#[test]
fn the_head_is_seq_and_hash_of_the_last_line() {
    let tau = Tau::new();
    assert_eq!(head(&tau), format!("0:{GENESIS}"));
    chat(&tau, "s1");
    let lines = log_lines(&tau);
    assert_eq!(
        head(&tau),
        format!("{}:{}", lines.len(), hash(lines.last().unwrap()))
    );
    let kept = head(&tau);
    assert_eq!(
        verify(&tau, &["--from", &kept]),
        (
            0,
            format!(
                "audit log intact: {} lines, and it holds the head you kept (entry {})\n",
                lines.len(),
                lines.len()
            )
        )
    );
    // A head that is not one is a usage error.
    let run = tau.run(&["audit", "verify", "--from", "12:abc"], "");
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr
            .starts_with("tau: --from: \"12:abc\" is not a head"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_cut_log_with_an_old_anchor_restored_is_caught_by_the_head_kept_elsewhere() {
    let tau = Tau::new();
    chat(&tau, "s1");
    let old = log_lines(&tau);
    chat(&tau, "s2");
    let kept = head(&tau);
    // Cut back to what it was, and state.db's anchor with it.
    write_log(&tau, &old);
    set_anchor(&tau.home(), old.len(), &hash(old.last().unwrap()));
    assert_eq!(verify(&tau, &[]).0, 0, "a plain verify cannot tell");
    let kept_seq = kept.split(':').next().unwrap();
    assert_eq!(
        verify(&tau, &["--from", &kept]),
        (
            1,
            format!(
                "audit log broken: it ends at line {}, before entry {kept_seq} of the head you kept: it was cut back (and state.db with it, if its anchor agrees)\n",
                old.len()
            )
        )
    );
}

#[test]
fn a_recomputed_chain_with_its_anchor_updated_is_caught_by_the_head_kept_elsewhere() {
    let tau = Tau::new();
    chat(&tau, "s1");
    let kept = head(&tau);
    let mut lines = log_lines(&tau);
    lines[0] = lines[0].replacen("\"clock\"", "\"lamp\"", 1);
    let lines = rechain(&lines);
    write_log(&tau, &lines);
    set_anchor(&tau.home(), lines.len(), &hash(lines.last().unwrap()));
    assert_eq!(verify(&tau, &[]).0, 0, "a plain verify cannot tell");
    let kept_seq = kept.split(':').next().unwrap();
    assert_eq!(
        verify(&tau, &["--from", &kept]),
        (
            1,
            format!(
                "audit log broken at line {kept_seq}: it is not the entry of the head you kept (its hash differs): the log was rewritten up to there\n"
            )
        )
    );
}

#[test]
fn a_forged_line_appended_is_never_anchored_by_the_next_write() {
    let tau = Tau::new();
    chat(&tau, "s1");
    let kept = head(&tau);
    let mut lines = log_lines(&tau);
    let n = lines.len();
    lines.push(
        json!({"seq": n + 1, "prev": hash(lines.last().unwrap()), "type": "approval",
               "decision": "approved", "tool": "run_command"})
        .to_string(),
    );
    write_log(&tau, &lines);
    let caught = format!(
        "audit log broken at line {}: it follows the anchored line, but no tau process announced it in state.db before writing it: it was added behind tau's back\n",
        n + 1
    );
    assert_eq!(verify(&tau, &[]), (1, caught.clone()));
    assert_eq!(verify(&tau, &["--from", &kept]), (1, caught));
    // The next write goes on from the anchor: the forged line stays visible.
    chat(&tau, "s2");
    assert_eq!(
        verify(&tau, &["--from", &kept]),
        (
            1,
            format!(
                "audit log broken at line {}: expected entry {}, found entry {}: lines were dropped or reordered\n",
                n + 2,
                n + 2,
                n + 1
            )
        )
    );
    let run = tau.run(&["audit", "head"], "");
    assert_eq!(run.code, 1);
    assert!(
        run.stdout
            .starts_with("no head: the log cannot be vouched for; audit log broken"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_witness_needs_its_channel() {
    let tau = Tau::new();
    let config = tau.config("[audit]\nwitness = \"telegram\"\n");
    let run = tau.run(
        &["--config", config.to_str().unwrap(), "config", "check"],
        "",
    );
    assert_eq!(
        (run.code, run.stderr),
        (
            2,
            format!(
                "tau: {}: audit.witness: \"telegram\" needs a [telegram] section: the head is sent to its first owner\n",
                config.display()
            )
        )
    );
}

const TOKEN: &str = "123456:TEST-token_x";
const OWNER: i64 = 4242;

#[test]
fn tau_serve_sends_the_head_to_the_owner_on_telegram() {
    let Some(emulator) = Emulator::start(TOKEN) else {
        return;
    };
    let tau = Tau::new();
    chat(&tau, "s1");
    let config = tau.serve_config(&format!(
        "[telegram]\nowners = [{OWNER}]\napi_url = \"{}\"\npoll_timeout_seconds = 0\n\
         min_poll_interval_ms = 50\n[audit]\nwitness = \"telegram\"\n",
        emulator.url
    ));
    let model = tau.replay(&json!([answer("Hello.")]));
    let serve = tau.serve_env(&model, &config, &[("TAU_TELEGRAM_TOKEN", TOKEN)]);
    let sent = emulator.wait("the head in the owner's chat", |messages| {
        messages
            .iter()
            .find(|m| m.chat == OWNER && m.text.starts_with("tau audit head: "))
            .map(|m| m.text.clone())
    });
    let (code, _) = serve.terminate();
    assert_eq!(code, 0);
    let kept = sent
        .strip_prefix("tau audit head: ")
        .and_then(|rest| rest.lines().next())
        .unwrap()
        .to_owned();
    assert_eq!(
        sent,
        format!(
            "tau audit head: {kept}\nKeep this message. `tau audit verify --from {kept}` proves the audit log still holds everything up to it."
        )
    );
    assert_eq!(verify(&tau, &["--from", &kept]).0, 0);
    // What it vouches for cannot be rewritten unnoticed.
    let lines = rechain(
        &log_lines(&tau)
            .into_iter()
            .map(|l| l.replacen("\"clock\"", "\"lamp\"", 1))
            .collect::<Vec<_>>(),
    );
    write_log(&tau, &lines);
    set_anchor(&tau.home(), lines.len(), &hash(lines.last().unwrap()));
    assert_eq!(verify(&tau, &[]).0, 0);
    assert_eq!(verify(&tau, &["--from", &kept]).0, 1);
}
