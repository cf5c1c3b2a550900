//! Passkeys over TauBar's API and the real `tau serve`, without a browser: with none
//! enrolled a tool marked `step_up = "passkey"` is approved as before and offers no
//! challenge; once one is, its yes without an assertion, or with a challenge TauBar never
//! offered, decides nothing, runs nothing and is audited. The ceremonies' calls need
//! TauBar's own `Origin`, an enrollment secret works only when it is one, and a session
//! cookie TauBar did not give opens nothing.

use crate::common;

use common::serve::request;
use common::{Tau, answer, tool_call};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

const STEP_UP: &str = "[tools.step_up]\nrun_command = \"passkey\"\n";

fn ran(tau: &Tau) -> Vec<String> {
    std::fs::read_to_string(tau.workspace().join("ran.txt"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn a_step_up_tool_takes_a_passkey_only_once_anyone_has_one() {
    let tau = Tau::new();
    let model = tau.replay(&json!([
        tool_call(
            "t1",
            "run_command",
            &json!({"command": "echo one >> ran.txt"})
        ),
        answer("one"),
        tool_call(
            "t2",
            "run_command",
            &json!({"command": "echo two >> ran.txt"})
        ),
        answer("two"),
    ]));
    let serve = tau.serve(&model, &tau.serve_config(STEP_UP));
    let session = serve.new_session();

    // No passkey enrolled: asked and approved as before.
    let first = serve.ask(&session, "one");
    let first_id = first["id"].as_str().unwrap().to_owned();
    assert_eq!(first.get("step_up"), None, "{first}");
    let offered = serve.post(&format!("/api/approvals/{first_id}/step_up"), "");
    assert_eq!(offered.status, 409, "{offered:?}");
    assert_eq!(
        offered.json(),
        json!({"error": "this question takes no passkey"})
    );
    assert_eq!(serve.approve(&first_id).status, 200);
    serve.until_answered(&session, "one");
    assert_eq!(ran(&tau), ["one"]);

    enroll_a_passkey(&tau);

    let second = serve.ask(&session, "two");
    let id = second["id"].as_str().unwrap().to_owned();
    assert_eq!(
        second["step_up"],
        json!({"kind": "passkey", "challenge": format!("/api/approvals/{id}/step_up")})
    );
    let card = second["card_sha256"].clone();
    let answers = [
        json!({"decision": "approve", "card_sha256": card}),
        json!({"decision": "approve", "card_sha256": card, "grant": {"scope": "conversation"}}),
        json!({"decision": "approve", "card_sha256": card,
               "step_up": {"ceremony": "ab".repeat(32), "credential": {}}}),
    ];
    let mut seen = Vec::new();
    for body in &answers {
        let reply = serve.post(&format!("/api/approvals/{id}"), &body.to_string());
        seen.push((reply.status, reply.json()));
    }
    assert_eq!(
        seen,
        [
            (
                422,
                json!({"refused": "step_up_missing", "error": "this question takes a passkey: ask for its challenge (POST /api/approvals/{id}/step_up), sign it and send it as \"step_up\"; nothing was decided"})
            ),
            (
                422,
                json!({"refused": "step_up_missing", "error": "this question takes a passkey: ask for its challenge (POST /api/approvals/{id}/step_up), sign it and send it as \"step_up\"; nothing was decided"})
            ),
            (
                422,
                json!({"refused": "step_up_unknown", "error": "that passkey challenge is not one TauBar offered, or it was used or expired: ask for a new one; nothing was decided"})
            ),
        ]
    );
    assert_eq!(
        serve.get("/api/approvals?state=pending").json()[0]["id"],
        json!(id)
    );
    assert_eq!(ran(&tau), ["one"], "nothing more ran");
    let reasons: Vec<Value> = tau
        .audit()
        .into_iter()
        .filter(|l| l["type"] == "answer_refused")
        .map(|l| json!([l["approval_id"], l["reason"]]))
        .collect();
    assert_eq!(
        reasons,
        [
            json!([id, "a yes without the passkey it takes"]),
            json!([id, "a yes without the passkey it takes"]),
            json!([
                id,
                "a passkey assertion for a challenge not offered, used or expired"
            ]),
        ]
    );
    assert_eq!(
        serve
            .post(
                &format!("/api/approvals/{id}"),
                &json!({"decision": "reject"}).to_string()
            )
            .status,
        200
    );
}

/// A passkey enrolled for the one person, stored as an enrollment keeps it.
fn enroll_a_passkey(tau: &Tau) {
    let store = tau_state::StateDb::open(&tau.home().join("state.db"))
        .unwrap()
        .passkeys();
    let secret = tau_web::enroll_secret(&store, tau_web::IMPLICIT_PERSON).unwrap();
    let passkey = tau_state::StoredPasskey {
        id: "00ff".into(),
        person: "owner".into(),
        credential: "{}".into(),
        created_at: 0,
        last_used_at: None,
    };
    assert!(store.enroll(&secret, &passkey, jiff_now()).unwrap());
}

/// A grant made while nobody had a passkey covers its call until the first one is
/// enrolled; from then on the same call is asked, and only a passkey approves it.
#[test]
fn a_grant_made_before_the_first_passkey_never_stands_in_for_one() {
    let tau = Tau::new();
    let again = json!({"command": "echo again >> ran.txt"});
    let model = tau.replay(&json!([
        tool_call("t1", "run_command", &again),
        answer("one"),
        tool_call("t2", "run_command", &again),
        answer("two"),
        tool_call("t3", "run_command", &again),
        answer("three"),
    ]));
    let serve = tau.serve(&model, &tau.serve_config(STEP_UP));
    let session = serve.new_session();
    let first = serve.ask(&session, "one");
    let reply = serve.answer(
        first["id"].as_str().unwrap(),
        &json!({"decision": "approve", "grant": {"scope": "conversation"}}),
    );
    assert_eq!(reply.status, 200, "{reply:?}");
    serve.until_answered(&session, "one");
    // Still without a passkey, the grant covers the same call: nobody is asked.
    let sent = serve.post(
        &format!("/api/sessions/{session}/messages"),
        r#"{"text": "two"}"#,
    );
    assert_eq!(sent.status, 202);
    serve.until_answered(&session, "two");
    assert_eq!(ran(&tau), ["again", "again"]);
    let used = |tau: &Tau| {
        tau.audit()
            .iter()
            .filter(|l| l["type"] == "grant_used")
            .count()
    };
    assert_eq!(used(&tau), 1);

    enroll_a_passkey(&tau);
    let third = serve.ask(&session, "three");
    let id = third["id"].as_str().unwrap().to_owned();
    assert_eq!(
        third["step_up"],
        json!({"kind": "passkey", "challenge": format!("/api/approvals/{id}/step_up")})
    );
    assert_eq!(
        ran(&tau),
        ["again", "again"],
        "the grant let nothing through"
    );
    assert_eq!(used(&tau), 1);
    let reply = serve.approve(&id);
    assert_eq!(
        (reply.status, reply.json()["refused"].clone()),
        (422, json!("step_up_missing"))
    );
    assert_eq!(ran(&tau), ["again", "again"]);
}

fn jiff_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        .try_into()
        .unwrap()
}

#[test]
fn the_ceremonies_calls_come_from_taubar_and_a_cookie_it_did_not_give_opens_nothing() {
    let tau = Tau::new();
    let model = tau.replay(&json!([answer("hi")]));
    let serve = tau.serve(&model, &tau.serve_config(""));
    let host = serve.host();
    let origin = serve.origin();
    let secret = json!({"secret": "not-a-secret"}).to_string();
    let post = |path: &str, origin: Option<&str>, body: Option<&str>| {
        let mut headers = vec![("Host", host.as_str())];
        if let Some(origin) = origin {
            headers.push(("Origin", origin));
        }
        let reply = request(serve.addr, "POST", path, &headers, body);
        (reply.status, reply.json())
    };
    let refused_origin =
        json!({"error": "a request that changes something must come from this page"});
    assert_eq!(
        post("/passkeys/enroll/start", None, Some(&secret)),
        (403, refused_origin.clone())
    );
    assert_eq!(
        post(
            "/passkeys/enroll/start",
            Some("http://evil.example"),
            Some(&secret)
        ),
        (403, refused_origin.clone())
    );
    assert_eq!(
        post("/passkeys/signin/start", Some("http://evil.example"), None),
        (403, refused_origin)
    );
    assert_eq!(
        post("/passkeys/enroll/start", Some(&origin), Some(&secret)),
        (
            403,
            json!({"error": "this enrollment link was used, has expired or is not this tau's: ask for a new one"})
        )
    );
    assert_eq!(
        post("/passkeys/signin/start", Some(&origin), None),
        (
            400,
            json!({"error": "the passkey ceremony failed: no passkey is enrolled"})
        )
    );
    let forged = request(
        serve.addr,
        "GET",
        "/api/sessions",
        &[
            ("Host", host.as_str()),
            ("Cookie", &format!("tau_session={}", "ab".repeat(32))),
        ],
        None,
    );
    assert_eq!(forged.status, 401, "{forged:?}");
    assert_eq!(serve.get("/api/passkeys").json(), json!([]));
    let page = request(
        serve.addr,
        "GET",
        "/enroll",
        &[("Host", host.as_str())],
        None,
    );
    assert_eq!(page.status, 200);
    assert!(page.body.contains("Enroll a passkey"), "{}", page.body);
}
