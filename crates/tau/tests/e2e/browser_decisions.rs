//! The history of decisions on TauBar (headless Chromium, the real `tau serve`): a call
//! approved and one rejected on their cards are listed in the side panel, newest first,
//! with who decided where, when, and what ran; the outcome filter keeps what it names; the
//! model's arguments are shown as on a card (each on its row with its length), as text,
//! escaped, never as markup.

use crate::common;
use crate::common::browser as browser_support;

use browser_support::{browser, click, connect, open_page, start_driver, until};
use common::{Tau, answer, tool_call};
use fantoccini::Locator;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// Each line of the panel as a person reads it, once it has `count` lines.
const LINES: &str = "const items = [...document.querySelectorAll('#decision-list li')]; \
    return !document.getElementById('decisions').hidden && items.length === arguments[0] && \
    items.map((li) => [...li.children].map((c) => c.textContent))";

async fn lines(client: &fantoccini::Client, what: &str, count: usize) -> Value {
    let script = LINES.replace("arguments[0]", &count.to_string());
    until(client, what, &script).await
}

#[tokio::test]
async fn the_panel_lists_approved_and_rejected_calls_and_filters_by_outcome() {
    let Some((chromium, driver_path)) = browser() else {
        return;
    };
    let tau = Tau::new();
    let model = tau.replay(&json!([
        tool_call("t1", "run_command", &json!({"command": "echo ok"})),
        answer("first"),
        tool_call(
            "t2",
            "run_command",
            &json!({"command": "rm <b>x</b> \u{202e}gpj.exe"})
        ),
        answer("second"),
    ]));
    let serve = tau.serve(&model, &tau.serve_config(""));
    let session = serve.new_session();
    serve.ask(&session, "go");

    let driver = start_driver(&driver_path);
    let client = connect(&driver, &chromium, 1100, 900).await;
    open_page(&client, &serve.host(), &serve.token).await;
    client
        .execute(&format!("select({})", json!(session)), vec![])
        .await
        .unwrap();
    assert_eq!(
        client
            .execute("return document.getElementById('decisions').hidden", vec![])
            .await
            .unwrap(),
        json!(true),
        "nothing decided yet"
    );
    until(
        &client,
        "the first card",
        "return document.querySelector('#transcript .card button.approve') !== null",
    )
    .await;
    click(&client, Locator::Css("#transcript .card button.approve")).await;
    serve.until_answered(&session, "first");
    let sent = serve.post(
        &format!("/api/sessions/{session}/messages"),
        r#"{"text": "again"}"#,
    );
    assert_eq!(sent.status, 202, "{sent:?}");
    until(
        &client,
        "the second card",
        "const c = [...document.querySelectorAll('#transcript .card')].pop(); \
         return c && !c.classList.contains('decided') && c.querySelector('button.reject') !== null",
    )
    .await;
    click(
        &client,
        Locator::Css("#transcript .card:not(.decided) button.reject"),
    )
    .await;
    serve.until_answered(&session, "second");

    let shown = lines(&client, "both decisions in the panel", 2).await;
    let mut shown: Vec<Vec<String>> = serde_json::from_value(shown).unwrap();
    // The time is the browser's local time: checked apart, then left out.
    for line in &mut shown {
        let (who, at) = line[2].split_once(" · ").unwrap();
        assert!(at.chars().any(|c| c.is_ascii_digit()), "{at}");
        line[2] = who.to_owned();
    }
    assert_eq!(
        shown,
        vec![
            vec![
                "run_command Rejected".to_owned(),
                r#"command20 chars"rm <b>x</b> \u{202e}gpj.exe""#.to_owned(),
                "by you on TauBar".to_owned(),
                "did not run".to_owned(),
            ],
            vec![
                "run_command Approved".to_owned(),
                r#"command7 chars"echo ok""#.to_owned(),
                "by you on TauBar".to_owned(),
                "ran: ok".to_owned(),
            ],
        ]
    );
    let markup = client
        .execute(
            "return document.querySelectorAll('#decision-list b').length",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(markup, json!(0), "the model's markup is text");
    let tools = client
        .execute(
            "return [...document.getElementById('decision-tool').options].map((o) => o.value)",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(tools, json!(["", "run_command"]));

    // The outcome filter asks the API again.
    client
        .execute(
            "const s = document.getElementById('decision-outcome'); s.focus(); \
             s.value = 'approved'; s.dispatchEvent(new Event('change'));",
            vec![],
        )
        .await
        .unwrap();
    let approved = lines(&client, "only the approved call", 1).await;
    assert_eq!(approved[0][1], json!(r#"command7 chars"echo ok""#));
    client
        .execute(
            "const s = document.getElementById('decision-outcome'); \
             s.value = 'timeout'; s.dispatchEvent(new Event('change'));",
            vec![],
        )
        .await
        .unwrap();
    until(
        &client,
        "no expired call, said so",
        "return document.querySelectorAll('#decision-list li').length === 0 && \
         !document.getElementById('decision-none').hidden && \
         !document.getElementById('decisions').hidden",
    )
    .await;
}
