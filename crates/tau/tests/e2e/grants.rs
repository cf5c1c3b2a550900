//! `tau grants`: the list shows what each live grant covers, `show` one grant whatever
//! became of it, and a revoke (of one, or of all) ends it at once and writes its audit line.

use crate::common;

use common::Tau;
use jiff::{SignedDuration, Timestamp};
use pretty_assertions::assert_eq;
use serde_json::json;
use tau_protocol::{DecidedBy, Grant, GrantId, GrantScope, SessionId, Tier};
use tau_state::{GrantedCall, StateDb, canonical_arguments};

fn stored(tau: &Tau, id: &str) -> StateDb {
    std::fs::create_dir_all(tau.home()).unwrap();
    let db = StateDb::open(&tau.home().join("state.db")).unwrap();
    let arguments = json!({"command": "npm run test"});
    let now = Timestamp::now();
    db.grants()
        .create_grant(&Grant {
            id: GrantId::parse(id).unwrap(),
            tool: "run_command".into(),
            tier: Tier::Physical,
            schema_sha256: "0".repeat(64),
            arguments_sha256: canonical_arguments(&arguments).1,
            arguments,
            card_sha256: "1".repeat(64),
            workspace_sha256: None,
            scope: GrantScope::Conversation,
            channel: "terminal".into(),
            session: tau_protocol::SessionId::parse("s1").unwrap(),
            person: None,
            created_by: DecidedBy::person("terminal"),
            approval_id: None,
            created_at: now.to_string(),
            expires_at: (now + SignedDuration::from_hours(24)).to_string(),
            uses: 0,
            max_uses: None,
            last_used_at: None,
            revoked_at: None,
            revoked_by: None,
        })
        .unwrap();
    db
}

#[test]
fn a_revoked_grant_leaves_the_list_covers_nothing_and_is_audited() {
    let tau = Tau::new();
    let empty = tau.run(&["grants", "list"], "");
    assert_eq!(
        (empty.code, empty.stdout.as_str()),
        (0, "no grants: every tier-2 call is asked\n")
    );
    let db = stored(&tau, "gr_0123456789abcdef");
    let listed = tau.run(&["grants", "list"], "");
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    assert!(
        listed
            .stdout
            .starts_with("gr_0123456789abcdef  run_command (tier 2)  in session s1\n"),
        "{}",
        listed.stdout
    );
    assert!(
        listed
            .stdout
            .contains(r#"arguments {"command":"npm run test"}"#),
        "{}",
        listed.stdout
    );

    let revoked = tau.run(&["grants", "revoke", "gr_0123456789abcdef"], "");
    assert_eq!(revoked.code, 0, "{}", revoked.stderr);
    assert_eq!(
        revoked.stdout,
        "revoked gr_0123456789abcdef (run_command after 0 uses): the next such call is asked\n"
    );
    let call = GrantedCall {
        tool: "run_command",
        tier: Tier::Physical,
        schema_sha256: &"0".repeat(64),
        arguments_sha256: &canonical_arguments(&json!({"command": "npm run test"})).1,
        card_sha256: &"1".repeat(64),
        channel: "terminal",
        session: &SessionId::parse("s1").unwrap(),
        person: None,
    };
    assert_eq!(
        db.grants().use_grant(&call, Timestamp::now()).unwrap(),
        None
    );
    let lines: Vec<_> = tau
        .audit_events()
        .into_iter()
        .filter(|e| e["type"] == "grant_revoked")
        .collect();
    assert_eq!(
        lines,
        vec![
            json!({"type": "grant_revoked", "grant_id": "gr_0123456789abcdef", "tool": "run_command", "revoked_by": {"kind": "person", "channel": "cli"}, "uses": 0})
        ]
    );
    assert_eq!(
        tau.run(&["grants", "list"], "").stdout,
        "no grants: every tier-2 call is asked\n"
    );
    let again = tau.run(&["grants", "revoke", "gr_0123456789abcdef"], "");
    assert_eq!(again.stdout, "gr_0123456789abcdef was revoked already\n");
}

#[test]
fn a_revoke_names_a_grant_or_says_why_not() {
    let tau = Tau::new();
    for (id, message) in [
        ("npm*", "is not a grant id (tau grants list shows them)"),
        ("gr_nothere", "no grant gr_nothere"),
    ] {
        let run = tau.run(&["grants", "revoke", id], "");
        assert_ne!(run.code, 0, "{id}");
        assert!(run.stderr.contains(message), "{id}: {}", run.stderr);
    }
}

#[test]
fn show_tells_what_a_grant_covers_and_what_became_of_it() {
    let tau = Tau::new();
    stored(&tau, "gr_0123456789abcdef");
    let live = tau.run(&["grants", "show", "gr_0123456789abcdef"], "");
    assert_eq!(live.code, 0, "{}", live.stderr);
    let sha = canonical_arguments(&json!({"command": "npm run test"})).1;
    for expected in [
        "gr_0123456789abcdef  run_command (tier 2)  in session s1\n",
        "  arguments {\"command\":\"npm run test\"}\n",
        "  live: the exact call above runs without a question\n",
        "  made by a person on tau chat\n",
        &format!("  arguments sha-256 {sha}\n"),
    ] {
        assert!(
            live.stdout.contains(expected),
            "{expected}\n{}",
            live.stdout
        );
    }
    assert_eq!(
        tau.run(&["grants", "revoke", "gr_0123456789abcdef"], "")
            .code,
        0
    );
    let ended = tau.run(&["grants", "show", "gr_0123456789abcdef"], "");
    assert_eq!(ended.code, 0, "{}", ended.stderr);
    assert!(
        ended.stdout.contains("  revoked ") && ended.stdout.contains("covers nothing\n"),
        "{}",
        ended.stdout
    );
    assert!(!ended.stdout.contains("live:"), "{}", ended.stdout);
    let missing = tau.run(&["grants", "show", "gr_nothere"], "");
    assert_ne!(missing.code, 0);
    assert!(
        missing.stderr.contains("no grant gr_nothere"),
        "{}",
        missing.stderr
    );
}

#[test]
fn revoke_all_ends_every_live_grant_each_with_its_line() {
    let tau = Tau::new();
    let none = tau.run(&["grants", "revoke", "--all"], "");
    assert_eq!(
        (none.code, none.stdout.as_str()),
        (0, "no grants to revoke\n")
    );
    stored(&tau, "gr_00000000000000a1");
    let db = stored(&tau, "gr_00000000000000a2");
    let all = tau.run(&["grants", "revoke", "--all"], "");
    assert_eq!(all.code, 0, "{}", all.stderr);
    assert_eq!(
        all.stdout,
        "revoked gr_00000000000000a1 (run_command after 0 uses): the next such call is asked\n\
         revoked gr_00000000000000a2 (run_command after 0 uses): the next such call is asked\n"
    );
    assert!(
        db.grants()
            .grants(Some(Timestamp::now()))
            .unwrap()
            .is_empty()
    );
    let revoked: Vec<_> = tau
        .audit_events()
        .into_iter()
        .filter(|e| e["type"] == "grant_revoked")
        .map(|e| e["grant_id"].clone())
        .collect();
    assert_eq!(
        revoked,
        vec![json!("gr_00000000000000a1"), json!("gr_00000000000000a2")]
    );
    assert_eq!(
        tau.run(&["grants", "revoke", "--all"], "").stdout,
        "no grants to revoke\n"
    );
    // One id or all, never both; and one of them.
    assert_eq!(
        tau.run(&["grants", "revoke", "gr_00000000000000a1", "--all"], "")
            .code,
        2
    );
    assert_eq!(tau.run(&["grants", "revoke"], "").code, 2);
}

/// A routine's own call is in the list, marked as the routine's, with how to stop it;
/// listing starts no tool (the MCP server named in the config is never run).
#[test]
fn the_list_shows_a_routine_s_own_call_as_the_routine_s() {
    let tau = Tau::new();
    let marker = tau.workspace().join("mcp-started");
    let config = tau.config(&format!(
        "[mcp.servers.probe]\ncommand = \"sh\"\nargs = [\"-c\", \"touch {}\"]\n\n\
         [[routines]]\nname = \"porch\"\ncron = \"0 19 * * *\"\ntool = \"run_command\"\n\
         arguments = {{ command = \"echo on\" }}\n",
        marker.display()
    ));
    let listed = tau.run(
        &["--config", config.to_str().unwrap(), "grants", "list"],
        "",
    );
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    assert_eq!(
        listed.stdout,
        "no grants\nroutine porch  run_command  cron 0 19 * * *\n  arguments {\"command\":\"echo on\"}\n  \
         the routine's own call: runs without a question while the routine is on (tau routines \
         disable porch stops it)\n"
    );
    assert!(!marker.exists(), "no MCP server was started");
}
