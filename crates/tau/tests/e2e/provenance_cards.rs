//! A card steered by outside text, on every channel that shows one: the person asks to
//! answer a mail, the model reads the inbox (a stranger's text in it) and sends the
//! contract to the stranger's address. The send is tier 1, asked only because the chat
//! read outside text; each card says so and names the read the address came from; the
//! person says no and nothing is sent. Needs the Python MCP SDK (`TAU_TEST_PYTHON`);
//! the TUI needs tmux.

use crate::common;

use std::time::Duration;

use common::office::{self, INJECTED_TO, PROMPT, REFUSED_ANSWER, SEND_ID};
use common::tmux::Terminal;
use common::{Tau, peers};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// The source notes every card of the send carries, as the question stores them.
fn source_notes() -> Value {
    json!([
        {"level": "warning", "label": "source", "text": "asked because this chat read text from outside before this call: the result of office__read_inbox (call read-1)"},
        {"level": "warning", "label": "source", "text": "to: \"mark@evil.example\" first appeared in the result of office__read_inbox (call read-1), not in anything you typed"},
        {"level": "warning", "label": "source", "text": "subject: \"Contract\" first appeared in the result of office__read_inbox (call read-1), not in anything you typed"},
        {"level": "warning", "label": "source", "text": "attachments.0: \"contract-acme.pdf\" first appeared in the result of office__read_inbox (call read-1), not in anything you typed"},
    ])
}

/// The notes of `card` labelled `source`.
fn source_notes_of(card: &Value) -> Value {
    let notes = card["notes"].as_array().cloned().unwrap_or_default();
    Value::Array(
        notes
            .into_iter()
            .filter(|n| n["label"] == "source")
            .collect(),
    )
}

/// The audit's question, decision and call for the send.
fn send_lines(tau: &Tau) -> (Value, Value, Value) {
    let events = tau.audit_events();
    let find = |kind: &str| {
        events
            .iter()
            .find(|e| e["type"] == kind && (e["call_id"] == SEND_ID || e["tool_use_id"] == SEND_ID))
            .cloned()
            .unwrap_or_else(|| panic!("no {kind} for the send in {events:#?}"))
    };
    (
        find("approval_requested"),
        find("approval"),
        find("tool_call"),
    )
}

/// The refused send as the audit keeps it: asked (escalated), the source named, refused.
fn assert_refused_and_named(tau: &Tau, channel: &str) {
    let (asked, decided, call) = send_lines(tau);
    assert_eq!(asked["tier"], 1);
    assert_eq!(source_notes_of(&asked["card"]), source_notes());
    assert_eq!(asked["card"]["provenance"]["escalated"], true);
    assert_eq!(
        asked["card"]["provenance"]["flagged"][0]["value"],
        INJECTED_TO
    );
    assert_eq!(
        (&decided["decision"], &decided["decided_by"]),
        (
            &json!("rejected"),
            &json!({"kind": "person", "channel": channel})
        )
    );
    assert_eq!(
        (&call["status"], &call["approval"]),
        (&json!("refused"), &json!("rejected"))
    );
    assert_eq!(call["provenance"]["escalated"], true);
    assert_eq!(
        office::ledger(tau),
        vec!["read_inbox".to_owned()],
        "only the read was carried out"
    );
}

#[test]
fn tau_chat_names_the_read_the_address_came_from_and_a_no_sends_nothing() {
    let Some(python) = peers::python() else {
        return;
    };
    let tau = Tau::new();
    let config = tau.config(&office::config(&tau, &python));
    let model = office::replay(&tau);
    let run = tau.run(
        &[
            "--config",
            config.to_str().unwrap(),
            "--model",
            &model,
            "chat",
            "--answers-from-stdin",
            "--session",
            "s1",
        ],
        &format!("{PROMPT}\nn\n"),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.ends_with(&format!("tau> {REFUSED_ANSWER}\n")),
        "{}",
        run.stdout
    );
    insta::assert_snapshot!(run.stdout);
    assert_refused_and_named(&tau, "terminal");
}

#[test]
fn tau_tui_shows_the_source_notes_on_its_card_and_a_no_sends_nothing() {
    let Some(python) = peers::python() else {
        return;
    };
    let tau = Tau::new();
    let config = tau.config(&office::config(&tau, &python));
    let model = office::replay(&tau);
    let Some(terminal) = Terminal::start(
        &tau,
        &[
            "--config",
            config.to_str().unwrap(),
            "--model",
            &model,
            "tui",
            "--session",
            "s1",
        ],
    ) else {
        return;
    };
    terminal.wait_for("approvals: 0");
    terminal.type_text(PROMPT);
    terminal.keys(&["Enter"]);
    terminal.wait_for_all(&["tau asks: approval needed", "not in anything you typed"]);
    // Past the card's answer guard: the frame a person answers on.
    std::thread::sleep(Duration::from_millis(600));
    let frame = terminal.wait_for_all(&["not in anything you typed", "scroll to the end"]);
    // The status line names the replay file, a new temporary path each run.
    let card: Vec<&str> = frame.lines().filter(|l| !l.contains("replay:")).collect();
    insta::assert_snapshot!(card.join("\n"));
    terminal.keys(&["n"]);
    terminal.wait_for(REFUSED_ANSWER);
    assert_refused_and_named(&tau, "tui");
    terminal.keys(&["C-c"]);
    assert_eq!(terminal.exited(), 0);
}

/// `tau approvals` with what changes from run to run replaced: the id, the deadline, the
/// minutes left.
fn approvals_listing(tau: &Tau, id: &str, deadline: &str) -> String {
    let listed = tau.run(&["approvals"], "");
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    let deadline: jiff::Timestamp = deadline.parse().unwrap();
    let deadline = deadline
        .to_zoned_datetime(jiff::tz::TimeZone::UTC)
        .strftime("%Y-%m-%d %H:%M:%S UTC")
        .to_string();
    listed
        .stdout
        .replace(id, "<id>")
        .replace(&deadline, "<deadline>")
        .lines()
        .map(
            |line| match (line.rfind(" ("), line.strip_suffix(" min left)")) {
                (Some(at), Some(_)) => format!("{} (<n> min left)", &line[..at]),
                _ => line.to_owned(),
            },
        )
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_waiting_question_keeps_its_sources_across_sigkill_and_a_yes_then_sends_once() {
    let Some(python) = peers::python() else {
        return;
    };
    let tau = Tau::new();
    let config = tau.serve_config(&format!(
        "[tools.clock]\nzone = \"UTC\"\n{}",
        office::config(&tau, &python)
    ));
    let model = office::replay_ending(&tau, "Sent after the restart.");
    let serve = tau.serve(&model, &config);
    let session = serve.new_session();
    let asked = serve.ask(&session, PROMPT);
    let id = asked["id"].as_str().unwrap().to_owned();
    assert_eq!(asked["tier"], 1);
    assert_eq!(source_notes_of(&asked["card"]), source_notes());
    // The turn paused on the question (its state is saved): now nothing is lost to a kill.
    serve.until(|_| {
        tau.audit()
            .iter()
            .any(|l| l["type"] == "turn_end" && l["stop_reason"] == "interrupt")
            .then_some(())
    });
    let before = approvals_listing(&tau, &id, asked["deadline"].as_str().unwrap());
    insta::assert_snapshot!(before);
    serve.kill_hard();

    let serve = tau.serve(&model, &config);
    assert!(
        serve
            .banner
            .iter()
            .any(|l| l == "tau serve: 1 question still waits for an answer"),
        "{:?}",
        serve.banner
    );
    let stored = serve.question(&id).unwrap();
    assert_eq!(stored["state"], "pending");
    assert_eq!(
        stored["card"], asked["card"],
        "the whole card, provenance and notes"
    );
    assert_eq!(stored["card_sha256"], asked["card_sha256"]);
    assert_eq!(
        approvals_listing(&tau, &id, asked["deadline"].as_str().unwrap()),
        before
    );
    assert_eq!(office::ledger(&tau), vec!["read_inbox".to_owned()]);

    let approved = serve.approve(&id);
    assert_eq!(approved.status, 200, "{approved:?}");
    serve.until_answered(&session, "Sent after the restart.");
    assert_eq!(
        office::ledger(&tau),
        vec!["read_inbox".to_owned(), "send_email".to_owned()],
        "sent once, as approved"
    );
    let sends: Vec<Value> = tau
        .audit()
        .into_iter()
        .filter(|l| l["type"] == "tool_call" && l["tool"] == "office__send_email")
        .collect();
    assert_eq!(sends.len(), 1, "{sends:#?}");
    assert_eq!(
        (&sends[0]["status"], &sends[0]["approval"]),
        (&json!("success"), &json!("approved"))
    );
    assert_eq!(sends[0]["provenance"]["escalated"], true, "{:#}", sends[0]);
    assert_eq!(sends[0]["provenance"]["flagged"][0]["value"], INJECTED_TO);
    serve.kill_hard();
}
