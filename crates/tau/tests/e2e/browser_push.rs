//! TauBar installable, in headless Chromium against the real `tau serve`: the manifest
//! parses with no error (DevTools' own reading), the service worker registers and runs at
//! the root, the Push switch starts off, and a push's locator (`#q=<id>`) opens the
//! question's conversation at its card.

use crate::common;
use crate::common::browser as browser_support;

use browser_support::{browser, cdp, connect, open_page, start_driver, until};
use common::{Tau, answer, tool_call};
use pretty_assertions::assert_eq;
use serde_json::json;

#[tokio::test]
async fn the_manifest_and_service_worker_register_and_a_locator_opens_its_question() {
    let Some((chromium, driver_path)) = browser() else {
        return;
    };
    let tau = Tau::new();
    let model = tau.replay(&json!([
        tool_call(
            "t1",
            "run_command",
            &json!({"command": "echo made >> proof.txt"})
        ),
        answer("made it"),
    ]));
    let serve = tau.serve(&model, &tau.serve_config(""));
    let here = serve.new_session();
    let there = serve.new_session();

    let driver = start_driver(&driver_path);
    let client = connect(&driver, &chromium, 1100, 760).await;
    open_page(&client, &serve.host(), &serve.token).await;

    let manifest = cdp(&driver, &client, "Page.getAppManifest", json!({})).await;
    assert_eq!(
        (
            manifest["url"]
                .as_str()
                .unwrap()
                .ends_with("/manifest.webmanifest"),
            manifest["errors"].clone()
        ),
        (true, json!([])),
        "{manifest}"
    );

    client
        .execute(
            "navigator.serviceWorker.ready.then((r) => { window.worker = r.active && [r.scope, r.active.scriptURL]; }); return true",
            vec![],
        )
        .await
        .unwrap();
    let worker = until(&client, "the service worker", "return window.worker").await;
    let origin = format!("http://{}", serve.host());
    assert_eq!(
        worker,
        json!([format!("{origin}/"), format!("{origin}/sw.js")])
    );
    let switch = until(
        &client,
        "the Push switch",
        "const b = document.getElementById('push'); return !b.disabled && [b.textContent, b.getAttribute('aria-pressed')]",
    )
    .await;
    assert_eq!(switch, json!(["Push: off", "false"]));

    // The page shows one conversation; a push points at a question in the other.
    client
        .execute(&format!("select({})", json!(here)), vec![])
        .await
        .unwrap();
    let question = serve.ask(&there, "make a file please");
    let id = question["id"].as_str().unwrap();
    client
        .execute(
            &format!("location.hash = {}", json!(format!("q={id}"))),
            vec![],
        )
        .await
        .unwrap();
    until(
        &client,
        "the question's card in its own conversation",
        &format!(
            "const e = state.cards.get({}); return state.current === {} && !!e && e.node.isConnected",
            json!(id),
            json!(there)
        ),
    )
    .await;
}
