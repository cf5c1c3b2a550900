//! A routine names its owner, a person of `[[people]]`: through the real `tau serve`, the
//! routine's conversation and its questions are the owner's alone (another person neither
//! lists, reads nor answers them: 404, and 403 audited with who tried); `tau routines
//! list` shows whose each routine is; an owner that is nobody, or missing among several
//! people, is a config error naming the key; a routine made in a conversation is its
//! person's, whatever the model says.

use crate::common;

use common::people::{ids, token};
use common::serve::{Api, request};
use common::{Tau, answer, tool_call};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

const PEOPLE: &str = "[[people]]\nname = \"ana\"\n\n[[people]]\nname = \"bob\"\n";
const SECRET: &str = "a-doorbell-secret-long-enough";

#[test]
fn an_owned_routine_s_question_is_its_owners_alone() {
    let tau = Tau::new();
    let config = tau.serve_config(&format!(
        "{PEOPLE}\n[[routines]]\nname = \"doorbell\"\nwebhook = {{ secret_env = \"TAU_TEST_DOORBELL\" }}\n\
         prompt = \"Someone rang.\"\nask = \"web\"\nowner = \"ana\"\n"
    ));
    let (ana_token, bob_token) = (token(&tau, &config, "ana"), token(&tau, &config, "bob"));
    let call = json!({"command": "echo open >> door.txt"});
    let model = tau.replay(&json!([
        tool_call("t1", "run_command", &call),
        answer("done"),
    ]));
    let serve = tau.serve_env(&model, &config, &[("TAU_TEST_DOORBELL", SECRET)]);
    let ana = Api {
        addr: serve.addr,
        token: ana_token,
    };
    let bob = Api {
        addr: serve.addr,
        token: bob_token,
    };

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
    let row = ana.until(|ana| {
        let rows = ana.get("/api/approvals?state=pending").json();
        rows.as_array().unwrap().first().cloned()
    });
    assert_eq!(
        (&row["routine"]["name"], &row["tool"]),
        (&json!("doorbell"), &json!("run_command"))
    );
    let id = row["id"].as_str().unwrap().to_owned();
    let session = row["session"].as_str().unwrap().to_owned();

    // The routine's conversation is Ana's: listed for her, nowhere for Bob.
    assert_eq!(ids(&ana.get("/api/sessions").json()), vec![session.clone()]);
    assert_eq!(ids(&bob.get("/api/sessions").json()), Vec::<String>::new());
    assert_eq!(
        bob.get(&format!("/api/sessions/{session}/messages")).status,
        404
    );
    for list in [
        "/api/approvals?state=pending",
        "/api/approvals?state=pending&channel=all",
    ] {
        assert_eq!(bob.get(list).json(), json!([]), "{list}");
    }

    // Bob's yes is refused, decides nothing, and is recorded with his name.
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
        .map(|line| json!([line["approval_id"], line["person"], line["reason"]]))
        .collect();
    assert_eq!(
        refused,
        vec![json!([id, "bob", "not yours: the conversation is ana's"])]
    );
    let door = || std::fs::read_to_string(tau.workspace().join("door.txt")).ok();
    assert_eq!(door(), None, "nothing ran on Bob's yes");

    // Ana's yes runs it, and the record names her.
    assert_eq!(ana.approve(&id).status, 200);
    ana.until_answered(&session, "done");
    assert_eq!(door().as_deref(), Some("open\n"));
    let decided: Vec<Value> = tau
        .audit()
        .into_iter()
        .filter(|line| line["type"] == "approval" && line["approval_id"] == id)
        .map(|line| line["decided_by"].clone())
        .collect();
    assert_eq!(
        decided,
        vec![json!({"kind": "person", "channel": "web", "person": "ana"})]
    );
}

#[test]
fn a_routine_s_owner_that_is_nobody_or_missing_among_several_is_a_config_error() {
    let routine = "[[routines]]\nname = \"porch\"\nevery = \"1h\"\ntool = \"clock\"\n";
    let cases = [
        (
            format!("{PEOPLE}\n{routine}"),
            "routines.porch.owner: is missing: tau.toml names several people, so say whose routine this is (owner = \"NAME\"); its questions are theirs to answer",
        ),
        (
            format!("{PEOPLE}\n{routine}owner = \"zed\"\n"),
            "routines.porch.owner: no person is called 'zed' in [[people]]; `tau people list` names them",
        ),
        (
            format!("{routine}owner = \"ana\"\n"),
            "routines.porch.owner: names 'ana', but tau.toml names no [[people]]; add them (`tau people add ana`) or leave owner out",
        ),
        (
            format!("{PEOPLE}\n{routine}owner = \"bob\"\nask = \"telegram\"\n"),
            "routines.porch.ask: \"telegram\" asks the routine's owner 'bob' in their own chat, and they have no telegram id in [[people]]",
        ),
    ];
    for (text, expected) in cases {
        let tau = Tau::new();
        let config = tau.config(&text);
        let run = tau.run(
            &["--config", config.to_str().unwrap(), "routines", "list"],
            "",
        );
        assert_eq!(
            (run.code, run.stderr),
            (2, format!("tau: {}: {expected}\n", config.display())),
            "{text}"
        );
    }
}

#[test]
fn routines_list_shows_whose_each_routine_is_when_people_are_named() {
    let tau = Tau::new();
    let config = tau.config(&format!(
        "{PEOPLE}\n[[routines]]\nname = \"porch\"\ncron = \"0 19 * * *\"\ntool = \"clock\"\nowner = \"ana\"\n\n\
         [[routines]]\nname = \"plants\"\nevery = \"6h\"\ntool = \"clock\"\nowner = \"bob\"\n"
    ));
    let config = config.to_str().unwrap();
    let run = tau.run(&["--config", config, "routines", "list"], "");
    assert_eq!(run.code, 0, "{}", run.stderr);
    insta::assert_snapshot!(run.stdout);
    let run = tau.run(&["--config", config, "routines", "show", "porch"], "");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout
            .contains("\nowner      ana: its questions are theirs to answer\n"),
        "{}",
        run.stdout
    );
    // A home of one implicit person lists as before: no owner column.
    let alone = Tau::new();
    let config = alone.config("[[routines]]\nname = \"porch\"\nevery = \"1h\"\ntool = \"clock\"\n");
    let run = alone.run(
        &["--config", config.to_str().unwrap(), "routines", "list"],
        "",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.starts_with("NAME   ON   TRIGGER  "),
        "{}",
        run.stdout
    );
}

#[test]
fn a_routine_made_in_a_conversation_is_its_persons_whatever_the_model_says() {
    let tau = Tau::new();
    let config = tau.config(PEOPLE);
    let config = config.to_str().unwrap();
    let routine = |owner: Option<&str>| {
        let mut routine = json!({"name": "hello", "every": "10m", "tool": "clock"});
        if let Some(owner) = owner {
            routine["owner"] = json!(owner);
        }
        routine
    };
    let chat = |routine: Value| {
        let model = tau.replay(&json!([
            tool_call("t1", "create_routine", &routine),
            answer("Done.")
        ]));
        let run = tau.run(
            &[
                "--config",
                config,
                "--model",
                &model,
                "chat",
                "--person",
                "bob",
                "--answers-from-stdin",
            ],
            "say the time every ten minutes\ny\n",
        );
        assert_eq!(run.code, 0, "{}", run.stderr);
    };

    // The model names Ana in Bob's conversation: refused, nothing registered.
    chat(routine(Some("ana")));
    let call = tau
        .audit_events()
        .into_iter()
        .find(|e| e["type"] == "tool_call" && e["tool"] == "create_routine")
        .unwrap();
    assert_eq!(
        (&call["status"], &call["result_summary"]),
        (
            &json!("error"),
            &json!(
                "Error: the routine was not registered: owner: a routine made in this conversation is bob's, not ana's; leave owner out (each person sets up their own routines)"
            )
        )
    );
    let listed = tau.run(&["--config", config, "routines", "list"], "");
    assert!(
        listed.stdout.starts_with("no routines yet"),
        "{}",
        listed.stdout
    );

    // Left out, the owner is the person whose conversation it is.
    chat(routine(None));
    let shown = tau.run(&["--config", config, "routines", "show", "hello"], "");
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    assert!(
        shown
            .stdout
            .contains("\nowner      bob: its questions are theirs to answer\n"),
        "{}",
        shown.stdout
    );
}
