//! TauBar on a phone (headless Chromium emulating a phone's screen, 320, 390 and 430 px
//! wide and 844 px tall, the real `tau serve`): nothing is wider than the screen, the bar
//! is one line, a one-line command's card shows Approve and Reject without scrolling, the
//! widest yes ("allow in all chats") never sits beside Reject, and what waits in other
//! chats is one folded line each, named by the chat's title. axe-core finds nothing, in
//! the light theme and the dark one, also where the transcript scrolls with no control
//! in it. `TAU_UPDATE_SCREENSHOT=1` retakes `docs/taubar-phone.png`; the test asserts the
//! layout itself, never pixels.

use crate::common;
use crate::common::browser as browser_support;

use browser_support::{
    Driver, browser, cdp, connect, inject, no_violations, open_page, scheme, start_driver, until,
};
use common::{Tau, answer, peers, tool_call};
use fantoccini::Client;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// The phones' widths: a small one, the common one, a large one.
const WIDTHS: [u32; 3] = [320, 390, 430];
const HEIGHT: u32 = 844;

/// The model's first answer in every chat: long enough to scroll on a phone.
fn story() -> String {
    (1..=40)
        .map(|n| format!("Line {n} of a long answer."))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A client that lays the page out as a phone `width` px wide does (its screen, touch,
/// twice the pixels): a page wider than that would widen the phone's viewport, which the
/// test reads back.
async fn phone(driver: &Driver, chromium: &std::path::Path, width: u32) -> Client {
    let client = connect(driver, chromium, width, HEIGHT).await;
    cdp(
        driver,
        &client,
        "Emulation.setDeviceMetricsOverride",
        json!({"width": width, "height": HEIGHT, "deviceScaleFactor": 2, "mobile": true}),
    )
    .await;
    client
}

/// What the test reads of the layout, in CSS pixels.
const LAYOUT: &str = r#"
    const rect = (node) => { const r = node.getBoundingClientRect(); return { top: r.top, bottom: r.bottom, left: r.left, right: r.right, height: r.height }; };
    const card = document.querySelector('#transcript .card');
    const reject = card.querySelector('button.reject');
    const row = (button) => Math.abs(button.getBoundingClientRect().top - reject.getBoundingClientRect().top) < reject.getBoundingClientRect().height / 2;
    const bar = [...document.querySelectorAll('.bar > *')].filter((n) => n.offsetParent !== null);
    return {
      viewport: innerWidth,
      page: document.documentElement.scrollWidth,
      height: innerHeight,
      bar: rect(document.querySelector('.bar')),
      bar_tops: [...new Set(bar.map((n) => Math.round(n.getBoundingClientRect().top + n.getBoundingClientRect().height / 2)))].length,
      toggles_in_drawer: !!document.querySelector('#drawer-toggles #notify'),
      transcript: rect(document.getElementById('transcript')),
      card: rect(card),
      approve: rect(card.querySelector('button.approve')),
      reject: rect(reject),
      beside_reject: [...card.querySelectorAll('button')].filter((b) => b !== reject && row(b)).map((b) => b.className),
      elsewhere_open: document.getElementById('elsewhere-fold').open,
      elsewhere_count: document.getElementById('elsewhere-count').textContent,
      elsewhere: [...document.querySelectorAll('#elsewhere-list .title')].map((t) => t.textContent),
    };
"#;

/// Whether `inner` lies within `outer` (and the screen, `height` tall), vertically.
fn shown_within(inner: &Value, outer: &Value, height: f64) -> bool {
    let top = outer["top"].as_f64().unwrap().max(0.0);
    let bottom = outer["bottom"].as_f64().unwrap().min(height);
    inner["top"].as_f64().unwrap() >= top - 0.5 && inner["bottom"].as_f64().unwrap() <= bottom + 0.5
}

#[tokio::test]
async fn the_card_reads_at_a_glance_on_a_phone() {
    let Some((chromium, driver_path)) = browser() else {
        return;
    };
    let Some(axe) = peers::axe_core() else {
        return;
    };
    let axe = std::fs::read_to_string(axe).unwrap();
    let tau = Tau::new();
    // Every chat reads the script from its start: a long answer, then a one-line command.
    let story = story();
    let model = tau.replay(&json!([
        answer(&story),
        tool_call(
            "t1",
            "run_command",
            &json!({"command": "echo x >> out.txt"})
        ),
        answer("done"),
    ]));
    let serve = tau.serve(&model, &tau.serve_config(""));
    let chat = |first: &str| {
        let session = serve.new_session();
        let body = json!({ "text": first }).to_string();
        let sent = serve.post(&format!("/api/sessions/{session}/messages"), &body);
        assert_eq!(sent.status, 202, "{sent:?}");
        serve.until_answered(&session, &story);
        session
    };
    // A chat that only reads: its transcript scrolls and holds no control.
    let reading = chat("tell me a long story");
    // Two other chats wait for an answer, each named by its first prompt.
    for first in [
        "list the files in my workspace please",
        "what is the date today",
    ] {
        let session = chat(first);
        serve.ask(&session, "go on");
    }
    let here = chat("append x to out.txt");
    serve.ask(&here, "go on");

    let driver = start_driver(&driver_path);
    for width in WIDTHS {
        let client = phone(&driver, &chromium, width).await;
        open_page(&client, &serve.host(), &serve.token).await;
        client
            .execute(&format!("select({})", json!(here)), vec![])
            .await
            .unwrap();
        until(
            &client,
            "the card and the list of what waits elsewhere",
            "return document.querySelector('#transcript .card button.approve') \
               && !document.getElementById('elsewhere').hidden \
               && document.querySelectorAll('#elsewhere-list li').length === 2",
        )
        .await;
        if width == 390 {
            // The transcript scrolls to the card as it is drawn: measured once it has.
            until(
                &client,
                "the whole card scrolled into view",
                "const card = document.querySelector('#transcript .card').getBoundingClientRect(); \
                 const box = document.getElementById('transcript').getBoundingClientRect(); \
                 return card.top >= Math.max(box.top, 0) - 0.5 \
                   && card.bottom <= Math.min(box.bottom, window.innerHeight) + 0.5",
            )
            .await;
        }
        let layout = client.execute(LAYOUT, vec![]).await.unwrap();
        let said = format!("{width} px: {layout:#}");
        // Nothing wider than the screen: the phone's viewport stays the screen's width.
        assert_eq!(layout["viewport"], json!(width), "{said}");
        assert!(
            layout["page"].as_u64().unwrap() <= u64::from(width),
            "{said}"
        );
        // The bar is one line; Notify and Sound wait in the drawer.
        assert_eq!(layout["bar_tops"], json!(1), "{said}");
        assert!(layout["bar"]["height"].as_f64().unwrap() <= 60.0, "{said}");
        assert_eq!(layout["toggles_in_drawer"], json!(true), "{said}");
        // Approve and Reject are on screen, in the transcript, without scrolling.
        let height = layout["height"].as_f64().unwrap();
        for button in ["approve", "reject"] {
            assert!(
                shown_within(&layout[button], &layout["transcript"], height),
                "{button} is off screen: {said}"
            );
        }
        // Only the plain Approve sits beside Reject.
        assert_eq!(layout["beside_reject"], json!(["approve"]), "{said}");
        // A count is said with its noun, in the singular for one.
        let counts = client
            .execute(
                "return [counted(1, 'message', 'messages'), counted(2, 'message', 'messages'), \
                   [...document.querySelectorAll('#session-list .meta')].map((m) => m.textContent.split(' · ')[0])]",
                vec![],
            )
            .await
            .unwrap();
        assert_eq!(
            counts,
            json!([
                "1 message",
                "2 messages",
                ["4 messages", "4 messages", "4 messages", "2 messages"]
            ]),
            "{said}"
        );
        // What waits elsewhere: folded, counted, each chat by its title.
        assert_eq!(layout["elsewhere_open"], json!(false), "{said}");
        assert_eq!(layout["elsewhere_count"], json!("2"), "{said}");
        assert_eq!(
            layout["elsewhere"],
            json!([
                "in “list the files in my workspace please”",
                "in “what is the date today”"
            ]),
            "{said}"
        );
        if width == 390 {
            // The whole card, its command first, is on screen.
            assert!(
                shown_within(&layout["card"], &layout["transcript"], height),
                "{said}"
            );
            if std::env::var_os("TAU_UPDATE_SCREENSHOT").is_some() {
                // The hub guide's picture: a question waiting on a phone.
                let png = client.screenshot().await.unwrap();
                let path = common::peers::repo_root().join("docs/taubar-phone.png");
                std::fs::write(path, png).unwrap();
            }
            inject(&client, &axe).await;
            for theme in ["light", "dark"] {
                scheme(&driver, &client, theme).await;
                no_violations(&client, &format!("the phone's {theme}")).await;
            }
            // A transcript that scrolls with no control in it is reached by the keyboard.
            client
                .execute(&format!("select({})", json!(reading)), vec![])
                .await
                .unwrap();
            let scrolls = until(
                &client,
                "the long answer, scrolling",
                &format!(
                    "const t = document.getElementById('transcript'); \
                     return state.current === {} && t.querySelector('.msg.tau') && !t.querySelector('.call, .card') \
                       && [t.scrollHeight > t.clientHeight, t.querySelectorAll('button, a, input').length, t.tabIndex]",
                    json!(reading)
                ),
            )
            .await;
            assert_eq!(scrolls, json!([true, 0, 0]));
            let passed = no_violations(&client, "the phone's reading chat").await;
            assert!(
                passed.contains(&"scrollable-region-focusable".to_owned()),
                "{passed:?}"
            );
        }
        client.close().await.unwrap();
    }
}
