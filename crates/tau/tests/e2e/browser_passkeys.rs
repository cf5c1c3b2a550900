//! Passkeys on TauBar in a real browser, with chromedriver's virtual authenticator: a
//! passkey enrolled from an enrollment link (used once), a sign-in that gives an HttpOnly,
//! SameSite=Strict session cookie (a forged cross-origin POST with it is refused), and a
//! garage door that opens only on a passkey assertion bound to its question: a yes without
//! one, a wrong challenge, a person not verified, a replayed assertion and an assertion
//! for another question are each refused and audited, and nothing runs.

use crate::common;
use crate::common::browser as web;

use std::time::Duration;

use common::serve::request;
use common::{Tau, answer, tool_call};
use fantoccini::{Client, Locator};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tau_test_support::{DeviceStandIn, Mosquitto, StandInSpec};
use web::{browser, click, connect, session_call, start_driver, until};

const GARAGE: &str = r#"
[[devices]]
name = "garage-door"
label = "Garage door"
room = "garage"
kind = "garage"
command_topic = "home/garage/door/set"
state_topic = "home/garage/door/state"
actions = { open = "OPEN", close = "CLOSE" }
"#;

/// Asks for question `id`'s step-up challenge in the page, signs it with the virtual
/// authenticator (`mode` spoils it on the way: `wrong_challenge`, `unverified`) and
/// answers `target` with it; gives back the answer's status and body, and what was sent.
const STEP_UP: &str = r#"
const [id, target, mode, done] = [arguments[0], arguments[1], arguments[2], arguments[arguments.length - 1]];
(async () => {
  const all = await (await fetch('/api/approvals', {credentials: 'same-origin'})).json();
  const row = all.find((r) => r.id === target);
  const started = await passkeyPost(`/api/approvals/${id}/step_up`);
  const options = requestOptions(started.data.options);
  if (mode === 'wrong_challenge') options.publicKey.challenge = crypto.getRandomValues(new Uint8Array(32));
  if (mode === 'unverified') options.publicKey.userVerification = 'discouraged';
  const credential = await navigator.credentials.get(options);
  const body = {decision: 'approve', card_sha256: row.card_sha256,
                step_up: {ceremony: started.data.ceremony, credential: assertedJson(credential)}};
  const answer = await passkeyPost(`/api/approvals/${target}`, body);
  done({status: answer.status, data: answer.data, body});
})().catch((e) => done({error: String(e)}));
"#;

/// Sends `body` as the answer to `target` from the page.
const RESEND: &str = r#"
const [target, body, done] = [arguments[0], arguments[1], arguments[arguments.length - 1]];
passkeyPost(`/api/approvals/${target}`, body).then((a) => done({status: a.status, data: a.data}));
"#;

async fn step_up(client: &Client, id: &str, target: &str, mode: &str) -> Value {
    let result = client
        .execute_async(STEP_UP, vec![json!(id), json!(target), json!(mode)])
        .await
        .unwrap();
    assert!(result.get("error").is_none(), "{result}");
    result
}

fn refused(result: &Value) -> (u64, &str) {
    (
        result["status"].as_u64().unwrap(),
        result["data"]["refused"].as_str().unwrap_or(""),
    )
}

async fn pending(client: &Client) -> Vec<String> {
    let rows = client
        .execute_async(
            "const done = arguments[arguments.length - 1]; \
             fetch('/api/approvals?state=pending').then((r) => r.json()).then(done)",
            vec![],
        )
        .await
        .unwrap();
    rows.as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect()
}

async fn ask(client: &Client, text: &str) {
    let prompt = client.find(Locator::Id("prompt")).await.unwrap();
    prompt.send_keys(text).await.unwrap();
    click(client, Locator::Id("send")).await;
}

#[tokio::test]
async fn a_passkey_enrolled_signs_in_and_alone_opens_the_garage_for_exactly_its_question() {
    let Some((chromium, driver_path)) = browser() else {
        return;
    };
    let Some(broker) = Mosquitto::start("allow_anonymous true").unwrap() else {
        return;
    };
    let garage = DeviceStandIn::start(
        broker.port,
        StandInSpec {
            client_id: "garage-door".into(),
            command_topic: "home/garage/door/set".into(),
            state_topic: "home/garage/door/state".into(),
            initial_state: Some("CLOSED".into()),
            states: Vec::new(),
        },
    )
    .unwrap();
    let tau = Tau::new();
    let model = tau.replay(&json!([
        tool_call(
            "t1",
            "device_set",
            &json!({"device": "garage-door", "action": "open"})
        ),
        answer("The garage is open."),
        tool_call(
            "t2",
            "device_set",
            &json!({"device": "garage-door", "action": "close"})
        ),
        answer("The garage is closed."),
    ]));
    let config = tau.serve_config(&format!("[tools.mqtt]\nport = {}\n{GARAGE}", broker.port));
    let serve = tau.serve(&model, &config);
    // WebAuthn takes a name, not an address: TauBar is opened as localhost.
    let host = format!("localhost:{}", serve.addr.port());

    // An enrollment link for the implicit person, as `tau people invite` prints one.
    let store = tau_state::StateDb::open(&tau.home().join("state.db"))
        .unwrap()
        .passkeys();
    let secret = tau_web::enroll_secret(&store, tau_web::IMPLICIT_PERSON).unwrap();

    let driver = start_driver(&driver_path);
    let client = connect(&driver, &chromium, 1100, 900).await;
    let authenticator = session_call(
        &driver,
        &client,
        "webauthn/authenticator",
        &json!({"protocol": "ctap2", "transport": "internal", "hasResidentKey": true,
                "hasUserVerification": true, "isUserVerified": true}),
    )
    .await;
    let authenticator = authenticator.as_str().unwrap().to_owned();

    // Enrollment: the page reads the secret from the fragment; the link works once.
    client
        .goto(&format!("http://{host}/enroll#{secret}"))
        .await
        .unwrap();
    assert_eq!(client.current_url().await.unwrap().fragment(), None);
    click(&client, Locator::Id("enroll")).await;
    let said = until(
        &client,
        "the enrollment",
        "return document.getElementById('enroll-said').textContent",
    )
    .await;
    assert_eq!(
        said,
        json!("A passkey is enrolled for owner. You can close this page.")
    );
    let again = client
        .execute_async(
            "const done = arguments[arguments.length - 1]; \
             passkeyPost('/passkeys/enroll/start', {secret: arguments[0]}).then(done)",
            vec![json!(secret)],
        )
        .await
        .unwrap();
    assert_eq!(
        again,
        json!({"status": 403, "data": {"error": "this enrollment link was used, has expired or is not this tau's: ask for a new one"}})
    );

    // Sign-in, without the token: the session cookie is HttpOnly and SameSite=Strict.
    client.goto(&format!("http://{host}/")).await.unwrap();
    until(
        &client,
        "the login",
        "return !document.getElementById('login').hidden",
    )
    .await;
    click(&client, Locator::Id("login-passkey")).await;
    until(
        &client,
        "the app",
        "return !document.getElementById('app').hidden",
    )
    .await;
    let cookie = client.get_named_cookie("tau_session").await.unwrap();
    assert_eq!(cookie.http_only(), Some(true));
    assert_eq!(
        cookie.same_site().map(|s| s.to_string()),
        Some("Strict".to_owned())
    );
    let with_cookie = format!("tau_session={}", cookie.value());
    // The cookie opens the API; a cross-origin POST carrying it is refused.
    let forged = request(
        serve.addr,
        "POST",
        "/api/sessions",
        &[
            ("Host", host.as_str()),
            ("Cookie", with_cookie.as_str()),
            ("Origin", "http://evil.example"),
        ],
        None,
    );
    assert_eq!(forged.status, 403, "{}", forged.body);
    let listed = request(
        serve.addr,
        "GET",
        "/api/passkeys",
        &[("Host", host.as_str()), ("Cookie", with_cookie.as_str())],
        None,
    );
    assert_eq!(listed.status, 200, "{}", listed.body);
    assert_eq!(listed.json()[0]["person"], "owner");

    // The garage: its card asks for the passkey, not for a word.
    click(&client, Locator::Id("new-session")).await;
    until(
        &client,
        "a session",
        "return location.hash.startsWith('#session=')",
    )
    .await;
    ask(&client, "open the garage").await;
    let step = until(
        &client,
        "the garage card",
        "const s = document.querySelector('.card .step'); return s && s.textContent",
    )
    .await;
    assert_eq!(
        step,
        json!("Second step: Approve asks for your passkey. Nothing runs without it.")
    );
    let first = pending(&client).await;
    assert_eq!(first.len(), 1);
    let first = first[0].clone();

    // A yes with the device's name and no passkey.
    let card = serve.get("/api/approvals?state=pending").json()[0].clone();
    assert_eq!(
        card["step_up"],
        json!({"kind": "passkey", "challenge": format!("/api/approvals/{first}/step_up")})
    );
    let plain = client
        .execute_async(
            RESEND,
            vec![
                json!(first),
                json!({"decision": "approve", "confirm": "garage-door",
                       "card_sha256": card["card_sha256"]}),
            ],
        )
        .await
        .unwrap();
    assert_eq!(refused(&plain), (422, "step_up_missing"));
    // A challenge that is not the one offered; a person not verified.
    let wrong = step_up(&client, &first, &first, "wrong_challenge").await;
    assert_eq!(refused(&wrong), (422, "step_up_failed"));
    session_call(
        &driver,
        &client,
        &format!("webauthn/authenticator/{authenticator}/uv"),
        &json!({"isUserVerified": false}),
    )
    .await;
    let unverified = step_up(&client, &first, &first, "unverified").await;
    assert_eq!(refused(&unverified), (422, "step_up_failed"));
    session_call(
        &driver,
        &client,
        &format!("webauthn/authenticator/{authenticator}/uv"),
        &json!({"isUserVerified": true}),
    )
    .await;
    assert_eq!(pending(&client).await, vec![first.clone()], "still open");
    assert_eq!(garage.commands(), Vec::<String>::new(), "nothing ran");

    // The assertion for exactly this question opens the garage.
    let good = step_up(&client, &first, &first, "").await;
    assert_eq!(good["status"], 200, "{good}");
    assert_eq!(good["data"]["state"], "approved");
    assert_eq!(
        garage.wait_for_commands(1, Duration::from_secs(20)),
        ["OPEN"]
    );

    // The next question: the used assertion replayed, and one made for it sent to the
    // first question, are refused.
    until(
        &client,
        "the first turn's answer",
        "return document.body.innerText.includes('The garage is open.')",
    )
    .await;
    ask(&client, "close it").await;
    let second = serve.until(|serve| {
        let rows = serve.get("/api/approvals?state=pending").json();
        rows.as_array()
            .and_then(|rows| rows.first())
            .map(|row| row["id"].as_str().unwrap().to_owned())
    });
    let second_card = serve.question(&second).unwrap();
    let mut replayed = good["body"].clone();
    replayed["card_sha256"] = second_card["card_sha256"].clone();
    let replay = client
        .execute_async(RESEND, vec![json!(second), replayed])
        .await
        .unwrap();
    assert_eq!(refused(&replay), (422, "step_up_unknown"));
    let elsewhere = step_up(&client, &second, &first, "").await;
    assert_eq!(refused(&elsewhere), (422, "step_up_other_question"));
    assert_eq!(pending(&client).await, vec![second.clone()], "still open");
    assert_eq!(garage.commands(), ["OPEN"], "nothing more ran");

    // The card's own Approve asks the authenticator and closes the garage.
    until(
        &client,
        "the second card",
        "return document.querySelectorAll('.card .step').length > 0 && \
                [...document.querySelectorAll('.card:not(.decided) button.approve')].length",
    )
    .await;
    click(&client, Locator::Css(".card:not(.decided) button.approve")).await;
    assert_eq!(
        garage.wait_for_commands(2, Duration::from_secs(20)),
        ["OPEN", "CLOSE"]
    );

    // Every refusal is audited, in few words.
    let reasons: Vec<String> = tau
        .audit()
        .iter()
        .filter(|line| line["type"] == "answer_refused")
        .map(|line| line["reason"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        reasons,
        [
            "a yes without the passkey it takes",
            "a passkey assertion that did not verify",
            "a passkey assertion that did not verify",
            "a passkey assertion for a challenge not offered, used or expired",
            "a passkey assertion for another question",
        ]
    );
    client.close().await.unwrap();
}
