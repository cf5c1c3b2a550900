//! On TauBar a yes counts only for the whole card (headless Chromium, the real `tau
//! serve`): a 4,103-character command shows its start folded, and Approve, "Approve, allow
//! again" and "Approve, allow in all chats" stay disabled, saying why, until "Show all"
//! opened it and its end was on screen; Reject works all along. A yes the server finds
//! given to a card that has changed since draws the card again, to be read again. Then the
//! call runs, and after a reload its card is still in the transcript with its outcome. The Decisions
//! panel flags a lookalike word and folds a long argument, as a card does.

use crate::common;
use crate::common::browser as browser_support;

use browser_support::{browser, click, connect, open_page, start_driver, until};
use common::{Tau, answer, tool_call};
use fantoccini::{Client, Locator};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// What the command does, at its very end, where a folded card does not show it.
const TAIL: &str = "; echo approved-unseen-tail >> ran.txt";

/// A command of exactly 4,103 characters whose only effect is [`TAIL`].
fn long_command() -> String {
    let mut command = "true".to_owned();
    let mut step = 0;
    while command.chars().count() + TAIL.len() + 16 < 4_103 {
        step += 1;
        command.push_str(&format!(" && : step-{step:04}"));
    }
    while command.chars().count() + TAIL.len() < 4_103 {
        command.push('x');
    }
    command.push_str(TAIL);
    assert_eq!(command.chars().count(), 4_103);
    command
}

async fn read(client: &Client, script: &str) -> Value {
    client.execute(script, vec![]).await.unwrap()
}

/// The card's buttons, each as [class, disabled], and its reason line when shown.
const BUTTONS: &str = "const c = document.querySelector('#transcript .card:not(.decided)'); \
    if (!c) return null; \
    const u = c.querySelector('.unread'); \
    return [[...c.querySelectorAll('.decide button, .grant button')].map((b) => [b.className, b.disabled]), \
            u && !u.hidden ? u.textContent : null]";

/// Whether the end line of the opened argument is on screen now.
const END_ON_SCREEN: &str = "const e = document.querySelector('#transcript .card .arg-end'); \
    if (!e) return 'no end line'; const r = e.getBoundingClientRect(); \
    const t = document.getElementById('transcript').getBoundingClientRect(); \
    return r.top < t.bottom && r.bottom > t.top";

#[tokio::test]
async fn approve_waits_until_the_folded_command_was_read_to_its_end() {
    let Some((chromium, driver_path)) = browser() else {
        return;
    };
    let tau = Tau::new();
    let model = tau.replay(&json!([
        tool_call("t1", "run_command", &json!({"command": long_command()})),
        answer("Ran it."),
        tool_call(
            "t2",
            "run_command",
            &json!({"command": "echo no >> ran.txt"})
        ),
        answer("Did not."),
    ]));
    let serve = tau.serve(&model, &tau.serve_config(""));
    let session = serve.new_session();
    serve.ask(&session, "set up the backup");
    let driver = start_driver(&driver_path);
    let client = connect(&driver, &chromium, 1100, 600).await;
    open_page(&client, &serve.host(), &serve.token).await;
    read(&client, &format!("select({})", json!(session))).await;

    // Folded: nothing approves, and the card says why; Reject works.
    let folded = until(&client, "the folded card", BUTTONS).await;
    assert_eq!(
        folded,
        json!([
            [
                ["approve", true],
                ["reject", false],
                ["always", true],
                ["always everywhere", true]
            ],
            "Approve waits until you have read all of command: Show all, then scroll to its end."
        ])
    );
    let more = read(
        &client,
        "return document.querySelector('#transcript .card .arg-more').innerText",
    )
    .await;
    assert_eq!(more, json!("2,105 more characters Show all"));
    assert!(
        !read(
            &client,
            "return document.querySelector('#transcript .card .args').innerText"
        )
        .await
        .as_str()
        .unwrap()
        .contains("approved-unseen-tail")
    );
    // A press on a disabled Approve (or a script's click on it) answers nothing.
    read(
        &client,
        "for (const b of document.querySelectorAll('#transcript .card button.approve, #transcript .card button.always')) b.click()",
    )
    .await;
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let waiting = serve.get("/api/approvals?state=pending").json();
    assert_eq!(waiting.as_array().unwrap().len(), 1, "{waiting}");

    // Opened, its start on screen and its end below: still waiting, for the end.
    click(&client, Locator::Css("#transcript .card .show-all")).await;
    read(
        &client,
        "document.querySelector('#transcript .card .arg-value').scrollIntoView({block: 'start'})",
    )
    .await;
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(read(&client, END_ON_SCREEN).await, json!(false));
    let opened = read(&client, BUTTONS).await;
    assert_eq!(
        opened[1],
        json!("Approve waits until you have scrolled to the end of command.")
    );
    assert_eq!(opened[0][0], json!(["approve", true]));
    let value = read(
        &client,
        "return document.querySelector('#transcript .card .arg-value').textContent",
    )
    .await;
    assert!(
        value
            .as_str()
            .unwrap()
            .ends_with("approved-unseen-tail >> ran.txt\"")
    );

    // Scrolled to its end: every approving button works.
    read(
        &client,
        "document.querySelector('#transcript .card .arg-end').scrollIntoView({block: 'end'})",
    )
    .await;
    let read_through = until(
        &client,
        "Approve enabled once the end was on screen",
        &format!("const s = (() => {{ {BUTTONS} }})(); return s && !s[0][0][1] && s"),
    )
    .await;
    assert_eq!(
        read_through,
        json!([
            [
                ["approve", false],
                ["reject", false],
                ["always", false],
                ["always everywhere", false]
            ],
            null
        ])
    );
    let end = read(
        &client,
        "return document.querySelector('#transcript .card .arg-end').textContent",
    )
    .await;
    insta::assert_snapshot!(
        "whole_card_reasons",
        format!(
            "{}\n{}\n{}",
            folded[1].as_str().unwrap(),
            opened[1].as_str().unwrap(),
            end.as_str().unwrap()
        )
    );
    // The server finds the card changed since the page drew it (its hash, as sent, is not
    // the card's now): nothing is decided, and the card is drawn again, folded, to be read
    // again.
    read(
        &client,
        "const real = window.fetch; window.fetch = (url, init) => { window.fetch = real; \
           const body = JSON.parse(init.body); body.card_sha256 = '0'.repeat(64); \
           return real(url, { ...init, body: JSON.stringify(body) }); }",
    )
    .await;
    click(&client, Locator::Css("#transcript .card button.approve")).await;
    let redrawn = until(
        &client,
        "the card drawn again",
        "const c = document.querySelector('#transcript .card:not(.decided)'); \
         const o = c && c.querySelector('.outcome').textContent; return o && [o, !!c.querySelector('.arg-more')]",
    )
    .await;
    assert_eq!(
        redrawn,
        json!(["This card changed while it was open: read it again.", true])
    );
    insta::assert_snapshot!("card_drawn_again", redrawn[0].as_str().unwrap());
    assert_eq!(read(&client, BUTTONS).await, folded);
    let waiting = serve.get("/api/approvals?state=pending").json();
    assert_eq!(waiting.as_array().unwrap().len(), 1, "{waiting}");
    assert!(!tau.workspace().join("ran.txt").exists());
    click(&client, Locator::Css("#transcript .card .show-all")).await;
    read(
        &client,
        "document.querySelector('#transcript .card .arg-end').scrollIntoView({block: 'end'})",
    )
    .await;
    until(
        &client,
        "Approve enabled again",
        "return !document.querySelector('#transcript .card:not(.decided) button.approve').disabled",
    )
    .await;
    click(&client, Locator::Css("#transcript .card button.approve")).await;
    serve.until_answered(&session, "Ran it.");
    assert_eq!(
        std::fs::read_to_string(tau.workspace().join("ran.txt")).unwrap(),
        "approved-unseen-tail\n",
        "the call ran, once"
    );

    // A second question, rejected on its card.
    let second = serve.ask(&session, "and the other");
    let second = second["id"].as_str().unwrap().to_owned();
    until(
        &client,
        "the second card",
        &format!(
            "return document.querySelector('.card[data-approval=\"{second}\"] button.reject')"
        ),
    )
    .await;
    click(
        &client,
        Locator::Css(&format!(".card[data-approval=\"{second}\"] button.reject")),
    )
    .await;
    serve.until_answered(&session, "Did not.");

    // After a reload the decided cards are in the transcript, below their calls, with
    // their outcomes as they were shown.
    let cards = "const cards = [...document.querySelectorAll('#transcript .card')]; \
        return cards.length === 2 && cards.every((c) => c.querySelector('.outcome').textContent) && \
        cards.map((c) => [c.classList.contains('decided'), c.previousElementSibling.classList.contains('call'), \
          c.querySelectorAll('.decide button, .grant button').length, c.querySelector('.outcome').textContent])";
    let live = until(&client, "both cards decided", cards).await;
    client.refresh().await.unwrap();
    until(
        &client,
        "the app",
        "return !document.getElementById('app').hidden",
    )
    .await;
    let reloaded = until(&client, "the cards after the reload", cards).await;
    assert_eq!(reloaded, live);
    assert_eq!(
        reloaded,
        json!([
            [true, true, 0, "Approved by you on web"],
            [true, true, 0, "Rejected by you on web"]
        ])
    );
    let text = read(
        &client,
        "return [...document.querySelectorAll('#transcript .card')].map((c) => [...c.children].filter((n) => !n.matches('.args') && !n.hidden).map((n) => n.innerText).join('\\n')).join('\\n---\\n')",
    )
    .await;
    insta::assert_snapshot!("decided_cards_after_a_reload", text.as_str().unwrap());
    client.close().await.unwrap();
}

#[tokio::test]
async fn the_decisions_panel_flags_a_lookalike_and_folds_a_long_argument() {
    let Some((chromium, driver_path)) = browser() else {
        return;
    };
    let tau = Tau::new();
    let model = tau.replay(&json!([
        tool_call(
            "t1",
            "run_command",
            &json!({"command": "sh setup.\u{455}h"})
        ),
        answer("first"),
        tool_call("t2", "run_command", &json!({"command": long_command()})),
        answer("second"),
    ]));
    let serve = tau.serve(&model, &tau.serve_config(""));
    let session = serve.new_session();
    for (prompt, done) in [("one", "first"), ("two", "second")] {
        let row = serve.ask(&session, prompt);
        let id = row["id"].as_str().unwrap();
        let rejected = serve.answer(id, &json!({"decision": "reject"}));
        assert_eq!(rejected.status, 200, "{rejected:?}");
        serve.until_answered(&session, done);
    }
    let driver = start_driver(&driver_path);
    let client = connect(&driver, &chromium, 1100, 900).await;
    open_page(&client, &serve.host(), &serve.token).await;
    let items = until(
        &client,
        "both decisions",
        "const items = [...document.querySelectorAll('#decision-list li')]; \
         return items.length === 2 && items.map((li) => [...li.children].map((c) => c.innerText.replace(/\\s+/g, ' ')))",
    )
    .await;
    let items: Vec<Vec<String>> = serde_json::from_value(items).unwrap();
    // The newest first: the long command, folded as on a card.
    assert_eq!(items[0][0], "run_command Rejected");
    let folded = &items[0][1];
    assert!(
        folded.starts_with("command 4,103 chars \"true && : step-0001"),
        "{folded}"
    );
    assert!(
        folded.ends_with("… 2,105 more characters Show all"),
        "{folded}"
    );
    assert!(!folded.contains("approved-unseen-tail"), "{folded}");
    // The lookalike, flagged as its card flags it, above its arguments.
    assert_eq!(
        items[1][..3],
        [
            "run_command Rejected".to_owned(),
            "⚠ lookalike command: \"setup.ѕh\" mixes Latin and Cyrillic: U+0455 Cyrillic, looks like \"s\"".to_owned(),
            "command 11 chars \"sh setup.ѕh\"".to_owned(),
        ]
    );
    insta::assert_snapshot!("decisions_panel_lookalike", items[1][..3].join("\n"));
    // Its card says the same.
    let card_note = serve.get("/api/approvals").json()[0]["card"]["notes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["label"] == "lookalike")
        .cloned()
        .unwrap();
    assert_eq!(
        items[1][1],
        format!("⚠ lookalike {}", card_note["text"].as_str().unwrap())
    );

    // "Show all" opens it whole, and a refresh of the list keeps it open.
    click(&client, Locator::Css("#decision-list li .show-all")).await;
    let whole = until(
        &client,
        "the argument whole",
        "const v = document.querySelector('#decision-list li .arg-value'); \
         return v && !document.querySelector('#decision-list li .arg-more') && v.textContent",
    )
    .await;
    assert!(
        whole
            .as_str()
            .unwrap()
            .ends_with("approved-unseen-tail >> ran.txt\"")
    );
    read(&client, "loadDecisions()").await;
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(
        read(
            &client,
            "return document.querySelectorAll('#decision-list li .arg-more').length"
        )
        .await,
        json!(0)
    );
    client.close().await.unwrap();
}
