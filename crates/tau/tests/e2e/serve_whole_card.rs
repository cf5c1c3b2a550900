//! A yes counts only for the card it was given to, over TauBar's API and the real
//! `tau serve`: every question lists `card_sha256`, the hash of its card as the page draws
//! it, and every approving answer (approve, "allow again", "allow in all chats") must
//! carry it. Without it, with a wrong one, or with the hash of a card that has changed
//! since, nothing is decided, nothing runs, the answer is 422 and the audit log has an
//! `answer_refused` line; with it the call runs once. A reject needs no hash.

use crate::common;

use common::serve::Serve;
use common::{Tau, answer, tool_call};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// The length of the command every question here asks about: more than the page shows
/// before "Show all".
const LENGTH: usize = 4_103;

/// A command of exactly [`LENGTH`] characters that appends `word` to `ran.txt` at its very
/// end, after a long, harmless start.
fn long_command(word: &str) -> String {
    let tail = format!("; echo {word} >> ran.txt");
    let mut command = "true".to_owned();
    let mut step = 0;
    while command.chars().count() + tail.len() + 16 < LENGTH {
        step += 1;
        command.push_str(&format!(" && : step-{step:04}"));
    }
    while command.chars().count() + tail.len() < LENGTH {
        command.push('x');
    }
    command.push_str(&tail);
    assert_eq!(command.chars().count(), LENGTH);
    command
}

fn ran(tau: &Tau) -> Vec<String> {
    std::fs::read_to_string(tau.workspace().join("ran.txt"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The `answer_refused` lines of the audit log, as (approval id, reason).
fn refused(tau: &Tau) -> Vec<(String, String)> {
    tau.audit()
        .into_iter()
        .filter(|l| l["type"] == "answer_refused")
        .map(|l| {
            assert_eq!(l["channel"], "web", "{l}");
            (
                l["approval_id"].as_str().unwrap().to_owned(),
                l["reason"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn post(serve: &Serve, id: &str, body: &Value) -> common::serve::Reply {
    serve.post(&format!("/api/approvals/{id}"), &body.to_string())
}

/// The three approving answers, each as a body without the card's hash.
fn approving() -> [(&'static str, Value); 3] {
    [
        ("approve", json!({"decision": "approve"})),
        (
            "allow-again",
            json!({"decision": "approve", "grant": {"scope": "conversation"}}),
        ),
        (
            "allow-in-all-chats",
            json!({"decision": "approve", "grant": {"scope": "channel"}}),
        ),
    ]
}

#[test]
fn every_kind_of_yes_runs_only_with_the_hash_of_the_card_it_names() {
    let tau = Tau::new();
    let mut script = vec![
        tool_call("t0", "run_command", &json!({"command": long_command("no")})),
        answer("not run"),
    ];
    for (n, (kind, _)) in approving().iter().enumerate() {
        script.push(tool_call(
            &format!("t{}", n + 1),
            "run_command",
            &json!({"command": long_command(kind)}),
        ));
        script.push(answer(&format!("ran {kind}")));
    }
    let model = tau.replay(&Value::Array(script));
    let serve = tau.serve(&model, &tau.serve_config(""));
    let session = serve.new_session();

    // A reject needs no hash.
    let first = serve.ask(&session, "set it up");
    let first_id = first["id"].as_str().unwrap().to_owned();
    let first_card = first["card_sha256"].as_str().unwrap().to_owned();
    assert_eq!(first_card.len(), 64);
    assert!(
        first_card
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    );
    let rejected = post(&serve, &first_id, &json!({"decision": "reject"}));
    assert_eq!(rejected.status, 200, "{rejected:?}");
    assert_eq!(rejected.json()["state"], "rejected");
    serve.until_answered(&session, "not run");
    assert_eq!(refused(&tau), vec![]);

    for (kind, body) in approving() {
        let row = serve.ask(&session, kind);
        let id = row["id"].as_str().unwrap().to_owned();
        let card = row["card_sha256"].as_str().unwrap().to_owned();
        // The same hash in the display view the page draws from.
        let drawn = serve
            .get("/api/approvals?state=pending&display=true")
            .json();
        assert_eq!(drawn[0]["card_sha256"], json!(card), "{kind}");
        assert_ne!(card, first_card, "another command, another card");
        let before = refused(&tau).len();

        let wrong = [
            (None, "card_sha256_missing"),
            (Some(json!("0".repeat(64))), "card_sha256_stale"),
            (Some(json!(first_card)), "card_sha256_stale"),
            (Some(json!(card.to_uppercase())), "card_sha256_stale"),
            (Some(json!(&card[..63])), "card_sha256_stale"),
            (Some(json!("")), "card_sha256_stale"),
        ];
        for (hash, code) in &wrong {
            let mut sent = body.clone();
            if let Some(hash) = hash {
                sent["card_sha256"] = hash.clone();
            }
            let reply = post(&serve, &id, &sent);
            assert_eq!(reply.status, 422, "{kind} {sent}: {reply:?}");
            assert_eq!(reply.json()["refused"], json!(code), "{kind} {sent}");
            assert!(
                !reply.body.contains(&card),
                "the refusal does not hand out the card's hash: {}",
                reply.body
            );
        }
        // Not a card hash at all: the body is refused before anything is read.
        let mut not_text = body.clone();
        not_text["card_sha256"] = json!(["x"]);
        assert_eq!(post(&serve, &id, &not_text).status, 400, "{kind}");

        // Nothing was decided, nothing ran, no grant was made, and each refusal is a line.
        let waiting = serve.get("/api/approvals?state=pending").json();
        assert_eq!(waiting[0]["id"], json!(id), "{kind} still waits: {waiting}");
        assert!(!ran(&tau).contains(&kind.to_owned()), "{kind}");
        let grants_before = usize::from(kind == "allow-in-all-chats");
        assert_eq!(
            serve.get("/api/grants").json().as_array().unwrap().len(),
            grants_before,
            "{kind}: no grant from a yes that did not count"
        );
        let lines = refused(&tau);
        assert_eq!(lines.len(), before + wrong.len(), "{lines:?}");
        assert_eq!(
            lines[before..]
                .iter()
                .map(|(line_id, reason)| (line_id == &id, reason.as_str()))
                .collect::<Vec<_>>(),
            [
                (true, "a yes without the card's hash"),
                (true, "a yes to a card that is not the current one"),
                (true, "a yes to a card that is not the current one"),
                (true, "a yes to a card that is not the current one"),
                (true, "a yes to a card that is not the current one"),
                (true, "a yes to a card that is not the current one"),
            ]
        );

        // The card's own hash: decided, run once.
        let mut named = body.clone();
        named["card_sha256"] = json!(card);
        let approved = post(&serve, &id, &named);
        assert_eq!(approved.status, 200, "{kind}: {approved:?}");
        assert_eq!(approved.json()["state"], "approved");
        serve.until_answered(&session, &format!("ran {kind}"));
        // The same request again finds it decided.
        let again = post(&serve, &id, &named);
        assert_eq!(again.status, 409, "{kind}: {again:?}");
        assert_eq!(
            ran(&tau).iter().filter(|line| *line == kind).count(),
            1,
            "{kind} ran once: {:?}",
            ran(&tau)
        );
    }
    // Both grants asked for were made, each when its call went through.
    let grants = serve.until(|serve| {
        let grants = serve.get("/api/grants").json();
        (grants.as_array().unwrap().len() == 2).then_some(grants)
    });
    let scopes: Vec<&Value> = grants
        .as_array()
        .unwrap()
        .iter()
        .map(|g| &g["scope"])
        .collect();
    assert_eq!(scopes, [&json!("conversation"), &json!("channel")]);
    assert_eq!(ran(&tau), ["approve", "allow-again", "allow-in-all-chats"]);
}

const SCRIPT: &str = "echo one >> ran.txt\n";
const CHANGED: &str = "echo two >> ran.txt\n";

/// The same call asked twice, the file it runs rewritten in between: the second card shows
/// the new content, and the first card's hash approves nothing on it.
#[test]
fn a_hash_given_for_a_card_before_it_changed_approves_nothing() {
    let tau = Tau::new();
    let call = json!({"command": "sh setup.sh"});
    let model = tau.replay(&json!([
        tool_call(
            "t0",
            "write_file",
            &json!({"path": "setup.sh", "content": SCRIPT})
        ),
        tool_call("t1", "run_command", &call),
        answer("not yet"),
        tool_call(
            "t2",
            "write_file",
            &json!({"path": "setup.sh", "content": CHANGED})
        ),
        tool_call("t3", "run_command", &call),
        answer("done"),
    ]));
    let serve = tau.serve(&model, &tau.serve_config(""));
    let session = serve.new_session();
    let first = serve.ask(&session, "set it up");
    let first_id = first["id"].as_str().unwrap().to_owned();
    let seen = first["card_sha256"].clone();
    let rejected = post(&serve, &first_id, &json!({"decision": "reject"}));
    assert_eq!(rejected.status, 200, "{rejected:?}");
    serve.until_answered(&session, "not yet");

    let second = serve.ask(&session, "now");
    let id = second["id"].as_str().unwrap().to_owned();
    // The same arguments, a card that reads otherwise (the file's new content).
    assert_eq!(second["arguments"], first["arguments"]);
    assert_ne!(second["card_sha256"], seen);
    let detail = |row: &Value| {
        row["card"]["notes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["label"] == "file")
            .map(|n| n["detail"].clone())
    };
    assert_eq!(detail(&first), Some(json!(SCRIPT)));
    assert_eq!(detail(&second), Some(json!(CHANGED)));

    let stale = post(
        &serve,
        &id,
        &json!({"decision": "approve", "card_sha256": seen}),
    );
    assert_eq!(stale.status, 422, "{stale:?}");
    assert_eq!(stale.json()["refused"], "card_sha256_stale");
    assert_eq!(
        serve.get("/api/approvals?state=pending").json()[0]["id"],
        json!(id)
    );
    assert_eq!(ran(&tau), Vec::<String>::new());
    assert_eq!(
        refused(&tau),
        [(
            id.clone(),
            "a yes to a card that is not the current one".to_owned()
        )]
    );

    let approved = serve.approve(&id);
    assert_eq!(approved.status, 200, "{approved:?}");
    serve.until_answered(&session, "done");
    assert_eq!(ran(&tau), ["two"]);
}
