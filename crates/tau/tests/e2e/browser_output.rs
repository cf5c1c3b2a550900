//! What a call gave back, in TauBar (headless Chromium, the real `tau serve`): a
//! command's stdout and stderr as text blocks, its first lines and "N more lines" that
//! opens the rest, escaped once; the same after a reload, never the JSON the model read.

use crate::common;
use crate::common::browser as browser_support;

use browser_support::{browser, click, connect, open_page, start_driver, until};
use common::{Tau, answer, tool_call};
use fantoccini::{Client, Locator};
use serde_json::{Value, json};

/// The call's output as the page shows it: its fields, each block's name and text, and
/// the "more lines" button's words.
const OUTPUT: &str = "const o = document.querySelector('.call .result.output'); \
    return o && [...o.children].map((n) => (n.matches('button') ? '[' + n.textContent + ']' : n.textContent)).join('\\n---\\n')";

async fn output(client: &Client, what: &str) -> Value {
    until(client, what, OUTPUT).await
}

#[tokio::test]
async fn a_commands_output_is_text_blocks_live_and_after_a_reload() {
    let Some((chromium, driver_path)) = browser() else {
        return;
    };
    let tau = Tau::new();
    let model = tau.replay(&json!([
        tool_call(
            "t1",
            "run_command",
            &json!({"command": "seq 1 10; printf 'a\\tb \\342\\200\\256gnp.exe <b>x</b>\\n' >&2"})
        ),
        answer("Counted."),
    ]));
    let serve = tau.serve(&model, &tau.serve_config(""));
    let session = serve.new_session();
    let driver = start_driver(&driver_path);
    let client = connect(&driver, &chromium, 1100, 760).await;
    open_page(&client, &serve.host(), &serve.token).await;
    client
        .execute(&format!("select({})", json!(session)), vec![])
        .await
        .unwrap();
    serve.ask(&session, "count");
    until(
        &client,
        "the card",
        "return !!document.querySelector('#transcript .card button.approve')",
    )
    .await;
    click(&client, Locator::Css("#transcript .card button.approve")).await;
    serve.until_answered(&session, "Counted.");
    let live = output(&client, "the output, live").await;
    let live = live.as_str().unwrap().to_owned();
    assert!(!live.contains("\"stdout\""), "{live}");
    assert!(!live.contains("\\\\u"), "escaped once: {live}");
    insta::assert_snapshot!("command_output", live);

    click(&client, Locator::Css(".call .output .more-lines")).await;
    let opened = until(
        &client,
        "all ten lines",
        "const b = document.querySelector('.call .output .block'); return !document.querySelector('.call .output .more-lines') && b.textContent.split('\\n').length",
    )
    .await;
    assert_eq!(opened, json!(10));

    // After a reload: the same blocks, from the stored result.
    client.refresh().await.unwrap();
    until(
        &client,
        "the app again",
        "return !document.getElementById('app').hidden",
    )
    .await;
    client
        .execute(&format!("select({})", json!(session)), vec![])
        .await
        .unwrap();
    let reloaded = output(&client, "the output, reloaded").await;
    assert_eq!(reloaded.as_str().unwrap(), live);
    client.close().await.unwrap();
}
