//! "Approve, allow again" on TauBar (headless Chromium, the real `tau serve`): the card
//! says what a grant would cover before it can be pressed; pressing it approves the call
//! and makes the grant, which the side panel lists; the next identical call runs without
//! a card; the panel's Revoke ends it.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

#[path = "common/browser.rs"]
mod browser_support;
mod common;

use browser_support::{browser, click, connect, open_page, start_driver, until};
use common::{Tau, answer, tool_call};
use fantoccini::Locator;
use serde_json::json;

#[tokio::test]
async fn allow_again_on_the_card_makes_a_grant_the_panel_lists_and_revokes() {
    let Some((chromium, driver_path)) = browser() else {
        return;
    };
    let tau = Tau::new();
    let call = json!({"command": "echo x >> out.txt"});
    let model = tau.replay(&json!([
        tool_call("t1", "run_command", &call),
        answer("first"),
        tool_call("t2", "run_command", &call),
        answer("second"),
    ]));
    let serve = tau.serve(&model, &tau.serve_config(""));
    let session = serve.new_session();
    serve.ask(&session, "append x");
    let out = || std::fs::read_to_string(tau.workspace().join("out.txt")).unwrap_or_default();

    let driver = start_driver(&driver_path);
    let client = connect(&driver, &chromium, 1100, 760).await;
    open_page(&client, &serve.host(), &serve.token).await;
    client
        .execute(&format!("select({})", json!(session)), vec![])
        .await
        .unwrap();
    let covers = until(
        &client,
        "the card's grant offer",
        "const c = document.querySelector('#transcript .card'); \
         return c && c.querySelector('button.always') && c.querySelector('.grant-covers').textContent",
    )
    .await;
    assert!(
        covers
            .as_str()
            .unwrap()
            .starts_with("A grant covers exactly this call, in this conversation, for 24 h"),
        "{covers}"
    );
    assert_eq!(
        client
            .execute("return document.getElementById('grants').hidden", vec![])
            .await
            .unwrap(),
        json!(true),
        "no grants yet"
    );

    click(&client, Locator::Css("#transcript .card button.always")).await;
    serve.until_answered(&session, "first");
    let listed = until(
        &client,
        "the grant in the panel",
        "const g = document.querySelector('#grant-list li'); \
         return g && !document.getElementById('grants').hidden && g.innerText.replace(/\\s+/g, ' ')",
    )
    .await;
    let listed = listed.as_str().unwrap();
    assert!(
        listed.starts_with(r#"run_command {"command":"echo x >> out.txt"} 0 uses"#),
        "{listed}"
    );
    let outcome = until(
        &client,
        "the card's outcome",
        "const o = document.querySelector('#transcript .card .outcome'); return o && o.textContent",
    )
    .await;
    assert_eq!(outcome, json!("Approved by you on web"));

    // The same call again runs without a card.
    let sent = serve.post(
        &format!("/api/sessions/{session}/messages"),
        r#"{"text": "again"}"#,
    );
    assert_eq!(sent.status, 202, "{sent:?}");
    serve.until_answered(&session, "second");
    assert_eq!(out(), "x\nx\n");
    assert_eq!(
        serve.get("/api/approvals").json().as_array().unwrap().len(),
        1
    );

    click(&client, Locator::Css("#grant-list button.revoke")).await;
    until(
        &client,
        "the panel empty",
        "return document.getElementById('grants').hidden",
    )
    .await;
    assert_eq!(serve.get("/api/grants").json(), json!([]));
    let revoked = tau
        .audit()
        .into_iter()
        .find(|l| l["type"] == "grant_revoked")
        .unwrap();
    assert_eq!(
        revoked["revoked_by"],
        json!({"kind": "person", "channel": "web"})
    );
}
