//! A household on TauBar through the real `tau serve`: each person signs in with their
//! own token (`tau people token NAME`); a conversation is its person's alone (another
//! person neither lists, reads, writes in, renames nor answers it: 404, and 403 for an
//! answer, audited with who tried); TauBar's own token is the first person's.

use crate::common;

use common::Tau;
use common::people::{as_person, ids, token};
use common::serve::Api;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

const PEOPLE: &str =
    "[[people]]\nname = \"ana\"\n\n[[people]]\nname = \"bob\"\n\n[[people]]\nname = \"cyd\"\n";

#[test]
fn a_conversation_is_its_persons_alone() {
    let tau = Tau::new();
    let config = tau.serve_config(PEOPLE);
    let (ana_token, bob_token) = (token(&tau, &config, "ana"), token(&tau, &config, "bob"));
    let serve = tau.serve(&tau.make_proof(), &config);
    let (ana, bob) = (as_person(&serve, ana_token), as_person(&serve, bob_token));

    let session = ana.new_session();
    let row = ana.ask(&session, "make the proof");
    let id = row["id"].as_str().unwrap().to_owned();
    let bobs = bob.new_session();

    // Bob does not find Ana's conversation anywhere.
    assert_eq!(ids(&bob.get("/api/sessions").json()), vec![bobs.clone()]);
    assert_eq!(ids(&ana.get("/api/sessions").json()), vec![session.clone()]);
    for (method, path, body) in [
        ("GET", format!("/api/sessions/{session}/messages"), None),
        (
            "POST",
            format!("/api/sessions/{session}/messages"),
            Some(r#"{"text": "hi"}"#),
        ),
        (
            "PATCH",
            format!("/api/sessions/{session}"),
            Some(r#"{"title": "mine"}"#),
        ),
        ("DELETE", format!("/api/sessions/{session}"), None),
        ("GET", format!("/api/sessions/{session}/events"), None),
    ] {
        let reply = bob.call(method, &path, body);
        assert_eq!(
            (reply.status, reply.json()),
            (404, json!({"error": "no such session"})),
            "{method} {path}"
        );
    }
    assert_eq!(bob.get("/api/approvals?state=pending").json(), json!([]));
    assert_eq!(
        bob.get("/api/approvals?state=pending&channel=all").json(),
        json!([])
    );

    // Bob's yes, even naming Ana's card, is refused and recorded with his name.
    let body = json!({"decision": "approve", "card_sha256": row["card_sha256"]});
    let reply = bob.post(&format!("/api/approvals/{id}"), &body.to_string());
    assert_eq!(
        (reply.status, reply.json()),
        (
            403,
            json!({"error": "not yours: the conversation is ana's"})
        )
    );
    let refused: Vec<Value> = tau
        .audit()
        .into_iter()
        .filter(|line| line["type"] == "answer_refused")
        .map(|mut line| {
            let fields = line.as_object_mut().unwrap();
            for key in ["at", "ts", "seq", "prev", "session"] {
                fields.remove(key);
            }
            line
        })
        .collect();
    assert_eq!(
        refused,
        vec![json!({
            "type": "answer_refused",
            "channel": "web",
            "approval_id": id,
            "person": "bob",
            "reason": "not yours: the conversation is ana's",
        })]
    );
    assert_eq!(tau.proof(), None);

    // TauBar's own token is the first person's: Ana's conversation, hers to answer.
    let first = serve.api();
    assert_eq!(
        ids(&first.get("/api/sessions").json()),
        vec![session.clone()]
    );
    assert_eq!(ana.approve(&id).status, 200);
    ana.until_answered(&session, "Done.");
    assert_eq!(tau.proof().as_deref(), Some("made\n"));
}

#[test]
fn a_revoked_token_signs_nobody_in() {
    let tau = Tau::new();
    let config = tau.serve_config(PEOPLE);
    let cyd_token = token(&tau, &config, "cyd");
    let serve = tau.serve(&tau.make_proof(), &config);
    let cyd = as_person(&serve, cyd_token);
    assert_eq!(cyd.get("/api/sessions").status, 200);
    let run = tau.run(
        &[
            "--config",
            config.to_str().unwrap(),
            "people",
            "token",
            "cyd",
            "--revoke",
        ],
        "",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(cyd.get("/api/sessions").status, 401);
}

#[test]
fn only_the_approvers_a_tool_names_may_answer_it_wherever_it_was_asked() {
    let tau = Tau::new();
    let config = tau.serve_config(&format!(
        "[tools.approvers]\nrun_command = [\"cyd\"]\n\n{PEOPLE}"
    ));
    let (ana_token, cyd_token) = (token(&tau, &config, "ana"), token(&tau, &config, "cyd"));
    let serve = tau.serve(&tau.make_proof(), &config);
    let (ana, cyd) = (as_person(&serve, ana_token), as_person(&serve, cyd_token));
    let session = ana.new_session();
    let row = ana.ask(&session, "make the proof");
    let id = row["id"].as_str().unwrap().to_owned();

    // Ana's own conversation asked, and still only Cyd may answer.
    let body = json!({"decision": "approve", "card_sha256": row["card_sha256"]});
    let reply = ana.post(&format!("/api/approvals/{id}"), &body.to_string());
    assert_eq!(
        (reply.status, reply.json()),
        (403, json!({"error": "not yours: only cyd may answer it"}))
    );
    // It waits for Cyd, though the conversation is not hers (which she still cannot read).
    assert_eq!(
        ids(&cyd.get("/api/approvals?state=pending").json()),
        vec![id.clone()]
    );
    assert_eq!(
        cyd.get(&format!("/api/sessions/{session}/messages")).status,
        404
    );
    assert_eq!(cyd.approve(&id).status, 200);
    ana.until_answered(&session, "Done.");
    assert_eq!(tau.proof().as_deref(), Some("made\n"));
    let decided: Vec<Value> = tau
        .audit()
        .into_iter()
        .filter(|line| line["type"] == "approval" && line["approval_id"] == id)
        .map(|line| line["decided_by"].clone())
        .collect();
    assert_eq!(
        decided,
        vec![json!({"kind": "person", "channel": "web", "person": "cyd"})]
    );
}

#[test]
fn an_approver_who_is_nobody_is_refused_at_start() {
    let tau = Tau::new();
    let config = tau.serve_config(&format!(
        "[tools.approvers]\nrun_command = [\"zed\"]\n\n{PEOPLE}"
    ));
    let run = tau.run(
        &["--config", config.to_str().unwrap(), "people", "list"],
        "",
    );
    assert_eq!(
        (run.code, run.stderr),
        (
            2,
            format!(
                "tau: {}: tools.approvers.run_command: 'zed' is not a person of [[people]]; approvers name people there\n",
                config.display()
            )
        )
    );
}

#[test]
fn a_home_from_before_people_keeps_its_conversations_as_the_first_persons() {
    let tau = Tau::new();
    let before = tau.serve_config("");
    let serve = tau.serve(&tau.make_proof(), &before);
    let session = serve.new_session();
    let row = serve.ask(&session, "make the proof");
    let id = row["id"].as_str().unwrap().to_owned();
    let old_token = serve.token.clone();
    let (code, _) = serve.terminate();
    assert_eq!(code, 0);

    let config = tau.serve_config(PEOPLE);
    let (ana_token, bob_token) = (token(&tau, &config, "ana"), token(&tau, &config, "bob"));
    let serve = tau.serve(&tau.make_proof(), &config);
    assert_eq!(serve.token, old_token, "TauBar's token stays");
    let (ana, bob) = (as_person(&serve, ana_token), as_person(&serve, bob_token));
    assert_eq!(ids(&ana.get("/api/sessions").json()), vec![session.clone()]);
    assert_eq!(ids(&bob.get("/api/sessions").json()), Vec::<String>::new());
    assert_eq!(
        ids(&ana.get("/api/approvals?state=pending").json()),
        vec![id.clone()]
    );
    assert_eq!(ana.approve(&id).status, 200);
    ana.until_answered(&session, "Done.");
    assert_eq!(tau.proof().as_deref(), Some("made\n"));
}

#[test]
fn a_grant_is_its_persons_and_another_persons_identical_call_is_asked() {
    let tau = Tau::new();
    let config = tau.serve_config(PEOPLE);
    let (ana_token, bob_token) = (token(&tau, &config, "ana"), token(&tau, &config, "bob"));
    let serve = tau.serve(&tau.make_proof(), &config);
    let (ana, bob) = (as_person(&serve, ana_token), as_person(&serve, bob_token));
    let first = ana.new_session();
    let row = ana.ask(&first, "make the proof");
    let id = row["id"].as_str().unwrap();
    let reply = ana.answer(
        id,
        &json!({"decision": "approve", "grant": {"scope": "channel"}}),
    );
    assert_eq!(reply.status, 200, "{reply:?}");
    ana.until_answered(&first, "Done.");
    let grants = ana.get("/api/grants").json();
    assert_eq!(grants.as_array().unwrap().len(), 1, "{grants}");
    assert_eq!(grants[0]["person"], "ana");
    assert_eq!(bob.get("/api/grants").json(), json!([]));
    let grant = grants[0]["id"].as_str().unwrap();
    assert_eq!(
        bob.call("DELETE", &format!("/api/grants/{grant}"), None)
            .status,
        404
    );

    // Ana's next conversation runs the same call under her grant; Bob's is asked.
    let second = ana.new_session();
    let reply = ana.post(
        &format!("/api/sessions/{second}/messages"),
        r#"{"text": "again"}"#,
    );
    assert_eq!(reply.status, 202);
    ana.until_answered(&second, "Done.");
    let bobs = bob.new_session();
    let asked = bob.ask(&bobs, "make the proof");
    assert_eq!(asked["session"], bobs);
    assert_eq!(tau.proof().as_deref(), Some("made\nmade\n"));
}

/// `tau people add`, `token` and `remove` beside a running hub count at once: a new
/// person's token signs them in, a removed person's token and passkey sign-in are
/// refused, and what was theirs stays theirs (nobody else reaches it, after a restart
/// neither).
#[test]
fn people_added_and_removed_while_the_hub_runs_count_at_once() {
    let tau = Tau::new();
    let config = tau.serve_config("[[people]]\nname = \"ana\"\n\n[[people]]\nname = \"bob\"\n");
    let cli = |args: &[&str]| {
        let mut all = vec!["--config", config.to_str().unwrap(), "people"];
        all.extend_from_slice(args);
        let run = tau.run(&all, "");
        assert_eq!(run.code, 0, "{args:?}: {}", run.stderr);
    };
    let serve = tau.serve(&tau.make_proof(), &config);
    let ana = serve.api();
    let bob = as_person(&serve, token(&tau, &config, "bob"));
    let bobs = bob.new_session();
    let bobs_question = bob.ask(&bobs, "make the proof");
    // Bob also signed in with a passkey (his session kept as TauBar keeps one).
    let now = jiff::Timestamp::now().as_second();
    let sign_in = "cd".repeat(32);
    tau_state::StateDb::open(&tau.home().join("state.db"))
        .unwrap()
        .passkeys()
        .add_session(&sign_in, "bob", now, now + 3600)
        .unwrap();
    let with_cookie = |serve: &common::serve::Serve| {
        let host = serve.host();
        let cookie = format!("tau_session={sign_in}");
        let headers = [("Host", host.as_str()), ("Cookie", cookie.as_str())];
        common::serve::request(serve.addr, "GET", "/api/sessions", &headers, None).status
    };
    assert_eq!(with_cookie(&serve), 200);

    // Cyd, added while the hub runs, signs in with her new token and answers her own.
    cli(&["add", "cyd"]);
    let cyd = as_person(&serve, token(&tau, &config, "cyd"));
    let cyds = cyd.new_session();
    let row = cyd.ask(&cyds, "make the proof");
    assert_eq!(ids(&cyd.get("/api/sessions").json()), vec![cyds.clone()]);
    assert_eq!(
        ana.get(&format!("/api/sessions/{cyds}/messages")).status,
        404
    );
    assert_eq!(cyd.approve(row["id"].as_str().unwrap()).status, 200);
    cyd.until_answered(&cyds, "Done.");
    assert_eq!(tau.proof().as_deref(), Some("made\n"));

    // Bob, removed, is signed out at once; his conversation and its question are nobody
    // else's.
    cli(&["remove", "bob"]);
    assert_eq!(bob.get("/api/sessions").status, 401);
    assert_eq!(
        with_cookie(&serve),
        401,
        "his passkey's sign-in went with him"
    );
    let bobs_id = bobs_question["id"].as_str().unwrap();
    let yes =
        json!({"decision": "approve", "card_sha256": bobs_question["card_sha256"]}).to_string();
    let reach = |api: &Api| {
        (
            ids(&api.get("/api/sessions").json()).contains(&bobs),
            api.get(&format!("/api/sessions/{bobs}/messages")).status,
            api.post(&format!("/api/approvals/{bobs_id}"), &yes).status,
        )
    };
    assert_eq!(reach(&ana), (false, 404, 403));
    assert_eq!(reach(&cyd), (false, 404, 403));
    let (code, _) = serve.terminate();
    assert_eq!(code, 0);

    let serve = tau.serve(&tau.make_proof(), &config);
    let cyd = as_person(&serve, cyd.token);
    assert_eq!(reach(&serve.api()), (false, 404, 403));
    assert_eq!(reach(&cyd), (false, 404, 403));
    assert_eq!(
        as_person(&serve, bob.token).get("/api/sessions").status,
        401
    );
    assert_eq!(
        tau.proof().as_deref(),
        Some("made\n"),
        "Bob's call never ran"
    );
}

/// A conversation from before people were named is the first person's; when that person
/// is removed, it stays theirs and does not pass to whoever is first next.
#[test]
fn the_first_persons_old_conversations_do_not_pass_to_the_next_when_they_are_removed() {
    let tau = Tau::new();
    let serve = tau.serve(&tau.make_proof(), &tau.serve_config(""));
    let session = serve.new_session();
    serve.ask(&session, "make the proof");
    let (code, _) = serve.terminate();
    assert_eq!(code, 0);

    let config = tau.serve_config(PEOPLE);
    let run = tau.run(
        &[
            "--config",
            config.to_str().unwrap(),
            "people",
            "remove",
            "ana",
        ],
        "",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let serve = tau.serve(&tau.make_proof(), &config);
    let bob = serve.api();
    assert_eq!(ids(&bob.get("/api/sessions").json()), Vec::<String>::new());
    assert_eq!(
        bob.get(&format!("/api/sessions/{session}/messages")).status,
        404
    );
    assert_eq!(bob.get("/api/approvals?state=pending").json(), json!([]));
}
