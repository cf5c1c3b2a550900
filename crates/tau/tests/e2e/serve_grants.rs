//! Grants on TauBar through the real `tau serve`: a question answered with "approve,
//! allow again" makes a grant of exactly that call in its conversation, made when the
//! call goes through; the next identical call runs without a question and is recorded as
//! the grant's; `GET /api/grants` lists it, `DELETE /api/grants/{id}` ends it before any
//! later call. Requests a question cannot honour are refused and decide nothing.

use crate::common;

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
    assert!(
        row["grant_covers_channel"].as_str().unwrap().starts_with(
            "A grant covers exactly this call, in every conversation of yours on this \
                 channel, for 24 h"
        ),
        "{row}"
    );
    let answer_with = |body: &str| serve.answer(&id, &serde_json::from_str(body).unwrap());

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

/// `tau grants revoke` from another process while `tau serve` keeps making the covered
/// call: the grant covers no call after the revoke, and the audit log shows the order (every
/// use numbered, the revoke saying how many there were, the next call asked).
#[test]
fn a_revoke_from_another_process_ends_the_grant_before_its_next_call() {
    let tau = Tau::new();
    let call = json!({"command": COMMAND});
    let mut script = vec![tool_call("t0", "run_command", &call), answer("made")];
    for n in 1..=60 {
        script.push(tool_call(&format!("t{n}"), "run_command", &call));
        script.push(answer(&format!("ran {n}")));
    }
    let model = tau.replay(&Value::Array(script));
    let serve = tau.serve(&model, &tau.serve_config(""));
    let session = serve.new_session();
    let id = serve.ask(&session, "append x")["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let approved = serve.answer(&id, &json!({"decision": "approve", "grant": {}}));
    assert_eq!(approved.status, 200, "{approved:?}");
    serve.until_answered(&session, "made");
    let grant_id = serve.until(|serve| {
        serve.get("/api/grants").json()[0]["id"]
            .as_str()
            .map(str::to_owned)
    });

    let (asked, revoke) = std::thread::scope(|scope| {
        // The revoke, from its own process, once a few covered calls ran.
        let revoker = scope.spawn(|| {
            while out(&tau).lines().count() < 4 {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            tau.run(&["grants", "revoke", &grant_id], "")
        });
        // Turn after turn with the same call, until one is asked instead of run.
        let mut asked = None;
        for n in 1..=60 {
            let body = json!({ "text": format!("again {n}") }).to_string();
            let sent = serve.post(&format!("/api/sessions/{session}/messages"), &body);
            assert_eq!(sent.status, 202, "{sent:?}");
            let question = serve.until(|serve| {
                let pending = serve.get("/api/approvals?state=pending").json();
                if let Some(row) = pending.as_array().unwrap().first() {
                    return Some(Some(row.clone()));
                }
                let messages = serve
                    .get(&format!("/api/sessions/{session}/messages"))
                    .json();
                let last = messages.as_array().unwrap().last().cloned()?;
                (last["content"][0]["text"] == format!("ran {n}")).then_some(None)
            });
            if question.is_some() {
                asked = question;
                break;
            }
        }
        (asked, revoker.join().unwrap())
    });
    assert_eq!(revoke.code, 0, "{}", revoke.stderr);
    let asked = asked.expect("a call after the revoke is asked");

    let audit = tau.audit();
    let revoked: Vec<&Value> = audit
        .iter()
        .filter(|l| l["type"] == "grant_revoked")
        .collect();
    assert_eq!(revoked.len(), 1);
    let uses = revoked[0]["uses"].as_u64().unwrap();
    let used: Vec<u64> = audit
        .iter()
        .filter(|l| l["type"] == "grant_used" && l["grant_id"] == json!(grant_id))
        .map(|l| l["use_number"].as_u64().unwrap())
        .collect();
    assert_eq!(
        used,
        (1..=uses).collect::<Vec<_>>(),
        "each use once, in order"
    );
    let granted = audit
        .iter()
        .filter(|l| l["type"] == "tool_call" && l["decided_by"]["kind"] == "grant")
        .count() as u64;
    assert_eq!(granted, uses);
    // The approved call and each covered one ran; the one asked after the revoke did not.
    assert_eq!(out(&tau).lines().count() as u64, 1 + uses);
    assert!(uses >= 3, "the revoke came after a few uses: {uses}");
    assert_eq!(
        asked["call_id"],
        json!(format!("t{}", uses + 1)),
        "the first call after the last use is asked: {asked}"
    );
    let verify = tau.run(&["audit", "verify"], "");
    assert_eq!(verify.code, 0, "{}{}", verify.stdout, verify.stderr);
}

/// An approve-with-grant sent again (a replay of the same request) finds the question
/// decided: 409, and no second grant.
#[test]
fn a_replayed_approve_with_grant_makes_no_second_grant() {
    let tau = Tau::new();
    let call = json!({"command": COMMAND});
    let model = tau.replay(&json!([
        tool_call("t1", "run_command", &call),
        answer("first")
    ]));
    let serve = tau.serve(&model, &tau.serve_config(""));
    let session = serve.new_session();
    let id = serve.ask(&session, "append x")["id"]
        .as_str()
        .unwrap()
        .to_owned();
    // The same request each time, the card's hash in it.
    let card = serve.question(&id).unwrap()["card_sha256"].clone();
    let body = json!({"decision": "approve", "grant": {"scope": "conversation", "hours": 24},
                      "card_sha256": card})
    .to_string();
    assert_eq!(
        serve.post(&format!("/api/approvals/{id}"), &body).status,
        200
    );
    serve.until_answered(&session, "first");
    for _ in 0..3 {
        assert_eq!(
            serve.post(&format!("/api/approvals/{id}"), &body).status,
            409
        );
    }
    assert_eq!(serve.get("/api/grants").json().as_array().unwrap().len(), 1);
    let created = tau
        .audit()
        .into_iter()
        .filter(|l| l["type"] == "grant_created")
        .count();
    assert_eq!(created, 1);
    assert_eq!(out(&tau), "x\n");
}
