//! The history of decisions on TauBar through the real `tau serve`: one call approved and
//! one rejected over the API, then `GET /api/decisions` lists both, newest first, with who
//! decided, on which channel and what ran; filters keep what they name; bad parameters
//! are refused; the token is required; the model's arguments are escaped in the display
//! view.

use crate::common;

use common::{Tau, answer, tool_call};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

const HOSTILE: &str = "echo <b>x</b> \u{202e}txt.exe \u{1b}[2J";

fn decide(serve: &common::serve::Serve, session: &str, prompt: &str, decision: &str) -> String {
    let id = serve.ask(session, prompt)["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let reply = serve.answer(&id, &json!({ "decision": decision }));
    assert_eq!(reply.status, 200, "{reply:?}");
    id
}

fn listed(serve: &common::serve::Serve, query: &str) -> Vec<Value> {
    let reply = serve.get(&format!("/api/decisions{query}"));
    assert_eq!(reply.status, 200, "{reply:?}");
    reply.json().as_array().unwrap().clone()
}

#[test]
fn approved_and_rejected_calls_are_listed_with_who_decided_and_what_ran() {
    let tau = Tau::new();
    let approved_call = json!({"command": "echo ran >> out.txt"});
    let rejected_call = json!({"command": HOSTILE});
    let model = tau.replay(&json!([
        tool_call("t1", "run_command", &approved_call),
        answer("first"),
        tool_call("t2", "run_command", &rejected_call),
        answer("second"),
    ]));
    let serve = tau.serve(&model, &tau.serve_config(""));
    assert_eq!(
        listed(&serve, ""),
        Vec::<Value>::new(),
        "nothing decided yet"
    );
    let session = serve.new_session();
    let first = decide(&serve, &session, "append", "approve");
    serve.until_answered(&session, "first");
    let second = decide(&serve, &session, "again", "reject");
    serve.until_answered(&session, "second");

    let all = serve.until(|serve| {
        let all = listed(serve, "");
        (all.len() == 2 && !all[1]["ran"].is_null()).then_some(all)
    });
    let person = json!({"kind": "person", "channel": "web"});
    let summary: Vec<Value> = all
        .iter()
        .map(|d| {
            json!([
                d["approval_id"],
                d["tool"],
                d["arguments"],
                d["decision"],
                d["outcome"],
                d["decided_by"],
                d["channel"],
                d["session"],
                d["tool_use_id"],
                d["ran"]["status"],
            ])
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            json!([
                second,
                "run_command",
                rejected_call,
                "rejected",
                "rejected",
                person,
                "web",
                session,
                "t2",
                "refused"
            ]),
            json!([
                first,
                "run_command",
                approved_call,
                "approved",
                "approved",
                person,
                "web",
                session,
                "t1",
                "success"
            ]),
        ],
        "newest first"
    );
    let newer: jiff::Timestamp = all[0]["at"].as_str().unwrap().parse().unwrap();
    let older: jiff::Timestamp = all[1]["at"].as_str().unwrap().parse().unwrap();
    assert!(newer >= older);

    // Filters keep what they name.
    let ids = |query: &str| -> Vec<Value> {
        listed(&serve, query)
            .iter()
            .map(|d| d["approval_id"].clone())
            .collect()
    };
    assert_eq!(ids("?outcome=approved"), vec![json!(first)]);
    assert_eq!(ids("?outcome=rejected"), vec![json!(second)]);
    assert_eq!(ids("?outcome=timeout"), Vec::<Value>::new());
    assert_eq!(ids("?tool=run_command&limit=1"), vec![json!(second)]);
    assert_eq!(ids("?tool=append_note"), Vec::<Value>::new());

    // The display view: the model's arguments as a person may see them, escaped.
    let shown = listed(&serve, "?outcome=rejected&display=true");
    assert_eq!(
        shown[0]["arguments"],
        json!(r#"{"command":"echo <b>x</b> \u{202e}txt.exe \u001b[2J"}"#)
    );
    let text = shown[0]["arguments"].as_str().unwrap();
    assert!(!text.contains(['\u{202e}', '\u{1b}']), "{text}");
    assert_eq!(
        all[0]["arguments"]["command"],
        json!(HOSTILE),
        "raw as logged"
    );

    // Parameters it does not know, or values it cannot use, decide nothing: 400.
    for query in [
        "?since=1",
        "?outcome=maybe",
        "?limit=0",
        "?limit=1001",
        "?limit=ten",
        "?display=yes",
        "?tool=",
    ] {
        let reply = serve.get(&format!("/api/decisions{query}"));
        assert_eq!(reply.status, 400, "{query}: {reply:?}");
        assert!(reply.json()["error"].is_string(), "{reply:?}");
    }
    let reply = serve.get("/api/decisions?outcome=maybe");
    assert_eq!(
        reply.json()["error"],
        json!(
            "outcome must be one of approved, rejected, timeout, cancelled, granted, exempt, \
             refused"
        )
    );

    // Without the token: nothing.
    let host = serve.host();
    let anonymous = common::serve::request(
        serve.addr,
        "GET",
        "/api/decisions",
        &[("Host", host.as_str())],
        None,
    );
    assert_eq!(anonymous.status, 401);
    assert!(!anonymous.body.contains("run_command"), "{anonymous:?}");
}
