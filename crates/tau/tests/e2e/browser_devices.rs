//! A garage door's card in a real browser: TauBar shows the registry's headline, the
//! model's words only quoted, and a field for the second step; Approve without it, or with
//! a bare `y`, leaves the question open, and only the device's number opens the garage.
//! Headless Chromium over WebDriver, the real `tau serve`, a real Mosquitto broker and a
//! device stand-in on it.

use crate::common;
use crate::common::browser as web;

use std::time::Duration;

use common::{Tau, answer, tool_call};
use fantoccini::Locator;
use serde_json::json;
use tau_test_support::{DeviceStandIn, Mosquitto, StandInSpec};
use web::{browser, click, connect, open_page, start_driver, until};

const GARAGE: &str = r#"
[[devices]]
name = "garage-door"
label = "Garage door"
room = "garage"
kind = "garage"
command_topic = "home/garage/door/set"
state_topic = "home/garage/door/state"
actions = { open = "OPEN", close = "CLOSE" }
"#;

#[tokio::test]
async fn a_garage_card_asks_for_its_second_step_and_a_bare_yes_opens_nothing() {
    let Some((chromium, driver_path)) = browser() else {
        return;
    };
    let Some(broker) = Mosquitto::start("allow_anonymous true").unwrap() else {
        return;
    };
    let garage = DeviceStandIn::start(
        broker.port,
        StandInSpec {
            client_id: "garage-door".into(),
            command_topic: "home/garage/door/set".into(),
            state_topic: "home/garage/door/state".into(),
            initial_state: Some("CLOSED".into()),
            states: Vec::new(),
        },
    )
    .unwrap();
    let tau = Tau::new();
    let model = tau.replay(&json!([
        tool_call(
            "t1",
            "device_set",
            &json!({"device": "garage-door", "action": "open",
                    "reason": "switch OFF · Kitchen light (kitchen)"})
        ),
        answer("The garage is open."),
    ]));
    let config = tau.serve_config(&format!("[tools.mqtt]\nport = {}\n{GARAGE}", broker.port));
    let serve = tau.serve(&model, &config);
    let driver = start_driver(&driver_path);
    let client = connect(&driver, &chromium, 1100, 900).await;
    open_page(&client, &serve.host(), &serve.token).await;
    click(&client, Locator::Id("new-session")).await;
    until(
        &client,
        "a session",
        "return location.hash.startsWith('#session=')",
    )
    .await;
    let prompt = client.find(Locator::Id("prompt")).await.unwrap();
    prompt.send_keys("open the garage").await.unwrap();
    click(&client, Locator::Id("send")).await;

    // The card, read from the DOM: tau's headline, the model's words quoted in a note,
    // the second step with its field.
    let seen = until(
        &client,
        "the garage card",
        "const c = document.querySelector('.card input.confirm'); if (!c) return null; \
         const card = c.closest('.card'); \
         return {headline: [...card.querySelectorAll('.said .headline')].map(e => e.textContent), \
                 notes: [...card.querySelectorAll('.said .note')].map(e => e.textContent), \
                 step: card.querySelector('.step').textContent, \
                 placeholder: c.placeholder}",
    )
    .await;
    assert_eq!(
        seen["headline"],
        json!(["OPEN · Garage door (garage) — a lock-class device"])
    );
    let notes: Vec<&str> = seen["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert_eq!(
        notes,
        [
            "device garage-door (garage), from the config",
            "topic home/garage/door/set",
            "payload OPEN",
            "the model says \"switch OFF · Kitchen light (kitchen)\"",
        ]
    );
    let step = seen["step"].as_str().unwrap();
    let code = step
        .strip_prefix("Second step: type garage-door or ")
        .and_then(|rest| rest.get(..2))
        .unwrap_or_else(|| panic!("{step}"))
        .to_owned();
    assert_eq!(
        step,
        format!(
            "Second step: type garage-door or {code} to approve. Approve alone does not run it."
        )
    );
    let png = client.screenshot().await.unwrap();
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "a screenshot of the card"
    );
    if std::env::var_os("TAU_UPDATE_SCREENSHOT").is_some() {
        let path = common::peers::repo_root().join("docs/taubar-device.png");
        std::fs::write(path, png).unwrap();
    }

    // Approve with nothing typed, then with a bare y: the question stays open.
    let outcome = "const o = document.querySelector('.card .outcome'); return o && o.textContent";
    for typed in ["", "y"] {
        let field = client
            .find(Locator::Css(".card input.confirm"))
            .await
            .unwrap();
        field.clear().await.unwrap();
        field.send_keys(typed).await.unwrap();
        client
            .execute(
                "document.querySelector('.card .outcome').textContent = ''",
                vec![],
            )
            .await
            .unwrap();
        click(&client, Locator::Css(".card button.approve")).await;
        let said = until(&client, "the refusal of the answer", outcome).await;
        assert!(
            said.as_str()
                .unwrap()
                .starts_with("this question takes a second step"),
            "{typed:?}: {said}"
        );
    }
    let pending = serve.get("/api/approvals?state=pending").json();
    assert_eq!(
        pending.as_array().unwrap().len(),
        1,
        "still open: {pending}"
    );
    assert_eq!(garage.commands(), Vec::<String>::new());

    // The number opens it.
    let field = client
        .find(Locator::Css(".card input.confirm"))
        .await
        .unwrap();
    field.send_keys(&code).await.unwrap();
    click(&client, Locator::Css(".card button.approve")).await;
    let said = until(
        &client,
        "the card's outcome",
        "const o = document.querySelector('.card.decided .outcome'); return o && o.textContent",
    )
    .await;
    assert!(said.as_str().unwrap().starts_with("Approved"), "{said}");
    assert_eq!(
        garage.wait_for_commands(1, Duration::from_secs(20)),
        ["OPEN"]
    );
    client.close().await.unwrap();
}
