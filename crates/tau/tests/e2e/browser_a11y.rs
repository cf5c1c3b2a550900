//! TauBar's accessibility (headless Chromium, the real `tau serve`): axe-core (npm's
//! `axe-core`, injected into the page) finds no WCAG 2 A or AA violation, contrast among
//! them, in the light theme and in the dark one, with a question waiting (its long command
//! folded, Approve waiting and saying why), a decided card, a call's output, the side
//! panels (the history of decisions among them, a lookalike flagged) and another chat's
//! question on screen; and the page is used with the keyboard alone: Tab reaches
//! the message box, Enter sends, Shift-Tab reaches the card's Approve, Space presses it,
//! then the decisions' outcome filter, chosen with the arrow keys; the focus shows and is
//! never lost.

use crate::common;
use crate::common::browser as browser_support;

use browser_support::{
    browser, click, connect, inject, no_violations, open_page, scheme, start_driver, until,
};
use common::{Tau, answer, peers, tool_call};
use fantoccini::actions::{InputSource, KeyAction, KeyActions};
use fantoccini::key::Key;
use fantoccini::{Client, Locator};
use serde_json::{Value, json};

async fn read(client: &Client, script: &str) -> Value {
    client.execute(script, vec![]).await.unwrap()
}

#[tokio::test]
async fn axe_finds_no_wcag_aa_violation_in_light_and_dark() {
    let Some((chromium, driver_path)) = browser() else {
        return;
    };
    let Some(axe) = peers::axe_core() else {
        return;
    };
    let axe = std::fs::read_to_string(axe).unwrap();
    let tau = Tau::new();
    // Each conversation reads the script from its start: this one approves the first call
    // (a word in it looks like another, so its card offers no grant), answers the second
    // with a grant, then asks about a third call whose command is folded on its card; the
    // other chat's first call waits for an answer.
    let model = tau.replay(&json!([
        tool_call(
            "t1",
            "run_command",
            &json!({"command": "echo x >> \u{43e}ut.txt"})
        ),
        answer("first"),
        tool_call(
            "t2",
            "run_command",
            &json!({"command": "echo x >> out.txt"})
        ),
        answer("granted"),
        tool_call(
            "t3",
            "run_command",
            &json!({"command": format!("seq 1 12 # {}", "x".repeat(2_100))})
        ),
        answer("second"),
    ]));
    let config = tau.serve_config(
        "[[routines]]\nname = \"porch-light\"\ncron = \"0 19 * * *\"\ntool = \"append_note\"\narguments = { text = \"porch\" }\n\n[[routines]]\nname = \"plants\"\nevery = \"6h\"\nprompt = \"Remind me to water the plants.\"\nenabled = false\n",
    );
    let serve = tau.serve(&model, &config);
    let here = serve.new_session();
    serve.ask(&here, "append x");

    let driver = start_driver(&driver_path);
    // Tall enough for the whole transcript, a folded card among it, to be on screen.
    let client = connect(&driver, &chromium, 1100, 2400).await;

    // The login form, with its error showing.
    client
        .goto(&format!("http://{}/", serve.host()))
        .await
        .unwrap();
    until(
        &client,
        "the login form",
        "return !document.getElementById('login').hidden",
    )
    .await;
    read(
        &client,
        "document.getElementById('login-token').value = 'not-the-token'; \
         document.getElementById('login-form').requestSubmit()",
    )
    .await;
    until(
        &client,
        "the login's error",
        "return !document.getElementById('login-error').hidden",
    )
    .await;
    inject(&client, &axe).await;
    for theme in ["light", "dark"] {
        scheme(&driver, &client, theme).await;
        no_violations(&client, &format!("login form's {theme}")).await;
    }

    // Away first: the address with the token differs from this one only after its `#`,
    // which would not load the page again.
    client.goto("about:blank").await.unwrap();
    open_page(&client, &serve.host(), &serve.token).await;
    read(&client, &format!("select({})", json!(here))).await;
    until(
        &client,
        "the lookalike's card, which offers no grant",
        "const c = document.querySelector('#transcript .card button.approve'); \
         return c && !c.closest('.card').querySelector('.grant') && c.closest('.card').querySelector('.note.warning')",
    )
    .await;
    click(&client, Locator::Css("#transcript .card button.approve")).await;
    serve.until_answered(&here, "first");
    serve.ask(&here, "append x again");
    until(
        &client,
        "the card's grant offer",
        "return document.querySelector('#transcript .card:not(.decided) button.always')",
    )
    .await;
    click(
        &client,
        Locator::Css("#transcript .card:not(.decided) button.always"),
    )
    .await;
    serve.until_answered(&here, "granted");
    until(
        &client,
        "the decided cards, the grant and its receipt, and the decision with its lookalike",
        "return document.querySelectorAll('#transcript .card.decided .outcome').length === 2 && !document.getElementById('grants').hidden \
           && document.querySelector('#transcript .card .receipt button.revoke') \
           && document.querySelector('#decision-list li .ran') && document.querySelector('#decision-list li .note.warning')",
    )
    .await;

    serve.ask(&here, "count to twelve");
    let there = serve.new_session();
    serve.ask(&there, "append x");
    until(
        &client,
        "a waiting card (folded, its Approve waiting), another chat's question and the routines",
        "return document.querySelector('#transcript .card:not(.decided) button.approve:disabled') \
           && document.querySelector('#transcript .card:not(.decided) .unread:not([hidden])') \
           && document.querySelector('#transcript .card:not(.decided) .arg-more') \
           && !document.getElementById('elsewhere').hidden \
           && !document.getElementById('routines').hidden",
    )
    .await;
    // The second call has not run yet; its output is the first's, shown under it.
    until(
        &client,
        "the first call's output",
        "return document.querySelector('#transcript .call .result')",
    )
    .await;

    // The side panel's count of what waits, as the next refresh of the list shows it.
    read(&client, "loadSessions()").await;
    until(
        &client,
        "the waiting counts",
        "return document.querySelectorAll('#session-list .badge').length === 2",
    )
    .await;

    inject(&client, &axe).await;

    scheme(&driver, &client, "light").await;
    no_violations(&client, "TauBar's light").await;
    scheme(&driver, &client, "dark").await;
    // The dark theme is the one in force: the page's background is its dark one.
    assert_eq!(
        read(
            &client,
            "return getComputedStyle(document.body).backgroundColor"
        )
        .await,
        json!("rgb(18, 21, 27)")
    );
    no_violations(&client, "TauBar's dark").await;
}

/// Presses `keys` together (the first ones held while the last goes down and up).
async fn press(client: &Client, keys: &[Key]) {
    let mut actions = KeyActions::new("keyboard".to_owned());
    for key in keys {
        actions = actions.then(KeyAction::Down {
            value: char::from(*key),
        });
    }
    for key in keys.iter().rev() {
        actions = actions.then(KeyAction::Up {
            value: char::from(*key),
        });
    }
    client.perform_actions(actions).await.unwrap();
}

async fn type_text(client: &Client, text: &str) {
    let mut actions = KeyActions::new("keyboard".to_owned());
    for value in text.chars() {
        actions = actions
            .then(KeyAction::Down { value })
            .then(KeyAction::Up { value });
    }
    client.perform_actions(actions).await.unwrap();
}

/// The focused element (its id, or its tag and classes) and its outline's style.
const FOCUSED: &str = "const a = document.activeElement; \
    const name = a.id ? '#' + a.id : [a.tagName.toLowerCase(), ...a.classList].join('.'); \
    return [name, getComputedStyle(a).outlineStyle, a.matches(':focus-visible')]";

/// Presses `keys` until the focused element matches `selector`; every element the focus
/// passes shows where it is (an outline, by `:focus-visible`). Returns the path.
async fn focus_until(client: &Client, keys: &[Key], selector: &str) -> Vec<String> {
    let mut path = Vec::new();
    for _ in 0..20 {
        press(client, keys).await;
        let focused = read(client, FOCUSED).await;
        let name = focused[0].as_str().unwrap().to_owned();
        assert!(
            focused[1] != json!("none") && focused[2] == json!(true),
            "{name} has the focus but shows no outline: {focused}"
        );
        path.push(name);
        let there = read(
            client,
            &format!("return document.activeElement.matches({})", json!(selector)),
        )
        .await;
        if there == json!(true) {
            return path;
        }
    }
    panic!("{selector} is not reached by the keyboard; the focus went {path:?}");
}

#[tokio::test]
async fn the_keyboard_alone_sends_a_prompt_and_approves_its_call() {
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
    let driver = start_driver(&driver_path);
    let client = connect(&driver, &chromium, 1100, 760).await;
    open_page(&client, &serve.host(), &serve.token).await;

    // Tab from the top of the page: the bar's buttons, then "New chat"; Enter presses it
    // and the message box takes the focus.
    let path = focus_until(&client, &[Key::Tab], "#new-session").await;
    assert_eq!(path, ["#notify", "#sound", "#push", "#new-session"]);
    press(&client, &[Key::Enter]).await;
    until(
        &client,
        "the message box focused in a new chat",
        "return location.hash.includes('session=') && document.activeElement.id === 'prompt'",
    )
    .await;
    let session = read(
        &client,
        "return decodeURIComponent(location.hash.split('session=')[1])",
    )
    .await;
    let session = session.as_str().unwrap().to_owned();
    type_text(&client, "make a file please").await;
    press(&client, &[Key::Enter]).await;

    // The card comes below its call; Shift-Tab goes back from the message box to it.
    until(
        &client,
        "the card",
        "return document.querySelector('#transcript .card button.approve')",
    )
    .await;
    assert_eq!(
        read(&client, "return document.activeElement.id").await,
        json!("prompt"),
        "a card that comes does not take the focus from the message box"
    );
    let path = focus_until(&client, &[Key::Shift, Key::Tab], ".card button.approve").await;
    assert_eq!(path.last().unwrap(), "button.approve");
    let outline = read(
        &client,
        "const s = getComputedStyle(document.activeElement); return [s.outlineStyle, s.outlineWidth]",
    )
    .await;
    assert_ne!(outline[0], json!("none"), "{outline}");
    assert_ne!(outline[1], json!("0px"), "{outline}");
    press(&client, &[Key::Space]).await;

    serve.until_answered(&session, "made it");
    assert_eq!(
        std::fs::read_to_string(tau.workspace().join("proof.txt")).unwrap(),
        "made\n"
    );
    let approvals = serve.get("/api/approvals").json();
    assert_eq!(approvals[0]["state"], json!("approved"), "{approvals}");
    let outcome = until(
        &client,
        "the card's outcome and the answer",
        "const o = document.querySelector('#transcript .card.decided .outcome'); \
         return o && [...document.querySelectorAll('#transcript .msg.tau')].some((m) => m.textContent === 'made it') && o.textContent",
    )
    .await;
    assert_eq!(outcome, json!("Approved by you on web"));
    // The pressed button is gone; the focus stays on its card, and Tab goes on from there.
    assert_eq!(
        read(
            &client,
            "return document.activeElement.matches('#transcript .card.decided')"
        )
        .await,
        json!(true),
        "the focus is on the decided card, not lost: {}",
        read(&client, FOCUSED).await
    );
    let path = focus_until(&client, &[Key::Tab], "#prompt").await;
    assert_eq!(path, ["#prompt"]);

    // Back to the history of decisions; its outcome filter is chosen with the arrow keys.
    until(
        &client,
        "the decision in the panel",
        "return document.querySelector('#decision-list li .ran')",
    )
    .await;
    focus_until(&client, &[Key::Shift, Key::Tab], "#decision-outcome").await;
    press(&client, &[Key::Down]).await;
    until(
        &client,
        "the approved call, kept by the filter",
        "return document.getElementById('decision-outcome').value === 'approved' \
           && document.querySelectorAll('#decision-list li.approved').length === 1",
    )
    .await;
    press(&client, &[Key::Down]).await;
    until(
        &client,
        "no rejected call, said so",
        "return document.getElementById('decision-outcome').value === 'rejected' \
           && document.querySelectorAll('#decision-list li').length === 0 \
           && !document.getElementById('decision-none').hidden",
    )
    .await;
}
