//! The terminal's person, end to end: in a home that names people, a yes typed at `tau
//! chat` names who sat there (`--person`, else the unix user's person), a grant made there
//! is theirs, and the conversation is theirs (another person cannot open it). Once anyone
//! has a passkey, a yes typed to a question that takes one approves nothing, says so, and
//! is audited as `answer_refused`; with none, the same yes runs the call as before.

use crate::common;

use std::path::Path;

use common::people::with_a_passkey;
use common::{Tau, answer, tool_call};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

const PEOPLE: &str =
    "[[people]]\nname = \"ana\"\nunix_user = \"ana\"\n\n[[people]]\nname = \"bob\"\n";

const STEP_UP: &str = "[tools.step_up]\nrun_command = \"passkey\"\n";

/// A model that asks to touch `file` once, then says it is done.
fn touch(tau: &Tau, file: &str) -> String {
    tau.replay(&json!([
        tool_call(
            "t1",
            "run_command",
            &json!({"command": format!("touch {file}")})
        ),
        answer("Done."),
    ]))
}

/// `tau chat` as unix user `user`, with `args` after `chat` and `answers` typed.
fn chat(
    tau: &Tau,
    config: &Path,
    model: &str,
    user: &str,
    args: &[&str],
    answers: &str,
) -> common::Run {
    let mut all = vec![
        "--config",
        config.to_str().unwrap(),
        "--model",
        model,
        "chat",
        "--answers-from-stdin",
    ];
    all.extend_from_slice(args);
    tau.run_env(&all, &[("USER", user)], &format!("do it\n{answers}"))
}

fn of_type(tau: &Tau, kind: &str) -> Vec<Value> {
    tau.audit_events()
        .into_iter()
        .filter(|e| e["type"] == kind)
        .collect()
}

fn person(name: &str) -> Value {
    json!({"kind": "person", "channel": "terminal", "person": name})
}

#[test]
fn a_yes_at_the_terminal_names_its_person_and_their_conversation_stays_theirs() {
    let tau = Tau::new();
    let config = tau.config(PEOPLE);
    let model = touch(&tau, "a.txt");
    let run = chat(
        &tau,
        &config,
        &model,
        "ana",
        &["--session", "ana-talk"],
        "y\n",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(tau.workspace().join("a.txt").exists(), "{}", run.stdout);
    let decided: Vec<Value> = of_type(&tau, "approval")
        .into_iter()
        .map(|e| e["decided_by"].clone())
        .collect();
    assert_eq!(decided, [person("ana")]);
    let state = tau_state::StateDb::open(&tau.home().join("state.db")).unwrap();
    let session = tau_protocol::SessionId::parse("ana-talk").unwrap();
    assert_eq!(
        state.people().conversation_person(&session).unwrap(),
        Some(tau_protocol::PersonName::parse("ana").unwrap())
    );

    // `--person` says who sits here, whatever the unix user; bob's grant is his.
    let model = touch(&tau, "b.txt");
    let run = chat(
        &tau,
        &config,
        &model,
        "ana",
        &["--person", "bob", "--session", "bob-talk"],
        "always\n",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(tau.workspace().join("b.txt").exists(), "{}", run.stdout);
    let decided: Vec<Value> = of_type(&tau, "approval")
        .into_iter()
        .map(|e| e["decided_by"].clone())
        .collect();
    assert_eq!(decided, [person("ana"), person("bob")]);
    let grants: Vec<Value> = of_type(&tau, "grant_created")
        .into_iter()
        .map(|e| json!([e["person"], e["channel"], e["scope"]]))
        .collect();
    assert_eq!(grants, [json!(["bob", "terminal", "conversation"])]);

    // Ana's conversation is not bob's to open.
    let run = chat(
        &tau,
        &config,
        &model,
        "ana",
        &["--person", "bob", "--session", "ana-talk"],
        "",
    );
    assert_eq!(
        (run.code, run.stderr.as_str()),
        (
            2,
            "tau: session ana-talk is ana's conversation, not bob's; a conversation stays its person's\n"
        )
    );
}

/// The transcript from the first question on.
fn from_question(stdout: &str) -> &str {
    let start = stdout.find("  ┌─ approval needed").unwrap_or(0);
    &stdout[start..]
}

#[test]
fn once_anyone_has_a_passkey_a_yes_typed_to_a_step_up_tool_approves_nothing() {
    // No passkey yet: the tool is asked and approved as before.
    let before = Tau::new();
    let config = before.config(&format!("{PEOPLE}\n{STEP_UP}"));
    let model = touch(&before, "before.txt");
    let run = chat(&before, &config, &model, "ana", &[], "y\n");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        before.workspace().join("before.txt").exists(),
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains("passkey"), "{}", run.stdout);

    let tau = Tau::new();
    let config = tau.config(&format!("{PEOPLE}\n{STEP_UP}"));
    with_a_passkey(&tau, "bob");
    let model = touch(&tau, "after.txt");
    let run = chat(&tau, &config, &model, "ana", &[], "y\nalways\n");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        !tau.workspace().join("after.txt").exists(),
        "{}",
        run.stdout
    );
    insta::assert_snapshot!(from_question(&run.stdout));
    let refused: Vec<Value> = of_type(&tau, "answer_refused");
    assert_eq!(
        refused,
        [
            json!({"type": "answer_refused", "channel": "terminal", "approval_id": "ap_1", "person": "ana", "reason": "a yes where no passkey can be asked"}),
            json!({"type": "answer_refused", "channel": "terminal", "approval_id": "ap_1", "person": "ana", "reason": "a yes where no passkey can be asked"}),
        ]
    );
    let calls: Vec<Value> = of_type(&tau, "tool_call")
        .into_iter()
        .map(|e| json!([e["status"], e["approval"], e["decided_by"]]))
        .collect();
    assert_eq!(
        calls,
        [json!(["refused", "rejected", {"kind": "end_of_input"}])]
    );
    assert_eq!(of_type(&tau, "grant_created"), Vec::<Value>::new());
}

const GARAGE: &str = r#"
[[devices]]
name = "garage-door"
label = "Garage door"
room = "garage"
kind = "garage"
command_topic = "home/garage/door/set"
state_topic = "home/garage/door/state"
actions = { open = "OPEN", close = "CLOSE" }
"#;

#[test]
fn once_anyone_has_a_passkey_a_garage_opens_with_nothing_typed_at_the_terminal() {
    let Some(broker) = tau_test_support::Mosquitto::start("allow_anonymous true").unwrap() else {
        return;
    };
    let garage = tau_test_support::DeviceStandIn::start(
        broker.port,
        tau_test_support::StandInSpec {
            client_id: "garage-door".into(),
            command_topic: "home/garage/door/set".into(),
            state_topic: "home/garage/door/state".into(),
            initial_state: Some("CLOSED".into()),
            states: vec![("OPEN".into(), "OPEN".into())],
        },
    )
    .unwrap();
    let tau = Tau::new();
    let config = tau.config(&format!("[tools.mqtt]\nport = {}\n{GARAGE}", broker.port));
    with_a_passkey(&tau, "owner");
    let model = tau.replay(&json!([
        tool_call(
            "t1",
            "device_set",
            &json!({"device": "garage-door", "action": "open", "reason": "home"})
        ),
        answer("Done."),
    ]));
    let run = chat(&tau, &config, &model, "ana", &[], "y\ngarage-door\n");
    assert_eq!(run.code, 0, "{}", run.stderr);
    // The card names no second step: nothing typed here passes it.
    insta::assert_snapshot!(from_question(&run.stdout));
    let reasons: Vec<Value> = of_type(&tau, "answer_refused")
        .into_iter()
        .map(|e| json!([e["channel"], e.get("person"), e["reason"]]))
        .collect();
    let refused = json!(["terminal", null, "a yes where no passkey can be asked"]);
    assert_eq!(reasons, [refused.clone(), refused]);
    let calls: Vec<Value> = of_type(&tau, "tool_call")
        .into_iter()
        .map(|e| json!([e["tool"], e["status"], e["approval"]]))
        .collect();
    assert_eq!(calls, [json!(["device_set", "refused", "rejected"])]);
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert_eq!(
        garage.commands(),
        Vec::<String>::new(),
        "the garage stays shut"
    );
}
