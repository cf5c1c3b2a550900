//! Every listing escapes every field: a Home Assistant discovery config that anyone on the
//! broker can retain, with escape sequences, bidi controls, zero-width and lookalike
//! characters in each of its fields, shows as escaped text in `tau devices discover`,
//! `list` and `show` (against a real Mosquitto), its lookalike words flagged as on a card;
//! so do a grant and a waiting question whose arguments hold such text, in `tau grants
//! list` and `show` and `tau approvals`.

use crate::common;

use std::path::{Path, PathBuf};

use common::Tau;
use pretty_assertions::assert_eq;
use serde_json::json;
use tau_protocol::{ApprovalId, CallCard, DecidedBy, Grant, GrantId, GrantScope, SessionId, Tier};
use tau_state::{NewApproval, StateDb, canonical_arguments};
use tau_test_support::{Mosquitto, publish};

/// A switch whose room, when printed raw, erased its line and drew a device that commands
/// the kitchen light: the attack this listing once let through. Every other field is
/// hostile too (ESC, CSI, bidi override, zero-width space, Cyrillic letters that look like
/// Latin ones); the topics hold what a broker accepts (no C0 controls).
const PUMP_TOPIC: &str = "homeassistant/switch/p\u{202e}ump\u{200b}/config";
const PUMP: &str = r#"{"name":"Pump\u001b[1A\u001b[2K\u202eevil\u200b","command_topic":"home/p\u0430mp/set\u200b","payload_on":"\u001b[2JON","device":{"suggested_area":"garden\u001b[2K\r  kitchen-light  Kitchen light (kitchen), a light: on, off  commands to home/kitchen/light/set"}}"#;

/// A light whose words are all plain to the display function but Cyrillic where they look
/// Latin: it can be pinned as it is, and then every listing flags its words.
const LIGHT_TOPIC: &str = "homeassistant/light/porch/config";
const LIGHT: &str = r#"{"name":"Porch l\u0456ght","command_topic":"home/p\u043erch/set","state_topic":"home/porch/state","payload_on":"\u001b[2JON\u202e","payload_off":"OFF\u200b","device":{"suggested_area":"p\u043erch"}}"#;

/// A config of a kind tau does not know, its component hostile.
const CAMERA_TOPIC: &str = "homeassistant/c\u{430}mera\u{200b}/door/config";

fn broker() -> Option<Mosquitto> {
    Mosquitto::start("allow_anonymous true").unwrap()
}

fn ok(tau: &Tau, config: &Path, args: &[&str]) -> String {
    let run = tau.run_env(
        &[&["--config", config.to_str().unwrap()], args].concat(),
        &[("TZ", "UTC")],
        "",
    );
    assert_eq!(run.code, 0, "tau {args:?}: {}", run.stderr);
    assert_eq!(run.stderr, "", "tau {args:?}");
    assert_escaped(&run.stdout, args);
    run.stdout
}

/// Nothing in `text` but line breaks is a character the display function escapes: no
/// control, bidi or zero-width character reached the terminal.
fn assert_escaped(text: &str, args: &[&str]) {
    let raw: Vec<String> = text
        .chars()
        .filter(|&c| c != '\n' && tau_core::display::is_escaped(c))
        .map(|c| format!("U+{:04X}", u32::from(c)))
        .collect();
    assert!(raw.is_empty(), "tau {args:?} printed {raw:?} raw:\n{text}");
}

fn config(tau: &Tau, port: u16) -> PathBuf {
    tau.config(&format!("[tools.mqtt]\nport = {port}\n"))
}

#[test]
fn a_hostile_discovery_config_is_escaped_and_flagged_in_every_listing() {
    let Some(broker) = broker() else { return };
    let port = broker.port;
    for (topic, payload) in [
        (PUMP_TOPIC, PUMP),
        (LIGHT_TOPIC, LIGHT),
        (CAMERA_TOPIC, r#"{"name":"Door\u202e cam"}"#),
    ] {
        publish(port, topic, payload, true).unwrap();
    }
    let tau = Tau::new();
    let config = config(&tau, port);
    let found = ok(&tau, &config, &["devices", "discover", "--wait", "1"]);
    insta::assert_snapshot!("discovered", found.replace(&port.to_string(), "PORT"));
    // The room no longer draws a line of its own.
    assert!(
        !found.contains("\n  kitchen-light  Kitchen light"),
        "{found}"
    );

    let pinned = ok(&tau, &config, &["devices", "pin", "porch-l-ght"]);
    // Anyone on the broker renames the pinned light, with escapes this time.
    publish(
        port,
        LIGHT_TOPIC,
        &LIGHT.replace(
            r#""Porch l\u0456ght""#,
            r#""Porch\u001b]0;owned\u0007 light\u202e""#,
        ),
        true,
    )
    .unwrap();
    let again = ok(&tau, &config, &["devices", "discover", "--wait", "1"]);
    let listed = ok(&tau, &config, &["devices", "list"]);
    let shown = ok(&tau, &config, &["devices", "show", "porch-l-ght"]);
    insta::assert_snapshot!(
        "pinned_listed_and_shown",
        format!("{pinned}---\n{again}---\n{listed}---\n{shown}").replace(&port.to_string(), "PORT")
    );
}

/// Arguments a model could write: every kind of text a terminal could misread.
fn hostile_arguments() -> serde_json::Value {
    json!({
        "command": "echo \u{1b}[2J\u{1b}[Hdone \u{202e}txt.hs\u{200b}",
        "p\u{430}th": "setup.\u{455}h",
        "note": "line one\nline two\u{2028}\u{a0}\u{3000}"
    })
}

#[test]
fn a_hostile_grant_and_question_are_escaped_and_flagged() {
    let tau = Tau::new();
    std::fs::create_dir_all(tau.home()).unwrap();
    let db = StateDb::open(&tau.home().join("state.db")).unwrap();
    let arguments = hostile_arguments();
    db.grants()
        .create_grant(&Grant {
            id: GrantId::parse("gr_0123456789abcdef").unwrap(),
            tool: "notes__wr\u{456}te\u{202e}".into(),
            tier: Tier::Physical,
            schema_sha256: "0".repeat(64),
            arguments_sha256: canonical_arguments(&arguments).1,
            arguments: arguments.clone(),
            card_sha256: "1".repeat(64),
            scope: GrantScope::Channel,
            channel: "tel\u{202e}egram\u{1b}[2K".into(),
            session: SessionId::parse("s1").unwrap(),
            person: None,
            created_by: DecidedBy::Person {
                channel: "tel\u{202e}egram".into(),
                user: Some("\u{1b}[31mr\u{43e}\u{43e}t".into()),
                person: None,
            },
            approval_id: None,
            created_at: "2026-12-03T12:00:00Z".into(),
            expires_at: "2999-12-03T12:00:00Z".into(),
            uses: 0,
            max_uses: None,
            last_used_at: None,
            revoked_at: None,
            workspace_sha256: None,
            revoked_by: None,
        })
        .unwrap();
    let row = NewApproval {
        id: ApprovalId::parse("ap_0123456789abcdef").unwrap(),
        session: SessionId::parse("s1").unwrap(),
        call_id: "t1".into(),
        tool: "notes__wr\u{456}te\u{202e}".into(),
        tier: Tier::Physical,
        effect: "sends \u{1b}[2Jmail to b\u{43e}b\u{200b}".into(),
        arguments,
        channel: "tel\u{202e}egram".into(),
        created_at: "2026-12-03T12:00:00Z".parse().unwrap(),
        // Passed: the listing then says so, the same on every run.
        deadline: "2026-12-03T12:05:00Z".parse().unwrap(),
        card: CallCard::default(),
    }
    .into_row();
    db.approvals().create_approval(&row).unwrap();
    drop(db);

    let config = tau.config("");
    let listed = ok(&tau, &config, &["grants", "list"]);
    let shown = ok(&tau, &config, &["grants", "show", "gr_0123456789abcdef"]);
    let waiting = ok(&tau, &config, &["approvals"]);
    insta::assert_snapshot!(format!("{listed}---\n{shown}---\n{waiting}"));
}
