//! Devices under `tau serve`: a question about a lock-class device through TauBar's API
//! is approved only by an answer that carries its second step; the hub watches the
//! discovery topic of a pinned device while it runs, so a rename published meanwhile is a
//! warning on the next card, and the command still goes where the person pinned it.
//! A real Mosquitto broker and a device stand-in on it.

use crate::common;

use std::time::Duration;

use common::{Tau, answer, tool_call};
use pretty_assertions::assert_eq;
use serde_json::json;
use tau_test_support::{DeviceStandIn, Mosquitto, StandInSpec, publish};

const TOPIC: &str = "homeassistant/cover/garage/config";
const CONFIG: &str = r#"{"name":"Garage door","device_class":"garage","command_topic":"home/garage/door/set","state_topic":"home/garage/door/state","device":{"suggested_area":"garage"}}"#;

#[test]
fn a_rename_while_the_hub_runs_warns_and_only_the_second_step_approves() {
    let Some(broker) = Mosquitto::start("allow_anonymous true").unwrap() else {
        return;
    };
    let port = broker.port;
    let garage = DeviceStandIn::start(
        port,
        StandInSpec {
            client_id: "garage-door".into(),
            command_topic: "home/garage/door/set".into(),
            state_topic: "home/garage/door/state".into(),
            initial_state: Some("CLOSED".into()),
            states: Vec::new(),
        },
    )
    .unwrap();
    publish(port, TOPIC, CONFIG, true).unwrap();
    let tau = Tau::new();
    let config = tau.serve_config(&format!("[tools.mqtt]\nport = {port}\n"));
    let cli = |args: &[&str]| {
        let mut all = vec!["--config", config.to_str().unwrap()];
        all.extend_from_slice(args);
        let run = tau.run(&all, "");
        assert_eq!(run.code, 0, "{args:?}: {}", run.stderr);
        run.stdout
    };
    cli(&["devices", "discover", "--wait", "1"]);
    cli(&["devices", "pin", "garage-door"]);
    let model = tau.replay(&json!([
        tool_call(
            "t1",
            "device_set",
            &json!({"device": "garage-door", "action": "open"})
        ),
        answer("Open."),
    ]));
    let serve = tau.serve(&model, &config);

    // While the hub runs, someone renames the garage door to the kitchen light and
    // points its commands elsewhere. The hub records it; `tau devices list` shows it.
    let renamed = CONFIG
        .replace("Garage door", "kitchen light")
        .replace(
            "\"suggested_area\":\"garage\"",
            "\"suggested_area\":\"kitchen\"",
        )
        .replace("home/garage/door/set", "home/kitchen/light/set");
    publish(port, TOPIC, &renamed, true).unwrap();
    serve.until(|_| {
        let listed = cli(&["devices", "list"]);
        listed.contains("⚠ discovery now differs").then_some(())
    });

    let session = serve.new_session();
    serve.ask(&session, "open the garage");
    let row = serve.until(|serve| {
        let pending = serve.get("/api/approvals?state=pending").json();
        pending.as_array().unwrap().first().cloned()
    });
    let id = row["id"].as_str().unwrap().to_owned();
    let card = &row["card"];
    assert_eq!(
        card["headline"],
        json!("OPEN · Garage door (garage) — a lock-class device")
    );
    let warning = card["notes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["label"] == "discovery")
        .unwrap();
    assert_eq!(warning["level"], json!("warning"));
    assert_eq!(
        warning["detail"],
        json!(
            "name \"kitchen light\" (pinned: \"Garage door\")\nroom \"kitchen\" (pinned: \"garage\")\ncommand topic \"home/kitchen/light/set\" (pinned: \"home/garage/door/set\")"
        )
    );
    let code = card["confirm"]["code"].as_str().unwrap().to_owned();
    assert_eq!(card["confirm"]["word"], json!("garage-door"));

    // The API: a yes without the step, with a bare yes or a wrong number decides nothing,
    // even naming the card.
    let path = format!("/api/approvals/{id}");
    let wrong = if code == "10" { "11" } else { "10" };
    for body in [
        json!({"decision": "approve"}),
        json!({"decision": "approve", "confirm": "y"}),
        json!({"decision": "approve", "confirm": "yes"}),
        json!({"decision": "approve", "confirm": wrong}),
        json!({"decision": "approve", "confirm": "kitchen-light"}),
    ] {
        let reply = serve.answer(&id, &body);
        assert_eq!(reply.status, 422, "{body}: {}", reply.body);
        assert_eq!(reply.json()["approval"]["state"], json!("pending"));
    }
    let reply = serve.post(
        &path,
        &json!({"decision": "approve", "confirm": "x".repeat(65)}).to_string(),
    );
    assert_eq!(reply.status, 400);
    assert_eq!(garage.commands(), Vec::<String>::new());

    // The step passed, but no card named: nothing is decided.
    let unnamed = serve.post(
        &path,
        &json!({"decision": "approve", "confirm": code}).to_string(),
    );
    assert_eq!(unnamed.status, 422, "{}", unnamed.body);
    assert_eq!(unnamed.json()["refused"], json!("card_sha256_missing"));
    let reply = serve.answer(&id, &json!({"decision": "approve", "confirm": code}));
    assert_eq!(reply.status, 200, "{}", reply.body);
    serve.until_answered(&session, "Open.");
    // The command went where the person pinned it, not where discovery now points.
    assert_eq!(
        garage.wait_for_commands(1, Duration::from_secs(20)),
        ["OPEN"]
    );
}

/// Every table of `state.db` is opened through the same preparation, the audit log's
/// anchor too; none of it may open the file itself once SQLite has it open, or a reader in
/// another process (`tau devices list` while the hub runs) checkpoints and unlinks the
/// hub's write-ahead log, and what the hub writes next is lost to everyone else.
#[test]
fn a_reader_in_another_process_never_takes_the_hubs_write_ahead_log_away() {
    let tau = Tau::new();
    let model = tau.replay(&json!([]));
    let config = tau.serve_config("");
    let _serve = tau.serve(&model, &config);
    let wal = tau.home().join("state.db-wal");
    assert!(wal.exists(), "the hub writes ahead");
    let reader = rusqlite::Connection::open(tau.home().join("state.db")).unwrap();
    let tables: i64 = reader
        .query_row("SELECT count(*) FROM sqlite_master", [], |row| row.get(0))
        .unwrap();
    assert!(tables > 0);
    drop(reader);
    let run = tau.run(
        &["--config", config.to_str().unwrap(), "devices", "list"],
        "",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(wal.exists(), "a reader's close took the hub's log away");
}
