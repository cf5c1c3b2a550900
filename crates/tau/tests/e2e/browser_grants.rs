//! "Approve, allow again" on TauBar (headless Chromium, the real `tau serve`): the card
//! says what a grant would cover before it can be pressed; pressing it approves the call
//! and makes the grant, which the side panel lists; the next identical call runs without
//! a card; the panel's Revoke ends it.

use crate::common;
use crate::common::browser as browser_support;

use browser_support::{browser, click, connect, open_page, start_driver, until};
use common::{Tau, answer, tool_call};
use fantoccini::Client;
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
    // One line says what allowing again lets through; the whole rule, each word the
    // grant is made with, is one step away, folded.
    let covers = until(
        &client,
        "the card's grant offer",
        "const c = document.querySelector('#transcript .card'); \
         return c && c.querySelector('button.always') && [c.querySelector('.grant-line').textContent, \
           [...c.querySelectorAll('.grant-rules p')].map((p) => p.textContent), c.querySelector('.grant-rules').open, \
           c.querySelector('.grant-rules summary').textContent]",
    )
    .await;
    assert_eq!(
        covers[0],
        json!(
            "Allow again lets exactly this call run without asking for 24 h, while the \
             workspace's files stay as they are."
        )
    );
    let rules = covers[1].as_array().unwrap();
    assert!(
        rules[0].as_str().unwrap().starts_with(
            "Approve, allow again: A grant covers exactly this call, in this conversation, for 24 h"
        ) && rules[0]
            .as_str()
            .unwrap()
            .contains("It also pins the workspace's files as they are now"),
        "{covers}"
    );
    assert!(
        rules[1].as_str().unwrap().starts_with(
            "Approve, allow in all chats: A grant covers exactly this call, in every conversation of yours on this channel"
        ),
        "{covers}"
    );
    assert_eq!(
        (&covers[2], &covers[3]),
        (&json!(false), &json!("what does allow again cover?"))
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

/// The card's receipt of its grant: until when the call runs without asking, in the
/// browser's time.
const RECEIPT: &str = "const r = document.querySelector('#transcript .card .receipt'); \
    return r && !r.hidden && r.querySelector('button.revoke') && r.innerText.replace(/\\s+/g, ' ')";

async fn receipt(client: &Client) -> String {
    until(client, "the card's receipt", RECEIPT)
        .await
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn the_card_s_receipt_says_until_when_and_its_revoke_ends_the_grant() {
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
    let driver = start_driver(&driver_path);
    let client = connect(&driver, &chromium, 390, 844).await;
    open_page(&client, &serve.host(), &serve.token).await;
    client
        .execute(&format!("select({})", json!(session)), vec![])
        .await
        .unwrap();
    until(
        &client,
        "the card",
        "return document.querySelector('#transcript .card button.always')",
    )
    .await;
    click(&client, Locator::Css("#transcript .card button.always")).await;
    serve.until_answered(&session, "first");

    // The receipt, with the grant's end as the browser tells time (24 h on: tomorrow).
    let grants = serve.get("/api/grants").json();
    let grant = grants[0]["id"].as_str().unwrap().to_owned();
    let ends = client
        .execute(
            &format!("return clock({})", grants[0]["expires_at"]),
            vec![],
        )
        .await
        .unwrap();
    let ends = ends.as_str().unwrap().to_owned();
    assert!(
        ends.starts_with("tomorrow ") && ends.len() == "tomorrow 14:30".len(),
        "{ends}"
    );
    let said = format!("Allowed again until {ends} · Revoke");
    assert_eq!(receipt(&client).await, said);
    // It is the grant's: after a reload too.
    client.refresh().await.unwrap();
    client
        .execute(&format!("select({})", json!(session)), vec![])
        .await
        .unwrap();
    assert_eq!(receipt(&client).await, said);

    // Its Revoke ends the grant before any later call: the same call is asked again.
    click(
        &client,
        Locator::Css("#transcript .card .receipt button.revoke"),
    )
    .await;
    let revoked = until(
        &client,
        "the receipt's revoke",
        "const r = document.querySelector('#transcript .card .receipt'); \
         return r && r.textContent.includes('revoked') && r.textContent",
    )
    .await;
    assert_eq!(
        revoked,
        json!("Allowed again: revoked. The next such call is asked.")
    );
    assert_eq!(serve.get("/api/grants").json(), json!([]));
    let line = tau
        .audit()
        .into_iter()
        .find(|l| l["type"] == "grant_revoked")
        .unwrap();
    assert_eq!(
        (&line["grant_id"], &line["revoked_by"]),
        (&json!(grant), &json!({"kind": "person", "channel": "web"}))
    );
    serve.ask(&session, "again");
    assert_eq!(
        serve
            .get("/api/approvals?state=pending")
            .json()
            .as_array()
            .unwrap()
            .len(),
        1,
        "asked again"
    );
}
