//! Grants on TauBar through the real `tau serve`: a question answered with "approve,
//! allow again" makes a grant of exactly that call in its conversation, made when the
//! call goes through; the next identical call runs without a question and is recorded as
//! the grant's; `GET /api/grants` lists it, `DELETE /api/grants/{id}` ends it before any
//! later call. Requests a question cannot honour are refused and decide nothing.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use common::{Tau, answer, tool_call};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

const COMMAND: &str = "echo x >> out.txt";

fn out(tau: &Tau) -> String {
    std::fs::read_to_string(tau.workspace().join("out.txt")).unwrap_or_default()
}

#[test]
fn approve_allow_again_grants_exactly_that_call_until_revoked() {
    let tau = Tau::new();
    let call = json!({"command": COMMAND});
    let model = tau.replay(&json!([
        tool_call("t1", "run_command", &call),
        answer("first"),
        tool_call("t2", "run_command", &call),
        answer("second"),
        tool_call("t3", "run_command", &call),
        answer("third"),
    ]));
    let serve = tau.serve(&model, &tau.serve_config(""));
    let session = serve.new_session();
    let row = serve.ask(&session, "append x");
    let id = row["id"].as_str().unwrap().to_owned();
    // What a grant would cover is on the question, in tau's words, before anyone answers.
    assert!(
        row["grant_covers"]
            .as_str()
            .unwrap()
            .starts_with("A grant covers exactly this call, in this conversation, for 24 h"),
        "{row}"
    );
    let answer_with = |body: &str| serve.post(&format!("/api/approvals/{id}"), body);

    // What a question cannot honour is refused, and decides nothing.
    for (body, status) in [
        (r#"{"decision": "reject", "grant": {}}"#, 400),
        (
            r#"{"decision": "approve", "grant": {"scope": "everywhere"}}"#,
            400,
        ),
        (
            r#"{"decision": "approve", "grant": {"pattern": "echo *"}}"#,
            400,
        ),
        (r#"{"decision": "approve", "grant": {"hours": 0}}"#, 422),
        (r#"{"decision": "approve", "grant": {"hours": 721}}"#, 422),
        (r#"{"decision": "approve", "grant": {"max_uses": 0}}"#, 422),
    ] {
        assert_eq!(answer_with(body).status, status, "{body}");
    }
    let still = serve.get("/api/approvals?state=pending").json();
    assert_eq!(still[0]["id"], json!(id), "still waiting: {still}");
    assert_eq!(out(&tau), "");

    let approved = answer_with(r#"{"decision": "approve", "grant": {"scope": "conversation"}}"#);
    assert_eq!(approved.status, 200, "{approved:?}");
    serve.until_answered(&session, "first");
    assert_eq!(out(&tau), "x\n");
    let grants = serve.until(|serve| {
        let grants = serve.get("/api/grants").json();
        (!grants.as_array().unwrap().is_empty()).then_some(grants)
    });
    let grant = &grants[0];
    let grant_id = grant["id"].as_str().unwrap().to_owned();
    assert_eq!(
        (
            &grant["tool"],
            &grant["arguments"],
            &grant["scope"],
            &grant["channel"],
            &grant["session"],
            &grant["uses"],
            &grant["approval_id"]
        ),
        (
            &json!("run_command"),
            &call,
            &json!("conversation"),
            &json!("web"),
            &json!(session),
            &json!(0),
            &json!(id)
        )
    );

    // The same call again: no question, recorded as the grant's.
    let sent = serve.post(
        &format!("/api/sessions/{session}/messages"),
        r#"{"text": "again"}"#,
    );
    assert_eq!(sent.status, 202, "{sent:?}");
    serve.until_answered(&session, "second");
    assert_eq!(out(&tau), "x\nx\n");
    let all = serve.get("/api/approvals").json();
    assert_eq!(
        all.as_array().unwrap().len(),
        1,
        "no second question: {all}"
    );
    let second = tau
        .audit()
        .into_iter()
        .find(|l| l["type"] == "tool_call" && l["tool_use_id"] == "t2")
        .unwrap();
    assert_eq!(
        (&second["approval"], &second["decided_by"]),
        (&json!("granted"), &json!({"kind": "grant", "id": grant_id}))
    );
    assert_eq!(serve.get("/api/grants").json()[0]["uses"], json!(1));

    // Revoked: the next identical call is asked again.
    let revoked = serve.call("DELETE", &format!("/api/grants/{grant_id}"), None);
    assert_eq!(revoked.status, 200, "{revoked:?}");
    assert_eq!(
        serve
            .call("DELETE", &format!("/api/grants/{grant_id}"), None)
            .status,
        409
    );
    assert_eq!(
        serve
            .call("DELETE", "/api/grants/gr_0000000000000000", None)
            .status,
        404
    );
    assert_eq!(
        serve.call("DELETE", "/api/grants/not-an-id", None).status,
        404
    );
    assert_eq!(serve.get("/api/grants").json(), json!([]));
    let third = serve.ask(&session, "once more");
    assert_eq!(third["call_id"], json!("t3"));
    assert_eq!(out(&tau), "x\nx\n", "asked, not run");

    let kinds: Vec<Value> = tau
        .audit()
        .into_iter()
        .filter(|l| {
            ["grant_created", "grant_used", "grant_revoked"].contains(&l["type"].as_str().unwrap())
        })
        .map(|l| l["type"].clone())
        .collect();
    assert_eq!(
        kinds,
        vec![
            json!("grant_created"),
            json!("grant_used"),
            json!("grant_revoked")
        ]
    );
    let verify = tau.run(&["audit", "verify"], "");
    assert_eq!(verify.code, 0, "{}{}", verify.stdout, verify.stderr);
}

/// A grant needs a page that sends the token and comes from this page: a forged request
/// from elsewhere revokes nothing.
#[test]
fn grants_need_the_token_and_a_revoke_must_come_from_the_page() {
    let tau = Tau::new();
    let model = tau.replay(&json!([answer("unused")]));
    let serve = tau.serve(&model, &tau.serve_config(""));
    let host = serve.host();
    let listed = common::serve::request(
        serve.addr,
        "GET",
        "/api/grants",
        &[("Host", host.as_str())],
        None,
    );
    assert_eq!(listed.status, 401);
    let bearer = format!("Bearer {}", serve.token);
    let forged = common::serve::request(
        serve.addr,
        "DELETE",
        "/api/grants/gr_0000000000000000",
        &[
            ("Host", host.as_str()),
            ("Authorization", bearer.as_str()),
            ("Origin", "http://evil.example"),
        ],
        None,
    );
    assert_eq!(forged.status, 403);
}
