//! TauBar in a real browser: headless Chromium driven over WebDriver (chromedriver), the
//! real `tau serve` with a replay model. A person opens the link with the token, sends a
//! prompt, approves on the card and reads the answer; hostile model text stays text.
//! Needs Debian's `chromium` and `chromium-driver` (`scripts/test` installs them); without
//! them the test skips, or fails under `TAU_PEERS_REQUIRED=1`.

use crate::common;
use crate::common::browser as browser_support;

use browser_support::{browser, click, connect, open_page, start_driver, until};
use common::{Tau, answer, tool_call};
use fantoccini::{Client, Locator};
use serde_json::json;

/// What the model answers after the approved call: markup, a script, a bidi override
/// and a zero-width space, none of which may act or hide.
const HOSTILE: &str = "Done. <img src=x onerror=\"document.title='pwned'\"><script>document.title='pwned'</script> \u{202e}txt.exe\u{200b}";

#[tokio::test]
async fn a_person_chats_approves_on_the_card_and_hostile_text_stays_text() {
    let Some((chromium, driver_path)) = browser() else {
        return;
    };
    let tau = Tau::new();
    let model = tau.replay(&json!([
        tool_call(
            "t1",
            "run_command",
            &json!({"command": "echo made >> proof.txt # \u{202e}gnp.exe"})
        ),
        answer(HOSTILE),
    ]));
    let serve = tau.serve(&model, &tau.serve_config(""));
    let driver = start_driver(&driver_path);
    let client = connect(&driver, &chromium, 1100, 760).await;

    open_page(&client, &serve.host(), &serve.token).await;
    assert_eq!(
        client.current_url().await.unwrap().fragment(),
        None,
        "the token leaves the address bar"
    );
    click(&client, Locator::Id("new-session")).await;
    until(
        &client,
        "a session",
        "return location.hash.startsWith('#session=')",
    )
    .await;
    let prompt = client.find(Locator::Id("prompt")).await.unwrap();
    prompt.send_keys("make a file please").await.unwrap();
    click(&client, Locator::Id("send")).await;

    // The card: tool, tier, effect, arguments escaped by the display function.
    let card_text = until(
        &client,
        "the approval card",
        "const c = document.querySelector('.card button.approve'); return c && c.closest('.card').innerText",
    )
    .await;
    let card_text = card_text.as_str().unwrap();
    assert!(card_text.contains("run_command"), "{card_text}");
    assert!(
        card_text.contains("TIER 2") || card_text.contains("tier 2"),
        "{card_text}"
    );
    assert!(
        card_text.contains(r"\u{202e}gnp.exe"),
        "the override shows as an escape: {card_text}"
    );
    assert!(!card_text.contains('\u{202e}'), "{card_text}");
    assert!(
        tau.workspace().join("proof.txt").metadata().is_err(),
        "nothing ran yet"
    );
    if std::env::var_os("TAU_UPDATE_SCREENSHOT").is_some() {
        // The hub guide's picture: a question waiting on its card.
        let png = client.screenshot().await.unwrap();
        let path = common::peers::repo_root().join("docs/taubar.png");
        std::fs::write(path, png).unwrap();
    }

    click(&client, Locator::Css(".card button.approve")).await;
    let answered = until(
        &client,
        "the model's answer",
        "const m = [...document.querySelectorAll('.msg.tau')].map(e => e.textContent).find(t => t.startsWith('Done.')); return m || null",
    )
    .await;
    let answered = answered.as_str().unwrap();
    assert!(
        answered.contains("<img src=x onerror="),
        "markup shows as text: {answered}"
    );
    assert!(answered.contains("<script>"), "{answered}");
    assert!(answered.contains(r"\u{202e}txt.exe\u{200b}"), "{answered}");
    let outcome = until(
        &client,
        "the card's outcome",
        "const o = document.querySelector('.card .outcome'); return o && o.textContent",
    )
    .await;
    assert!(
        outcome.as_str().unwrap().starts_with("Approved"),
        "{outcome}"
    );
    let status = until(
        &client,
        "the call's status",
        "const c = document.querySelector('.call.success'); return c && c.innerText",
    )
    .await;
    assert!(
        status.as_str().unwrap().contains("by you on web"),
        "{status}"
    );
    let injected = client
        .execute(
            "return [document.title, document.querySelectorAll('#transcript img, #transcript script').length]",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(
        injected,
        json!(["TauBar", 0]),
        "nothing the model wrote ran"
    );
    assert_eq!(
        std::fs::read_to_string(tau.workspace().join("proof.txt")).unwrap(),
        "made\n"
    );
    client.close().await.unwrap();

    // On a phone: nothing wider than the screen, the composer in reach.
    let phone = connect(&driver, &chromium, 390, 844).await;
    phone
        .goto(&format!("http://{}/#token={}", serve.host(), serve.token))
        .await
        .unwrap();
    until(
        &phone,
        "the app",
        "return !document.getElementById('app').hidden",
    )
    .await;
    until(
        &phone,
        "the transcript",
        "return document.querySelectorAll('.msg.tau').length",
    )
    .await;
    let fits = phone
        .execute(
            "const r = document.getElementById('composer').getBoundingClientRect(); \
             return [document.documentElement.scrollWidth <= window.innerWidth, r.bottom <= window.innerHeight + 1, r.width > 300]",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(fits, json!([true, true, true]));
    phone.close().await.unwrap();
}

#[tokio::test]
async fn without_the_token_the_page_asks_for_it() {
    let Some((chromium, driver_path)) = browser() else {
        return;
    };
    let tau = Tau::new();
    let serve = tau.serve(&tau.replay(&json!([answer("hi")])), &tau.serve_config(""));
    let driver = start_driver(&driver_path);
    let client = connect(&driver, &chromium, 800, 600).await;
    client
        .goto(&format!("http://{}/", serve.host()))
        .await
        .unwrap();
    until(
        &client,
        "the token form",
        "return !document.getElementById('login').hidden",
    )
    .await;
    let field = client.find(Locator::Id("login-token")).await.unwrap();
    field.send_keys("not-the-token").await.unwrap();
    click(&client, Locator::Css("#login-form button")).await;
    until(
        &client,
        "the refusal",
        "return !document.getElementById('login-error').hidden",
    )
    .await;
    field.clear().await.unwrap();
    field.send_keys(&serve.token).await.unwrap();
    click(&client, Locator::Css("#login-form button")).await;
    until(
        &client,
        "the app",
        "return !document.getElementById('app').hidden",
    )
    .await;
    // The cookie is out of the page's reach.
    let cookie = client
        .execute("return document.cookie", vec![])
        .await
        .unwrap();
    assert_eq!(cookie, json!(""));
    client.close().await.unwrap();
}

/// The outcome a card shows once its question was decided, read from the page.
async fn card_outcome(client: &Client, approval_id: &str) -> String {
    let script = format!(
        "const c = document.querySelector('.card[data-approval=\"{approval_id}\"] .outcome'); return c && c.textContent"
    );
    until(client, "the card's outcome", &script)
        .await
        .as_str()
        .unwrap()
        .to_owned()
}

async fn card_shown(client: &Client, approval_id: &str) {
    let script = format!(
        "return !!document.querySelector('.card[data-approval=\"{approval_id}\"] button.approve')"
    );
    until(client, "the card", &script).await;
}

#[tokio::test]
async fn a_card_follows_its_question_answered_elsewhere_superseded_or_expired() {
    let Some((chromium, driver_path)) = browser() else {
        return;
    };
    let tau = Tau::new();
    let command = |id: &str| {
        tool_call(
            id,
            "run_command",
            &json!({"command": format!("echo {id} >> calls.txt")}),
        )
    };
    let model = tau.replay(&json!([
        command("t1"),
        answer("one"),
        command("t2"),
        answer("two"),
        command("t3"),
        answer("three"),
    ]));
    let serve = tau.serve(
        &model,
        &tau.serve_config("[approval]\nremote_timeout_seconds = 4\n"),
    );
    let session = serve.new_session();
    let driver = start_driver(&driver_path);
    let client = connect(&driver, &chromium, 1000, 800).await;
    client
        .goto(&format!("http://{}/#token={}", serve.host(), serve.token))
        .await
        .unwrap();
    until(
        &client,
        "the session",
        "return document.querySelectorAll('.sessions li.current').length",
    )
    .await;

    // Answered elsewhere (a script with the token): the card says so.
    let first = serve.ask(&session, "first");
    let first = first["id"].as_str().unwrap();
    card_shown(&client, first).await;
    let answered = serve.approve(first);
    assert_eq!(answered.status, 200);
    assert_eq!(card_outcome(&client, first).await, "Approved by you on web");
    serve.until_answered(&session, "one");

    // A newer message supersedes the next question.
    let second = serve.ask(&session, "second");
    let second = second["id"].as_str().unwrap();
    card_shown(&client, second).await;
    let newer = serve.post(
        &format!("/api/sessions/{session}/messages"),
        r#"{"text":"never mind"}"#,
    );
    assert_eq!(newer.status, 202);
    assert_eq!(
        card_outcome(&client, second).await,
        "Superseded by a newer message"
    );
    serve.until_answered(&session, "two");

    // Nobody answers the third.
    let third = serve.ask(&session, "third");
    let third = third["id"].as_str().unwrap();
    card_shown(&client, third).await;
    assert_eq!(
        card_outcome(&client, third).await,
        "Expired: nobody answered in time"
    );
    serve.until_answered(&session, "three");
    assert_eq!(
        std::fs::read_to_string(tau.workspace().join("calls.txt")).unwrap(),
        "t1\n",
        "only the approved call ran"
    );

    // A reload draws every decided card again, below its call, as it was shown live.
    let cards = "const cards = [...document.querySelectorAll('#transcript .card')]; \
        return cards.length === 3 && cards.map((c) => [c.dataset.approval, \
          c.classList.contains('decided'), c.previousElementSibling.classList.contains('call'), \
          c.querySelectorAll('button.approve, button.reject').length, c.querySelector('.outcome').textContent])";
    let live = until(&client, "the three decided cards", cards).await;
    client.refresh().await.unwrap();
    let reloaded = until(&client, "the decided cards after a reload", cards).await;
    assert_eq!(reloaded, live);
    assert_eq!(
        reloaded,
        json!([
            [first, true, true, 0, "Approved by you on web"],
            [second, true, true, 0, "Superseded by a newer message"],
            [third, true, true, 0, "Expired: nobody answered in time"]
        ])
    );
    client.close().await.unwrap();
}

#[tokio::test]
async fn the_page_lists_the_routines() {
    let Some((chromium, driver_path)) = browser() else {
        return;
    };
    let tau = Tau::new();
    let config = tau.serve_config(
        "[[routines]]\nname = \"porch-light\"\ncron = \"0 19 * * *\"\ntool = \"append_note\"\narguments = { text = \"<b>porch</b>\" }\n\n[[routines]]\nname = \"plants\"\nevery = \"6h\"\nprompt = \"Remind me to water the plants.\"\nenabled = false\n",
    );
    let serve = tau.serve(&tau.replay(&json!([answer("hi")])), &config);
    let driver = start_driver(&driver_path);
    let client = connect(&driver, &chromium, 1100, 760).await;
    client
        .goto(&format!("http://{}/#token={}", serve.host(), serve.token))
        .await
        .unwrap();
    let listed = until(
        &client,
        "the routines",
        "const items = [...document.querySelectorAll('#routine-list li')]; return items.length === 2 && items.map((i) => i.innerText.replace(/\\s+/g, ' '))",
    )
    .await;
    assert_eq!(
        listed,
        json!([
            "plants every 6h · runs a prompt · never ran · off",
            "porch-light cron 0 19 * * * · calls append_note · never ran"
        ])
    );
    client.close().await.unwrap();
}
