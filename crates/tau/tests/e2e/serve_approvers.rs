//! Approvers in a household of three on TauBar, each person with their own token: a
//! device or an MCP server that names `approvers` is answered by them alone, in whoever's
//! conversation it was asked; the conversation stays its person's. The real `tau serve`,
//! a real Mosquitto broker with a device stand-in on it, and a real MCP server.

use crate::common;

use std::time::Duration;

use common::people::{as_person, token};
use common::serve::{Api, Serve};
use common::{Tau, answer, peers, tool_call};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tau_test_support::{DeviceStandIn, Mosquitto, StandInSpec};

const PEOPLE: &str =
    "[[people]]\nname = \"ana\"\n\n[[people]]\nname = \"bob\"\n\n[[people]]\nname = \"cyd\"\n";

/// Each person of [`PEOPLE`] signed in with their own token, made as a person makes it.
fn people(tau: &Tau, config: &std::path::Path, serve: &Serve) -> [Api; 3] {
    ["ana", "bob", "cyd"].map(|name| as_person(serve, token(tau, config, name)))
}

fn pending(api: &Api) -> Vec<String> {
    api.get("/api/approvals?state=pending")
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row["id"].as_str().unwrap().to_owned())
        .collect()
}

/// A yes to question `id` from `api`'s person, naming the card `row` shows.
fn yes(api: &Api, id: &str, row: &Value) -> (u16, Value) {
    let body = json!({"decision": "approve", "card_sha256": row["card_sha256"]});
    let reply = api.post(&format!("/api/approvals/{id}"), &body.to_string());
    (reply.status, reply.json())
}

/// The `answer_refused` lines of the audit log, without what differs between runs.
fn refused(tau: &Tau) -> Vec<Value> {
    tau.audit()
        .into_iter()
        .filter(|line| line["type"] == "answer_refused")
        .map(|mut line| {
            let fields = line.as_object_mut().unwrap();
            for key in ["at", "ts", "seq", "prev", "session"] {
                fields.remove(key);
            }
            line
        })
        .collect()
}

fn decided_by(tau: &Tau, id: &str) -> Vec<Value> {
    tau.audit()
        .into_iter()
        .filter(|line| line["type"] == "approval" && line["approval_id"] == id)
        .map(|line| line["decided_by"].clone())
        .collect()
}

/// Asks question `id` (in Ana's conversation, approvers only Cyd) of all three: Bob finds
/// neither the conversation nor the question and his yes is refused; Ana's own yes is
/// refused too; Cyd finds it waiting and her yes decides it.
fn only_cyd_answers(tau: &Tau, [ana, bob, cyd]: &[Api; 3], session: &str, row: &Value) {
    let id = row["id"].as_str().unwrap();
    assert_eq!(pending(cyd), vec![id.to_owned()]);
    assert_eq!(pending(bob), Vec::<String>::new());
    let messages = format!("/api/sessions/{session}/messages");
    assert_eq!(
        (bob.get(&messages).status, cyd.get(&messages).status),
        (404, 404),
        "the conversation stays Ana's"
    );
    let only_cyd = json!({"error": "not yours: only cyd may answer it"});
    assert_eq!(yes(bob, id, row), (403, only_cyd.clone()));
    assert_eq!(yes(ana, id, row), (403, only_cyd.clone()));
    let line = |person: &str| {
        json!({"type": "answer_refused", "channel": "web", "approval_id": id,
               "person": person, "reason": "not yours: only cyd may answer it"})
    };
    assert_eq!(refused(tau), vec![line("bob"), line("ana")]);
    assert_eq!(decided_by(tau, id), Vec::<Value>::new());

    assert_eq!(yes(cyd, id, row).0, 200);
    assert_eq!(
        decided_by(tau, id),
        vec![json!({"kind": "person", "channel": "web", "person": "cyd"})]
    );
    // Answered once: a second yes, Cyd's or anyone's, decides nothing more.
    assert_ne!(yes(cyd, id, row).0, 200);
    assert_eq!(pending(cyd), Vec::<String>::new());
}

#[test]
fn a_device_whose_approver_is_cyd_waits_for_her_alone_in_anas_conversation() {
    let Some(broker) = Mosquitto::start("allow_anonymous true").unwrap() else {
        return;
    };
    let lamp = DeviceStandIn::start(
        broker.port,
        StandInSpec {
            client_id: "lamp".into(),
            command_topic: "home/lamp/set".into(),
            state_topic: "home/lamp/state".into(),
            initial_state: Some("OFF".into()),
            states: Vec::new(),
        },
    )
    .unwrap();
    let tau = Tau::new();
    let config = tau.serve_config(&format!(
        "[tools.mqtt]\nport = {}\n\n[[devices]]\nname = \"lamp\"\nlabel = \"Lamp\"\n\
         kind = \"light\"\ncommand_topic = \"home/lamp/set\"\n\
         actions = {{ on = \"ON\", off = \"OFF\" }}\napprovers = [\"cyd\"]\n\n{PEOPLE}",
        broker.port
    ));
    let model = tau.replay(&json!([
        tool_call(
            "t1",
            "device_set",
            &json!({"device": "lamp", "action": "on"})
        ),
        answer("The lamp is on."),
    ]));
    let serve = tau.serve(&model, &config);
    let people = people(&tau, &config, &serve);
    let ana = &people[0];
    let session = ana.new_session();
    let row = ana.ask(&session, "turn the lamp on");
    assert_eq!(row["tool"], "device_set");

    only_cyd_answers(&tau, &people, &session, &row);
    ana.until_answered(&session, "The lamp is on.");
    assert_eq!(lamp.wait_for_commands(1, Duration::from_secs(20)), ["ON"]);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(lamp.commands(), ["ON"], "it ran once");
}

#[test]
fn an_mcp_servers_tier_2_tool_waits_for_its_approver_alone() {
    let Some(python) = peers::python() else {
        return;
    };
    let tau = Tau::new();
    let config = tau.serve_config(&format!(
        "[mcp.servers.time]\ncommand = {}\nargs = [\"-m\", \"mcp_server_time\", \
         \"--local-timezone\", \"Europe/Istanbul\"]\napprovers = [\"cyd\"]\n\n{PEOPLE}",
        json!(python)
    ));
    let convert = json!({"time": "16:30", "source_timezone": "Europe/Istanbul",
                         "target_timezone": "Asia/Tokyo"});
    let model = tau.replay(&json!([
        tool_call("t1", "time__convert_time", &convert),
        answer("Converted."),
    ]));
    let serve = tau.serve(&model, &config);
    let people = people(&tau, &config, &serve);
    let ana = &people[0];
    let session = ana.new_session();
    let row = ana.ask(&session, "what is 16:30 here in Tokyo?");
    assert_eq!(row["tool"], "time__convert_time");

    only_cyd_answers(&tau, &people, &session, &row);
    let messages = ana.until_answered(&session, "Converted.");
    let result = messages
        .iter()
        .flat_map(|m| m["content"].as_array().unwrap())
        .find_map(|block| block.get("toolResult"))
        .unwrap();
    assert_eq!(result["status"], "success", "{result}");
    let converted: Value =
        serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(converted["target"]["timezone"], "Asia/Tokyo", "{converted}");
}
