//! `tau approvals` beside a running `tau serve` on the same home: what waits for the
//! person, with its id and where it is answered; nothing once it was answered.

use crate::common;

use common::{Tau, answer, tool_call};
use serde_json::json;

#[test]
fn a_waiting_question_is_listed_with_where_to_answer_it_until_it_is_answered() {
    let tau = Tau::new();
    let before = tau.run(&["approvals"], "");
    assert_eq!(
        (before.code, before.stdout.as_str()),
        (0, "nothing waits for you\n")
    );
    assert!(
        !tau.home().join("state.db").exists(),
        "listing creates nothing"
    );

    let model = tau.replay(&json!([
        tool_call(
            "t1",
            "run_command",
            &json!({"command": "echo hi >> out.txt"})
        ),
        answer("done"),
    ]));
    let serve = tau.serve(&model, &tau.serve_config(""));
    let session = serve.new_session();
    let question = serve.ask(&session, "write hi");
    let id = question["id"].as_str().unwrap();

    // Shown in whole seconds, in tau's zone, named.
    let zoned = tau.config("[tools.clock]\nzone = \"Asia/Tokyo\"\n");
    let listed = tau.run(&["--config", zoned.to_str().unwrap(), "approvals"], "");
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    let deadline: jiff::Timestamp = question["deadline"].as_str().unwrap().parse().unwrap();
    let deadline = deadline
        .to_zoned_datetime(jiff::tz::TimeZone::get("Asia/Tokyo").unwrap())
        .strftime("%Y-%m-%d %H:%M:%S JST")
        .to_string();
    let shown = listed
        .stdout
        .replace(id, "<id>")
        .replace(&session, "<session>")
        .replace(&deadline, "<deadline>");
    let shown = regex_lite_minutes(&shown);
    insta::assert_snapshot!(shown);

    // The session's line and its messages say that a call waits, and where.
    let sessions = tau.run(&["sessions", "list"], "");
    let line = sessions
        .stdout
        .lines()
        .find(|l| l.starts_with(&session))
        .unwrap_or_default()
        .to_owned();
    assert!(
        line.ends_with("  1 question on TauBar"),
        "{}",
        sessions.stdout
    );
    let shown = tau.run(&["sessions", "show", &session], "");
    assert_eq!(
        shown.stdout.lines().last(),
        Some(format!("  ? run_command waits for your answer on TauBar ({id})").as_str()),
        "{}",
        shown.stdout
    );

    let answered = serve.post(&format!("/api/approvals/{id}"), r#"{"decision":"reject"}"#);
    assert_eq!(answered.status, 200, "{answered:?}");
    let after = tau.run(&["approvals"], "");
    assert_eq!(
        (after.code, after.stdout.as_str()),
        (0, "nothing waits for you\n")
    );
    let sessions = tau.run(&["sessions", "list"], "");
    assert!(!sessions.stdout.contains("question"), "{}", sessions.stdout);
}

/// The minutes left depend on how fast the machine is: `(N min left)` becomes `(<n> min left)`.
fn regex_lite_minutes(text: &str) -> String {
    text.lines()
        .map(
            |line| match (line.rfind(" ("), line.strip_suffix(" min left)")) {
                (Some(at), Some(_)) => format!("{} (<n> min left)", &line[..at]),
                _ => line.to_owned(),
            },
        )
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}
