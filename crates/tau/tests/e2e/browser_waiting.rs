//! What waits for the person, in TauBar (headless Chromium, the real `tau serve`): a
//! question of another conversation is a line with a link, never a card with live buttons
//! over the chat that is open; a card sits in its own conversation's transcript below its
//! call; the tab's title counts what waits; a new question notifies (the test profile
//! allows notifications) and rings when the person asked for that.

use crate::common;
use crate::common::browser as browser_support;

use browser_support::{browser, click, connect, open_page, start_driver, until};
use common::{Tau, answer, tool_call};
use fantoccini::{Client, Locator};
use serde_json::json;

/// Records each notification's title and each tone the page plays, through the real APIs.
const RECORD: &str = "window.notified = []; window.tones = 0; \
    const Real = window.Notification; \
    window.Notification = class extends Real { constructor(title, options) { super(title, options); window.notified.push(title); } }; \
    const start = OscillatorNode.prototype.start; \
    OscillatorNode.prototype.start = function (...args) { window.tones += 1; return start.apply(this, args); }; \
    return true";

async fn read(client: &Client, script: &str) -> serde_json::Value {
    client.execute(script, vec![]).await.unwrap()
}

#[tokio::test]
async fn another_chats_question_is_a_link_and_its_card_sits_in_its_own_transcript() {
    let Some((chromium, driver_path)) = browser() else {
        return;
    };
    let tau = Tau::new();
    // Each session reads the script from its start; only the second one talks.
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
    read(&client, &format!("select({})", json!(here))).await;
    until(
        &client,
        "the open chat",
        &format!(
            "return location.hash.includes({}) && !!document.querySelector('#transcript .empty')",
            json!(here)
        ),
    )
    .await;
    assert_eq!(
        read(&client, "return document.title").await,
        json!("TauBar")
    );

    // The person asks for notifications and sound (the profile already allows them).
    assert_eq!(read(&client, RECORD).await, json!(true));
    click(&client, Locator::Id("notify")).await;
    click(&client, Locator::Id("sound")).await;
    let toggles = until(
        &client,
        "the toggles on",
        "const t = ['notify', 'sound'].map((id) => document.getElementById(id)); \
         return t.every((b) => b.getAttribute('aria-pressed') === 'true') && t.map((b) => b.textContent)",
    )
    .await;
    assert_eq!(toggles, json!(["Notify: on", "Sound: on"]));
    assert_eq!(
        read(&client, "return window.tones").await,
        json!(1),
        "a preview"
    );

    // A question in the other conversation: a line with a link, no card, no button that
    // answers; the title counts it; one notification, one tone.
    let question = serve.ask(&there, "make a file please");
    let id = question["id"].as_str().unwrap();
    let line = until(
        &client,
        "the line of the other chat's question",
        "const l = document.querySelector('#elsewhere-list li'); return l && !document.getElementById('elsewhere').hidden && l.innerText.replace(/\\s+/g, ' ')",
    )
    .await;
    let line = line.as_str().unwrap().replace(&there, "<session>");
    insta::assert_snapshot!("waiting_elsewhere_line", line);
    assert_eq!(
        read(
            &client,
            "return document.querySelectorAll('.card, button.approve, button.reject').length"
        )
        .await,
        json!(0)
    );
    until(
        &client,
        "the title",
        "return document.title === '(1) TauBar'",
    )
    .await;
    let announced = until(
        &client,
        "the notification",
        "return window.notified.length > 0 && [window.notified, window.tones]",
    )
    .await;
    assert_eq!(announced, json!([["tau asks: run_command"], 2]));

    // The link opens that conversation: the card is in its transcript, right below its call.
    click(&client, Locator::Css("#elsewhere-list button.open")).await;
    let placed = until(
        &client,
        "the card in its transcript and the list of other chats' questions hidden",
        // The list hides once the page redrew it after the switch, a moment after the card.
        &format!(
            "const c = document.querySelector('#transcript .card[data-approval=\"{id}\"]'); \
             const hidden = document.getElementById('elsewhere').hidden; \
             return c && c.querySelector('button.approve') && hidden && [c.previousElementSibling.classList.contains('call'), hidden]"
        ),
    )
    .await;
    assert_eq!(placed, json!([true, true]));
    assert_eq!(
        read(&client, "return window.notified.length").await,
        json!(1),
        "the same question is announced once"
    );
    click(&client, Locator::Css("#transcript .card button.approve")).await;
    serve.until_answered(&there, "made it");
    until(&client, "the title", "return document.title === 'TauBar'").await;
    let outcome = until(
        &client,
        "the card's outcome, kept in the transcript",
        "const o = document.querySelector('#transcript .card .outcome'); return o && o.textContent",
    )
    .await;
    assert_eq!(outcome, json!("Approved by you on web"));

    // Back in the first chat: nothing of the other one shows.
    read(&client, &format!("select({})", json!(here))).await;
    until(
        &client,
        "the first chat again",
        &format!(
            "return location.hash.includes({}) && !!document.querySelector('#transcript .empty')",
            json!(here)
        ),
    )
    .await;
    assert_eq!(
        read(&client, "return [document.querySelectorAll('.card').length, document.getElementById('elsewhere').hidden]").await,
        json!([0, true])
    );
    assert_eq!(
        std::fs::read_to_string(tau.workspace().join("proof.txt")).unwrap(),
        "made\n"
    );
    client.close().await.unwrap();
}

#[tokio::test]
async fn the_channel_parameter_is_all_or_left_out() {
    let tau = Tau::new();
    let serve = tau.serve(
        &tau.replay(&json!([tool_call(
            "t1",
            "run_command",
            &json!({"command": "echo x >> x.txt"})
        )])),
        &tau.serve_config(""),
    );
    for bad in ["telegram", "", "ALL", "all&channel=all"] {
        let reply = serve.get(&format!("/api/approvals?channel={bad}"));
        assert_eq!(reply.status, 400, "{bad}: {reply:?}");
    }
    let session = serve.new_session();
    let question = serve.ask(&session, "go");
    let every = serve.get("/api/approvals?state=pending&channel=all").json();
    assert_eq!(
        every
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r["id"].clone(), r["channel"].clone()))
            .collect::<Vec<_>>(),
        vec![(question["id"].clone(), json!("web"))]
    );
}
