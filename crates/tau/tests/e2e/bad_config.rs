//! A `tau.toml` that does not read (a typo, a zone that does not exist) stops every command
//! that needs it, but not those that read only tau's home: `tau approvals`, `tau sessions
//! list`, `search` and `show`, `tau audit verify` and `head` say what is wrong in one line
//! on stderr and still list what waits and verify the log. `tau doctor` reports it.

use crate::common;

use common::{Tau, answer};
use pretty_assertions::assert_eq;
use serde_json::json;
use tau_protocol::{ApprovalId, CallCard, SessionId, Tier};
use tau_state::{NewApproval, StateDb};

const QUESTION: &str = "ap_0123456789abcdef";

/// A chat in session `s1` (so the log and the session exist) and a question that waits in
/// it, stored as the hub stores one.
fn home_with_a_waiting_question(tau: &Tau) {
    let model = tau.replay(&json!([answer("hello")]));
    let run = tau.run(&["--model", &model, "chat", "--session", "s1"], "hi\n");
    assert_eq!(run.code, 0, "{}", run.stderr);
    let db = StateDb::open(&tau.home().join("state.db")).unwrap();
    let now = jiff::Timestamp::now();
    let row = NewApproval {
        id: ApprovalId::parse(QUESTION).unwrap(),
        session: SessionId::parse("s1").unwrap(),
        call_id: "t1".into(),
        tool: "run_command".into(),
        tier: Tier::Physical,
        effect: "runs a shell command".into(),
        arguments: json!({"command": "echo hi >> out.txt"}),
        channel: "web".into(),
        created_at: now,
        deadline: now + jiff::SignedDuration::from_mins(5),
        card: CallCard::default(),
    }
    .into_row();
    db.approvals().create_approval(&row).unwrap();
}

#[test]
fn read_only_commands_say_what_is_wrong_and_still_list_and_verify() {
    let tau = Tau::new();
    home_with_a_waiting_question(&tau);
    let config = tau.config("[tools]\nworkspce = \"/tmp\"\n");
    let path = config.to_str().unwrap();
    let said = format!(
        "tau: warning: {path}: tools.workspce: unknown field `workspce`, expected one of \
         `workspace`, `disabled`, `clock`, `command`, `mqtt`, `provenance`, `step_up`, `approvers`; did you mean `workspace`? (at \
         line 2, column 1) (ignored: this command reads only tau's home)\n"
    );
    let run = |args: &[&str]| tau.run(&[&["--config", path], args].concat(), "");

    let approvals = run(&["approvals"]);
    assert_eq!(
        (approvals.code, approvals.stderr.as_str()),
        (0, said.as_str())
    );
    assert!(
        approvals.stdout.starts_with(&format!(
            "{QUESTION}  run_command (tier 2)  answer on TauBar\n"
        )),
        "{}",
        approvals.stdout
    );
    let sessions = run(&["sessions", "list"]);
    assert_eq!(
        (sessions.code, sessions.stderr.as_str()),
        (0, said.as_str())
    );
    assert!(
        sessions
            .stdout
            .lines()
            .any(|l| l.starts_with("s1 ") && l.ends_with("1 question on TauBar")),
        "{}",
        sessions.stdout
    );
    let search = run(&["sessions", "search", "hi"]);
    assert_eq!((search.code, search.stderr.as_str()), (0, said.as_str()));
    assert!(search.stdout.contains("s1 "), "{}", search.stdout);
    let shown = run(&["sessions", "show", "s1"]);
    assert_eq!((shown.code, shown.stderr.as_str()), (0, said.as_str()));
    assert!(
        shown.stdout.starts_with("you> hi\ntau> hello\n"),
        "{}",
        shown.stdout
    );
    let verified = run(&["audit", "verify"]);
    assert_eq!(
        (verified.code, verified.stderr.as_str()),
        (0, said.as_str())
    );
    assert!(
        verified.stdout.starts_with("audit log intact: "),
        "{}",
        verified.stdout
    );
    let head = run(&["audit", "head"]);
    assert_eq!((head.code, head.stderr.as_str()), (0, said.as_str()));

    // What needs the config still refuses it, with the error itself.
    let refused = said
        .replace("tau: warning: ", "tau: ")
        .replace(" (ignored: this command reads only tau's home)", "");
    for args in [
        &["tools"][..],
        &["grants", "list"],
        &["devices", "list"],
        &["sessions", "delete", "s1"],
        &["config", "check"],
    ] {
        let run = run(args);
        assert_eq!(
            (run.code, run.stderr.as_str()),
            (2, refused.as_str()),
            "{args:?}"
        );
    }
    let still = run(&["sessions", "list"]);
    assert!(still.stdout.contains("s1 "), "nothing was deleted");
}

#[test]
fn an_unknown_zone_is_said_and_times_are_shown_in_the_system_s() {
    let tau = Tau::new();
    home_with_a_waiting_question(&tau);
    let config = tau.config("[tools.clock]\nzone = \"Mars/Olympus\"\n");
    let path = config.to_str().unwrap();
    let said = format!(
        "tau: warning: {path}: tools.clock.zone: unknown time zone 'Mars/Olympus'; use an IANA \
         name such as 'Europe/Istanbul'; times are shown in the system's zone\n"
    );
    for args in [&["approvals"][..], &["sessions", "list"]] {
        let run = tau.run_env(&[&["--config", path], args].concat(), &[("TZ", "UTC")], "");
        assert_eq!(
            (run.code, run.stderr.as_str()),
            (0, said.as_str()),
            "{args:?}"
        );
        assert!(run.stdout.contains(" UTC"), "{args:?}: {}", run.stdout);
    }
}

#[test]
fn doctor_reports_a_config_that_does_not_read_among_its_findings() {
    let tau = Tau::new();
    let config = tau.config("[tools]\nworkspce = \"/tmp\"\n");
    let path = config.to_str().unwrap();
    let model = tau.replay(&json!([answer("unused")]));
    let run = tau.run(&["--config", path, "--model", &model, "doctor"], "");
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert_eq!(run.stderr, "");
    let section: Vec<&str> = run
        .stdout
        .lines()
        .skip_while(|l| !l.starts_with("config"))
        .take(2)
        .collect();
    assert_eq!(
        section,
        vec![
            "config (not read: the rest of this report uses the defaults)".to_owned(),
            format!(
                "  no  checks       {path}: tools.workspce: unknown field `workspce`, expected one \
                 of `workspace`, `disabled`, `clock`, `command`, `mqtt`, `provenance`, `step_up`, `approvers`; did you mean \
                 `workspace`? (at line 2, column 1)"
            ),
        ]
    );
    assert!(
        run.stdout
            .ends_with("tau doctor: some of what tau needs is missing (the rows marked no)\n"),
        "{}",
        run.stdout
    );
}
