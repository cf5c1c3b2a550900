//! TauBar (headless Chromium, the real `tau serve`) with a card steered by outside text:
//! the model read an inbox with a stranger's text in it and sends the contract to the
//! stranger. The card shows its source notes as text; the person refuses; the decisions
//! panel then says it was asked because of outside text and where each value came from.
//! Needs the Python MCP SDK (`TAU_TEST_PYTHON`) and chromium.

use crate::common;
use crate::common::browser as browser_support;

use browser_support::{browser, click, connect, open_page, start_driver, until};
use common::office::{self, PROMPT, REFUSED_ANSWER};
use common::{Tau, peers};
use fantoccini::Locator;
use pretty_assertions::assert_eq;
use serde_json::json;

#[tokio::test]
async fn the_card_and_the_decisions_panel_name_the_read_the_address_came_from() {
    let Some((chromium, driver_path)) = browser() else {
        return;
    };
    let Some(python) = peers::python() else {
        return;
    };
    let tau = Tau::new();
    let config = tau.serve_config(&office::config(&tau, &python));
    let serve = tau.serve(&office::replay(&tau), &config);
    let session = serve.new_session();
    serve.ask(&session, PROMPT);

    let driver = start_driver(&driver_path);
    let client = connect(&driver, &chromium, 1100, 900).await;
    open_page(&client, &serve.host(), &serve.token).await;
    client
        .execute(&format!("select({})", json!(session)), vec![])
        .await
        .unwrap();
    let card = until(
        &client,
        "the card with its notes",
        "const c = document.querySelector('#transcript .card'); \
         const notes = c ? [...c.querySelectorAll('.said .note')].map((n) => n.textContent) : []; \
         return c && c.querySelector('button.reject') && notes.length > 0 && \
           { tier: c.querySelector('.tier') ? c.querySelector('.tier').textContent : null, notes }",
    )
    .await;
    insta::assert_json_snapshot!("card", card);
    click(&client, Locator::Css("#transcript .card button.reject")).await;
    serve.until_answered(&session, REFUSED_ANSWER);
    assert_eq!(office::ledger(&tau), vec!["read_inbox".to_owned()]);

    let panel = until(
        &client,
        "the refusal in the decisions panel",
        "const items = [...document.querySelectorAll('#decision-list li')]; \
         return !document.getElementById('decisions').hidden && items.length === 1 && \
           [...items[0].querySelectorAll('.said .headline, .said .note')].map((n) => n.textContent)",
    )
    .await;
    insta::assert_json_snapshot!("decision", panel);
    let markup = client
        .execute(
            "return document.querySelectorAll('#decision-list .said b, #transcript .said b').length",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(markup, json!(0));
}
