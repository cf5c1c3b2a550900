//! Event triggers: an `mqtt` routine against a real Mosquitto broker, and webhooks with
//! their secret and body checked.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::needless_pass_by_value
)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{Answering, FakeHost, Lamp, Rig, catalog, def};
use pretty_assertions::assert_eq;
use rumqttc::{AsyncClient, MqttOptions, QoS};
use serde_json::json;
use tau_reflex::{Engine, SystemClock, WebhookReply};
use tau_test_support::Mosquitto;
use tokio_util::sync::CancellationToken;

fn start(engine: &Engine) -> (CancellationToken, tokio::task::JoinHandle<()>) {
    let stop = CancellationToken::new();
    let task = tokio::spawn({
        let (engine, stop) = (engine.clone(), stop.clone());
        async move { engine.run(stop).await }
    });
    (stop, task)
}

async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    for _ in 0..500 {
        if check() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{what} did not happen within 5 s");
}

/// Publishes `payload` to `topic` at the broker and waits for the broker's PUBACK.
async fn publish(port: u16, topic: &str, payload: &str) {
    let (client, mut events) =
        AsyncClient::new(MqttOptions::new("door-sensor", "127.0.0.1", port), 8);
    client
        .publish(topic, QoS::AtLeastOnce, false, payload)
        .await
        .unwrap();
    loop {
        if let rumqttc::Event::Incoming(rumqttc::Packet::PubAck(_)) = events.poll().await.unwrap() {
            break;
        }
    }
    client.disconnect().await.unwrap();
    let _ = tokio::time::timeout(Duration::from_millis(200), events.poll()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mqtt_routine_runs_on_a_matching_message_from_a_real_broker() {
    let Some(broker) = Mosquitto::start("allow_anonymous true").unwrap() else {
        return;
    };
    let lamp = Arc::new(Lamp::new(Arc::new(SystemClock)));
    let mut rig = Rig::new(
        catalog(Arc::clone(&lamp)),
        Arc::new(SystemClock),
        FakeHost::new(),
    );
    rig.mqtt = Some(MqttOptions::new("tau-reflex", "127.0.0.1", broker.port));
    let engine = rig
        .engine(vec![def(
            json!({"name": "door", "mqtt": "home/door/+", "payload": "open",
                                "tool": "lamp", "arguments": {"state": "on"}}),
        )])
        .unwrap();
    let (stop, task) = start(&engine);
    // The subscription is made once connected; a retained-free publish before it is lost,
    // so publish until the first one lands.
    let mut published = 0;
    while lamp.count() == 0 && published < 50 {
        publish(broker.port, "home/door/front", "open").await;
        published += 1;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(lamp.count(), 1);
    publish(broker.port, "home/door/front", "closed").await;
    publish(broker.port, "home/window/front", "open").await;
    publish(broker.port, "home/door/back", "open").await;
    eventually("the second door message", || lamp.count() == 2).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        lamp.count(),
        2,
        "another payload or another topic runs nothing"
    );
    let triggers: Vec<String> = rig
        .runs()
        .into_iter()
        .filter(|r| r.2 == "success")
        .map(|r| r.1)
        .collect();
    assert_eq!(
        triggers,
        vec!["mqtt home/door/front", "mqtt home/door/back"]
    );
    stop.cancel();
    task.await.unwrap();
}

const SECRET: &str = "a-webhook-secret-of-some-length";

fn webhook_rig() -> (Rig, Arc<Lamp>) {
    webhook_rig_on(FakeHost::new())
}

/// `rig`'s engine with the one routine `routine`, started, once it keeps the routine.
async fn running(
    rig: &Rig,
    routine: serde_json::Value,
) -> (Engine, CancellationToken, tokio::task::JoinHandle<()>) {
    let engine = rig.engine(vec![def(routine)]).unwrap();
    let (stop, task) = start(&engine);
    eventually("the engine keeping the routine", || {
        !engine.active().is_empty()
    })
    .await;
    (engine, stop, task)
}

/// A rig whose `host` serves webhooks, the doorbell's secret set.
fn webhook_rig_on(mut host: FakeHost) -> (Rig, Arc<Lamp>) {
    let lamp = Arc::new(Lamp::new(Arc::new(SystemClock)));
    host.webhooks = true;
    let mut rig = Rig::new(catalog(Arc::clone(&lamp)), Arc::new(SystemClock), host);
    rig.env = vec![("DOORBELL_SECRET".into(), SECRET.into())];
    rig.settings.reload_every = Duration::from_millis(10);
    (rig, lamp)
}

#[tokio::test]
async fn a_webhook_with_a_wrong_secret_or_an_unexpected_body_is_refused() {
    let (rig, lamp) = webhook_rig();
    let (engine, stop, task) = running(
        &rig,
        json!({"name": "doorbell", "webhook": {"secret_env": "DOORBELL_SECRET"},
                                "payload": "ring", "tool": "lamp", "arguments": {"state": "on"}}),
    )
    .await;
    let bearer = format!("Bearer {SECRET}");
    let reply = |status: u16, text: &str| WebhookReply {
        status,
        text: text.into(),
    };
    let big = vec![b'x'; 64 * 1024 + 1];
    let cases: Vec<(&str, Option<&str>, &[u8], WebhookReply)> = vec![
        (
            "doorbell",
            None,
            b"ring",
            reply(401, "wrong or missing secret"),
        ),
        (
            "doorbell",
            Some("Bearer a-webhook-secret-of-some-lengtH"),
            b"ring",
            reply(401, "wrong or missing secret"),
        ),
        (
            "doorbell",
            Some(SECRET),
            b"ring",
            reply(401, "wrong or missing secret"),
        ),
        (
            "doorbell",
            Some("Bearer "),
            b"ring",
            reply(401, "wrong or missing secret"),
        ),
        (
            "doorbell",
            Some(&bearer),
            b"knock",
            reply(400, "the body is not what this routine expects"),
        ),
        (
            "doorbell",
            Some(&bearer),
            b"ring\n",
            reply(400, "the body is not what this routine expects"),
        ),
        (
            "doorbell",
            Some(&bearer),
            &big,
            reply(413, "the body is larger than 65536 bytes"),
        ),
        (
            "front-door",
            Some(&bearer),
            b"ring",
            reply(404, "no such webhook"),
        ),
    ];
    for (name, auth, body, expected) in cases {
        assert_eq!(call(&engine, name, auth, body), expected, "{name} {auth:?}");
    }
    assert_eq!(lamp.count(), 0, "nothing refused ran");
    assert_eq!(
        call(&engine, "doorbell", Some(&bearer), b"ring"),
        reply(202, "started")
    );
    eventually("the webhook's run", || lamp.count() == 1).await;
    eventually("the run's record", || !rig.runs().is_empty()).await;
    assert_eq!(rig.runs()[0].1, "webhook");
    stop.cancel();
    task.await.unwrap();
}

#[tokio::test]
async fn a_webhook_while_the_routine_runs_is_skipped() {
    let (mut rig, _) = webhook_rig();
    let mut slow = Lamp::new(Arc::new(SystemClock));
    slow.delay = Duration::from_millis(500);
    let slow = Arc::new(slow);
    rig.catalog = Arc::new(catalog(Arc::clone(&slow)));
    let (engine, stop, task) = running(
        &rig,
        json!({"name": "doorbell", "webhook": {"secret_env": "DOORBELL_SECRET"},
                                "tool": "lamp", "arguments": {"state": "on"}}),
    )
    .await;
    let bearer = format!("Bearer {SECRET}");
    assert_eq!(
        call(&engine, "doorbell", Some(&bearer), b"{\"any\": 1}").status,
        202
    );
    let again = call(&engine, "doorbell", Some(&bearer), b"");
    assert_eq!(
        (again.status, again.text.as_str()),
        (409, "its previous run is still going")
    );
    stop.cancel();
    task.await.unwrap();
}

#[tokio::test]
async fn a_webhook_whose_routine_asks_where_another_hub_serves_is_sent_there() {
    let host = FakeHost::with_web(Answering::Never);
    host.asks_now
        .store(false, std::sync::atomic::Ordering::Relaxed);
    let (rig, lamp) = webhook_rig_on(host);
    let (engine, stop, task) = running(
        &rig,
        json!({"name": "doorbell", "webhook": {"secret_env": "DOORBELL_SECRET"},
                   "tool": "lamp", "arguments": {"state": "on"}, "ask": "web"}),
    )
    .await;
    let bearer = format!("Bearer {SECRET}");
    let refused = call(&engine, "doorbell", Some(&bearer), b"");
    assert_eq!(
        (refused.status, refused.text.as_str()),
        (
            503,
            "this hub cannot ask on the routine's channel now: another hub sharing the \
             store serves it; send the call to that hub"
        )
    );
    // A wrong secret is still told first: the refusal above says nothing to a stranger.
    assert_eq!(call(&engine, "doorbell", Some("Bearer x"), b"").status, 401);
    assert!(rig.runs().is_empty(), "nothing ran here");
    assert_eq!(lamp.count(), 0);
    // Once this hub serves the channel (it took the bot over), the call runs here.
    rig.host
        .asks_now
        .store(true, std::sync::atomic::Ordering::Relaxed);
    let started = call(&engine, "doorbell", Some(&bearer), b"");
    assert_eq!((started.status, started.text.as_str()), (202, "started"));
    eventually("the run's record", || !rig.runs().is_empty()).await;
    stop.cancel();
    task.await.unwrap();
}

/// A webhook call as the listener makes it: the head first, then the body.
fn call(engine: &Engine, name: &str, authorization: Option<&str>, body: &[u8]) -> WebhookReply {
    match engine.webhook(name, authorization, "127.0.0.1") {
        Ok(call) => call.deliver(body),
        Err(refused) => refused,
    }
}
