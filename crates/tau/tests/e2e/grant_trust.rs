//! A grant covers a call only as the audit log records it. A grant row written into
//! `state.db` while tau is stopped (a real one copied for another command, its hashes
//! recomputed) or a real row changed there (a later end, more uses) is never used: the
//! gate asks instead, with an `error` line, and revokes it; `tau audit verify` reports it;
//! `tau serve` reports and revokes it at start.

use crate::common;

use common::{Tau, answer, tool_call};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tau_protocol::{Grant, GrantId};
use tau_state::{StateDb, canonical_arguments};

const FORGED: &str = "gr_forged0000000000000000000001";

fn out(tau: &Tau) -> String {
    std::fs::read_to_string(tau.workspace().join("out.txt")).unwrap_or_default()
}

fn state(tau: &Tau) -> StateDb {
    StateDb::open(&tau.home().join("state.db")).unwrap()
}

/// The only grant there is.
fn the_grant(tau: &Tau) -> Grant {
    let grants = state(tau).grants().grants(None).unwrap();
    assert_eq!(grants.len(), 1, "{grants:?}");
    grants.into_iter().next().unwrap()
}

/// A copy of `real` for `command`, its arguments' hash recomputed, stored as a new row.
fn forge(tau: &Tau, real: &Grant, command: &str) {
    let arguments = json!({ "command": command });
    let forged = Grant {
        id: GrantId::parse(FORGED).unwrap(),
        arguments_sha256: canonical_arguments(&arguments).1,
        arguments,
        ..real.clone()
    };
    state(tau).grants().create_grant(&forged).unwrap();
}

fn edit(tau: &Tau, sql: &str) {
    let db = rusqlite::Connection::open(tau.home().join("state.db")).unwrap();
    assert_eq!(db.execute(sql, []).unwrap(), 1, "{sql}");
}

/// `tau chat` in conversation `s1`, with `stdin` as the person's lines.
fn chat(tau: &Tau, model: &str, stdin: &str) -> common::Run {
    let run = tau.run(
        &[
            "--model",
            model,
            "chat",
            "--answers-from-stdin",
            "--session",
            "s1",
        ],
        stdin,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    run
}

fn lines_of(tau: &Tau, kind: &str) -> Vec<Value> {
    tau.audit_events()
        .into_iter()
        .filter(|e| e["type"] == kind)
        .collect()
}

/// The grant made at the terminal, then a forged copy for another command: the next chat
/// asks for it (nobody says yes, so it does not run), and the row is revoked.
#[test]
fn a_forged_grant_row_is_refused_at_use_and_reported_by_verify() {
    let tau = Tau::new();
    let model = tau.replay(&json!([
        tool_call(
            "t1",
            "run_command",
            &json!({"command": "echo a >> out.txt"})
        ),
        answer("made"),
        tool_call(
            "t2",
            "run_command",
            &json!({"command": "echo forged >> out.txt"})
        ),
        answer("done"),
    ]));
    chat(&tau, &model, "run a\nalways\n");
    assert_eq!(out(&tau), "a\n");
    let real = the_grant(&tau);
    forge(&tau, &real, "echo forged >> out.txt");

    let verify = tau.run(&["audit", "verify"], "");
    assert_eq!(verify.code, 1, "{}", verify.stdout);
    insta::assert_snapshot!(
        "verify_reports_a_forged_grant",
        verify.stdout.replace(&real.id.to_string(), "gr_REAL")
    );

    let run = chat(&tau, &model, "run forged\nn\n");
    assert_eq!(out(&tau), "a\n", "the forged grant ran nothing");
    assert_eq!(
        run.stdout.matches("run it? [y/N]").count(),
        1,
        "{}",
        run.stdout
    );
    let refused = lines_of(&tau, "error")
        .into_iter()
        .find(|e| e["message"].as_str().unwrap().starts_with("grant "))
        .unwrap();
    assert_eq!(
        (&refused["message"], &refused["tool_use_id"]),
        (
            &json!(format!(
                "grant {FORGED} refused: the audit log records no grant_created line for it \
                 (written into state.db behind tau's back)"
            )),
            &json!("t2")
        )
    );
    let revoked = lines_of(&tau, "grant_revoked");
    assert_eq!(
        revoked,
        vec![
            json!({"type": "grant_revoked", "grant_id": FORGED, "tool": "run_command",
                    "revoked_by": {"kind": "policy"}, "uses": 0,
                    "reason": "the audit log records no grant_created line for it (written into state.db behind tau's back)"})
        ]
    );
    assert!(lines_of(&tau, "grant_used").is_empty());
    let verify = tau.run(&["audit", "verify"], "");
    assert_eq!(
        verify.code, 0,
        "revoked, it covers nothing: {}",
        verify.stdout
    );
}

/// A real grant whose end and uses were raised in `state.db`: refused at use.
#[test]
fn a_grant_row_changed_behind_tau_s_back_is_refused_at_use() {
    let tau = Tau::new();
    let call = json!({"command": "echo a >> out.txt"});
    let model = tau.replay(&json!([
        tool_call("t1", "run_command", &call),
        answer("made"),
        tool_call("t2", "run_command", &call),
        answer("done"),
    ]));
    chat(&tau, &model, "run a\nalways\n");
    let real = the_grant(&tau);
    edit(
        &tau,
        &format!(
            "UPDATE grants SET expires_at = '2099-01-01T00:00:00Z', max_uses = 9999 WHERE id = '{}'",
            real.id
        ),
    );
    let verify = tau.run(&["audit", "verify"], "");
    assert_eq!(verify.code, 1, "{}", verify.stdout);
    assert!(
        verify.stdout.contains(&format!(
            "grant {} (run_command {{\"command\":\"echo a >> out.txt\"}}) in state.db is not what \
             tau wrote, and covers no call: its row in state.db differs from the audit log's: \
             when it ends (changed behind tau's back)\n",
            real.id
        )),
        "{}",
        verify.stdout
    );
    chat(&tau, &model, "again\nn\n");
    assert_eq!(out(&tau), "a\n", "asked, and refused");
    assert!(lines_of(&tau, "grant_used").is_empty());
    assert_eq!(
        lines_of(&tau, "grant_revoked")[0]["grant_id"],
        json!(real.id)
    );
}
