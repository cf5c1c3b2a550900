//! Routines hosted by `tau serve`: a webhook under TauBar's listener runs its routine
//! through the gate (exempt, audited with the routine's name); a call the exemption does
//! not cover is a question on the web page, answered there; the page lists the routines;
//! a routine switched by another tau process is kept or dropped by the running hub.

use crate::common;

use common::serve::request;
use common::{Tau, answer};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

const SECRET: &str = "a-doorbell-secret-long-enough";

fn doorbell_config(tau: &Tau) -> std::path::PathBuf {
    tau.serve_config(
        "[[routines]]\nname = \"doorbell\"\nwebhook = { secret_env = \"TAU_TEST_DOORBELL\" }\npayload = \"ring\"\ntool = \"run_command\"\narguments = { command = \"echo ding >> bell.txt\" }\n",
    )
}

/// What the doorbell wrote, once it wrote a whole line (the shell makes the file a
/// moment before it writes to it).
fn bell(tau: &Tau) -> Option<String> {
    std::fs::read_to_string(tau.workspace().join("bell.txt"))
        .ok()
        .filter(|text| text.ends_with('\n'))
}

#[test]
fn a_webhook_runs_its_routine_exempt_and_a_wrong_secret_is_refused() {
    let tau = Tau::new();
    let model = tau.replay(&json!([answer("unused")]));
    let serve = tau.serve_env(
        &model,
        &doorbell_config(&tau),
        &[("TAU_TEST_DOORBELL", SECRET)],
    );
    let host = serve.host();
    let hook = |auth: Option<&str>, body: &str| {
        let mut headers = vec![("Host", host.as_str())];
        if let Some(auth) = auth {
            headers.push(("Authorization", auth));
        }
        request(serve.addr, "POST", "/hooks/doorbell", &headers, Some(body))
    };
    let bearer = format!("Bearer {SECRET}");
    // The page's own token is not a webhook's secret.
    let page_token = format!("Bearer {}", serve.token);
    for (auth, body, status) in [
        (None, "ring", 401),
        (Some("Bearer not-the-secret-at-all"), "ring", 401),
        (Some(page_token.as_str()), "ring", 401),
        (Some(bearer.as_str()), "knock", 400),
    ] {
        assert_eq!(hook(auth, body).status, status, "{auth:?} {body}");
    }
    assert_eq!(bell(&tau), None, "nothing refused ran");
    let reply = hook(Some(&bearer), "ring");
    assert_eq!(
        (reply.status, reply.json()),
        (202, json!({"status": "started"}))
    );
    serve.until(|_| bell(&tau));
    assert_eq!(bell(&tau).as_deref(), Some("ding\n"));
    // The three wrong secrets from one address: the first is recorded, the others are
    // counted into one line when the window ends.
    let refused: Vec<Value> = tau
        .audit()
        .into_iter()
        .filter(|l| l["type"] == "webhook_refused")
        .collect();
    assert_eq!(refused.len(), 1, "{refused:#?}");
    assert_eq!(
        (
            &refused[0]["routine"],
            &refused[0]["sender"],
            &refused[0]["reason"],
            &refused[0]["session"]
        ),
        (
            &json!("doorbell"),
            &json!("127.0.0.1"),
            &json!("wrong or missing secret"),
            &json!("routines")
        )
    );
    let lines = serve.until(|_| {
        let lines: Vec<Value> = tau
            .audit()
            .into_iter()
            .filter(|l| l["session"] == "routines" && l["type"] != "webhook_refused")
            .collect();
        (lines.len() >= 2).then_some(lines)
    });
    assert_eq!(
        (
            &lines[0]["type"],
            &lines[0]["tool"],
            &lines[0]["approval"],
            &lines[0]["decided_by"]
        ),
        (
            &json!("tool_call"),
            &json!("run_command"),
            &json!("exempt"),
            &json!({"kind": "exemption", "name": "routine:doorbell"})
        )
    );
    assert_eq!(
        (
            &lines[1]["type"],
            &lines[1]["routine"],
            &lines[1]["trigger"],
            &lines[1]["outcome"]
        ),
        (
            &json!("routine_run"),
            &json!("doorbell"),
            &json!("webhook"),
            &json!("success")
        )
    );
    let listed = serve.get("/api/routines").json();
    assert_eq!(listed[0]["name"], "doorbell");
    assert_eq!(listed[0]["webhook"], "/hooks/doorbell");
    assert_eq!(listed[0]["last_run"]["outcome"], "success");
    let unauthorized = request(
        serve.addr,
        "GET",
        "/api/routines",
        &[("Host", host.as_str())],
        None,
    );
    assert_eq!(unauthorized.status, 401, "the list needs the page's token");
}

#[test]
fn a_switch_from_another_tau_process_reaches_the_running_hub_without_a_restart() {
    let tau = Tau::new();
    let model = tau.replay(&json!([answer("unused")]));
    let config = doorbell_config(&tau);
    let serve = tau.serve_env(&model, &config, &[("TAU_TEST_DOORBELL", SECRET)]);
    let host = serve.host();
    let bearer = format!("Bearer {SECRET}");
    // "knock" is not the routine's payload: an enabled routine refuses it with 400 and
    // runs nothing, a disabled one has no webhook (404). So probing never rings.
    let call = |body: &str| {
        request(
            serve.addr,
            "POST",
            "/hooks/doorbell",
            &[("Host", host.as_str()), ("Authorization", bearer.as_str())],
            Some(body),
        )
        .status
    };
    assert_eq!(call("knock"), 400, "the routine starts enabled");
    let switch = |to: &str| {
        let run = tau.run_env(
            &[
                "--config",
                config.to_str().unwrap(),
                "routines",
                to,
                "doorbell",
            ],
            &[("TAU_TEST_DOORBELL", SECRET)],
            "",
        );
        assert_eq!(
            (run.code, run.stdout.as_str()),
            (0, format!("routine doorbell {to}d\n").as_str()),
            "{}",
            run.stderr
        );
    };
    switch("disable");
    // The hub looks twice a second; `until` gives it ten.
    serve.until(|_| (call("knock") == 404).then_some(()));
    assert_eq!(call("ring"), 404, "a disabled routine has no webhook");
    switch("enable");
    serve.until(|_| (call("knock") == 400).then_some(()));
    assert_eq!(call("ring"), 202);
    serve.until(|_| bell(&tau));
    assert_eq!(bell(&tau).as_deref(), Some("ding\n"));
}

#[test]
fn a_webhook_routine_without_its_secret_stops_tau_serve_with_a_config_error() {
    let tau = Tau::new();
    let model = tau.replay(&json!([answer("unused")]));
    let config = doorbell_config(&tau);
    let run = tau.run(
        &[
            "--config",
            config.to_str().unwrap(),
            "--model",
            &model,
            "serve",
        ],
        "",
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_eq!(
        run.stderr,
        format!(
            "tau: {}: routines.doorbell.webhook.secret_env: the environment variable 'TAU_TEST_DOORBELL' is not set\n",
            config.display()
        )
    );
}

#[test]
fn a_call_not_covered_is_asked_on_the_web_page_and_runs_on_yes() {
    let tau = Tau::new();
    tau.routine_edited_behind_its_approval("web");

    let model = tau.replay(&json!([answer("unused")]));
    let serve = tau.serve(&model, &tau.serve_config(""));
    let row = serve.until(|serve| {
        let rows = serve.get("/api/approvals?state=pending").json();
        rows.as_array().unwrap().first().cloned()
    });
    assert_eq!(
        (&row["tool"], &row["arguments"], &row["channel"]),
        (
            &json!("run_command"),
            &json!(r#"{"command":"echo tock >> tick.txt"}"#),
            &json!("web")
        )
    );
    // The card's first note is tau's: which routine asks, and what fires it.
    assert_eq!(
        row["card"]["notes"][0],
        json!({"level": "info", "label": "routine", "text": "tick · every 1s"})
    );
    assert!(
        !tau.workspace().join("tick.txt").exists(),
        "nothing runs before the answer"
    );
    let id = row["id"].as_str().unwrap();
    let approved = serve.approve(id);
    assert_eq!(approved.status, 200, "{approved:?}");
    serve.until(|_| std::fs::read_to_string(tau.workspace().join("tick.txt")).ok());
    let call = serve.until(|_| {
        tau.audit().into_iter().find(|l| {
            l["type"] == "tool_call" && l["session"] == "routines" && l["approval"] == "approved"
        })
    });
    assert_eq!(
        call["decided_by"],
        json!({"kind": "person", "channel": "web"})
    );
    assert_eq!(call["approval_id"], row["id"]);
}

/// A grant for every conversation of the person on TauBar never reaches a routine's: the
/// same call made by a prompt routine a webhook fires is asked in the routine's own
/// conversation, while another chat of the person's is covered.
#[test]
fn an_all_chats_grant_never_covers_a_webhook_routine_s_call() {
    let tau = Tau::new();
    let config = tau.serve_config(
        "[[routines]]\nname = \"doorbell\"\nwebhook = { secret_env = \"TAU_TEST_DOORBELL\" }\n\
         prompt = \"Someone rang.\"\nask = \"web\"\n",
    );
    let call = json!({"command": "echo open >> door.txt"});
    let model = tau.replay(&json!([
        common::tool_call("t1", "run_command", &call),
        answer("done"),
    ]));
    let serve = tau.serve_env(&model, &config, &[("TAU_TEST_DOORBELL", SECRET)]);
    let door = || std::fs::read_to_string(tau.workspace().join("door.txt")).unwrap_or_default();
    let mine = serve.new_session();
    let row = serve.ask(&mine, "open the door");
    let id = row["id"].as_str().unwrap();
    let approved = serve.answer(
        id,
        &json!({"decision": "approve", "grant": {"scope": "channel"}}),
    );
    assert_eq!(approved.status, 200, "{approved:?}");
    serve.until_answered(&mine, "done");
    // Another chat of the person's: covered.
    let other = serve.new_session();
    let sent = serve.post(
        &format!("/api/sessions/{other}/messages"),
        r#"{"text": "open it again"}"#,
    );
    assert_eq!(sent.status, 202, "{sent:?}");
    serve.until_answered(&other, "done");
    assert_eq!(door(), "open\nopen\n");

    // The webhook's routine makes the same call: asked, not run.
    let host = serve.host();
    let bearer = format!("Bearer {SECRET}");
    let fired = request(
        serve.addr,
        "POST",
        "/hooks/doorbell",
        &[("Host", host.as_str()), ("Authorization", bearer.as_str())],
        Some(""),
    );
    assert_eq!(fired.status, 202, "{fired:?}");
    let asked = serve.until(|serve| {
        let rows = serve.get("/api/approvals?state=pending").json();
        rows.as_array().unwrap().first().cloned()
    });
    assert_eq!(
        (&asked["routine"]["name"], &asked["arguments"]),
        (&json!("doorbell"), &json!(call.to_string()))
    );
    assert!(
        asked["grant_offer"].is_null(),
        "no grant offered there: {asked}"
    );
    assert_eq!(door(), "open\nopen\n", "the routine's call did not run");
    let used = tau
        .audit()
        .into_iter()
        .filter(|l| l["type"] == "grant_used")
        .count();
    assert_eq!(used, 1, "only the person's other chat used the grant");
}
