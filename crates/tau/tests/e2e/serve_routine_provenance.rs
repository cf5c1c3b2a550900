//! A prompt routine `tau serve` runs when its webhook fires, its turn reading the office's
//! inbox (outside text that asks for the contract to go to a stranger) and then sending:
//! with no `ask` channel nobody can say yes, so the send is refused and the run says why;
//! with `ask = "web"` the question reaches TauBar with the card's source notes.

use crate::common;

use common::office::{self, INJECTED_TO, SEND_ID};
use common::serve::{Serve, request};
use common::{Tau, peers};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

const SECRET: &str = "a-mailbox-secret-long-enough";

/// `tau serve` with the office and the routine `mail`, fired by its webhook, asking on
/// `ask` (a `tau.toml` line, or nothing); and its config file.
fn serve_mail(tau: &Tau, python: &str, ask: &str) -> (Serve, std::path::PathBuf) {
    let config = tau.serve_config(&format!(
        "{}[[routines]]\nname = \"mail\"\nwebhook = {{ secret_env = \"TAU_TEST_MAILBOX\" }}\n\
         prompt = \"Answer today's mail.\"\n{ask}",
        office::config(tau, python)
    ));
    let model = office::replay(tau);
    (
        tau.serve_env(&model, &config, &[("TAU_TEST_MAILBOX", SECRET)]),
        config,
    )
}

fn fire(serve: &Serve) {
    let host = serve.host();
    let bearer = format!("Bearer {SECRET}");
    let fired = request(
        serve.addr,
        "POST",
        "/hooks/mail",
        &[("Host", host.as_str()), ("Authorization", bearer.as_str())],
        Some(""),
    );
    assert_eq!(fired.status, 202, "{fired:?}");
}

/// The routine's `routine_run` line, once it is written.
fn run_line(tau: &Tau, serve: &Serve) -> Value {
    serve.until(|_| {
        tau.audit()
            .into_iter()
            .find(|l| l["type"] == "routine_run" && l["routine"] == "mail")
    })
}

/// The audit line of the hijacked send.
fn send_line(tau: &Tau) -> Value {
    tau.audit()
        .into_iter()
        .find(|l| l["type"] == "tool_call" && l["tool_use_id"] == SEND_ID)
        .unwrap()
}

#[test]
fn an_unwatched_routine_s_send_after_outside_text_is_refused_and_its_run_says_why() {
    let Some(python) = peers::python() else {
        return;
    };
    let tau = Tau::new();
    let (serve, config) = serve_mail(&tau, &python, "");
    fire(&serve);
    let run = run_line(&tau, &serve);
    let why = "refused: office__send_email (asked because the run read text from outside; \
               this routine has no ask channel)";
    assert_eq!(
        (&run["outcome"], &run["detail"]),
        (&json!("refused"), &json!(why))
    );
    assert_eq!(
        office::ledger(&tau),
        vec!["read_inbox".to_owned()],
        "only the read was carried out"
    );
    let send = send_line(&tau);
    assert_eq!(
        (
            &send["status"],
            &send["approval"],
            &send["provenance"]["escalated"]
        ),
        (&json!("refused"), &json!("rejected"), &json!(true))
    );
    assert_eq!(send["provenance"]["flagged"][0]["value"], INJECTED_TO);
    let pending = serve.get("/api/approvals?state=pending").json();
    assert_eq!(pending, json!([]), "nobody was asked");
    // `tau routines show` reads the stored run.
    let shown = tau.run_env(
        &[
            "--config",
            config.to_str().unwrap(),
            "routines",
            "show",
            "mail",
        ],
        &[("TAU_TEST_MAILBOX", SECRET)],
        "",
    );
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    assert!(
        shown
            .stdout
            .contains(&format!("refused   webhook — {why}\n")),
        "{}",
        shown.stdout
    );
}

#[test]
fn with_an_ask_channel_the_send_is_asked_there_with_the_source_notes() {
    let Some(python) = peers::python() else {
        return;
    };
    let tau = Tau::new();
    let (serve, _) = serve_mail(&tau, &python, "ask = \"web\"\n");
    fire(&serve);
    let row = serve.until(|serve| {
        let rows = serve.get("/api/approvals?state=pending").json();
        rows.as_array().unwrap().first().cloned()
    });
    assert_eq!(
        (&row["tool"], &row["channel"], &row["routine"]["name"]),
        (&json!("office__send_email"), &json!("web"), &json!("mail"))
    );
    let sources: Vec<&str> = row["card"]["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|note| note["label"] == "source")
        .map(|note| note["text"].as_str().unwrap())
        .collect();
    let first_in_the_inbox = |value: &str| {
        format!(
            "{value} first appeared in the result of office__read_inbox (call read-1), not in \
             anything you typed"
        )
    };
    assert_eq!(
        sources,
        vec![
            "asked because this chat read text from outside before this call: the result of \
             office__read_inbox (call read-1)"
                .to_owned(),
            first_in_the_inbox(&format!("to: \"{INJECTED_TO}\"")),
            first_in_the_inbox("subject: \"Contract\""),
            first_in_the_inbox("attachments.0: \"contract-acme.pdf\""),
        ]
    );
    assert_eq!(row["card"]["provenance"]["escalated"], true);
    assert_eq!(office::ledger(&tau), vec!["read_inbox".to_owned()]);
    let id = row["id"].as_str().unwrap();
    let rejected = serve.answer(id, &json!({"decision": "reject"}));
    assert_eq!(rejected.status, 200, "{rejected:?}");
    let run = run_line(&tau, &serve);
    assert_eq!(
        (&run["outcome"], &run["detail"]),
        (&json!("refused"), &json!("refused: office__send_email"))
    );
    assert_eq!(office::ledger(&tau), vec!["read_inbox".to_owned()]);
    assert_eq!(send_line(&tau)["decided_by"]["kind"], "person");
}
