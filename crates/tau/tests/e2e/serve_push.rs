//! Web Push through the real `tau serve`, to npm's mock push service (`web-push-testing`,
//! which checks the VAPID token and decrypts each push with the device's keys): a device
//! subscribed on TauBar gets one push per waiting question, and it holds only where the
//! question is; a device the push service says is gone (410) is removed; with no device
//! subscribed nothing is pushed. TauBar serves what makes it installable with the right
//! types under its CSP.

use crate::common;

use common::{Tau, answer, tool_call};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tau_test_support::PushService;

/// The `tau serve` a question is asked in: two tier-2 calls, one per turn.
fn two_questions(tau: &Tau) -> common::serve::Serve {
    let model = tau.replay(&json!([
        tool_call(
            "t1",
            "run_command",
            &json!({"command": "echo one >> proof.txt"})
        ),
        answer("Done."),
        tool_call(
            "t2",
            "run_command",
            &json!({"command": "echo two >> proof.txt"})
        ),
        answer("Again."),
    ]));
    tau.serve(&model, &tau.serve_config(""))
}

/// The endpoints of the push subscriptions `state.db` keeps, read beside the running tau.
fn kept_endpoints(tau: &Tau) -> Vec<String> {
    let db = rusqlite::Connection::open_with_flags(
        tau.home().join("state.db"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .unwrap();
    let mut statement = db
        .prepare("SELECT endpoint FROM push_subscriptions ORDER BY endpoint")
        .unwrap();
    statement
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

#[test]
fn a_waiting_question_pushes_only_its_locator_and_a_gone_device_is_removed() {
    let Some(service) = PushService::start() else {
        return;
    };
    let tau = Tau::new();
    let serve = two_questions(&tau);
    let key = serve.get("/api/push/key");
    assert_eq!(key.status, 200, "{key:?}");
    let key = key.json()["public_key"].as_str().unwrap().to_owned();

    let phone = service.subscribe(&key);
    let laptop = service.subscribe(&key);
    for device in [&phone, &laptop] {
        let kept = serve.post("/api/push/subscriptions", &device.subscription.to_string());
        assert_eq!(kept.status, 204, "{kept:?}");
    }
    // The laptop unsubscribed at the push service: tau learns it from the 410.
    service.expire(&laptop);

    let session = serve.new_session();
    let question = serve.ask(&session, "write one");
    let id = question["id"].as_str().unwrap();
    let pushes = serve.until(|_| Some(service.received(&phone)).filter(|p| !p.is_empty()));
    let locator: Value = serde_json::from_str(&pushes[0]).unwrap();
    assert_eq!(
        locator,
        json!({"type": "waiting", "url": format!("/#q={id}")}),
        "nothing of the call, only where it waits"
    );
    let phone_endpoint = phone.subscription["endpoint"].as_str().unwrap().to_owned();
    serve.until(|_| (kept_endpoints(&tau) == [phone_endpoint.clone()]).then_some(()));

    // Answered, the turn ends; the next question is the phone's second push, and the
    // first was pushed once.
    assert_eq!(serve.approve(id).status, 200);
    serve.until_answered(&session, "Done.");
    let second = serve.ask(&session, "write two");
    let second_id = second["id"].as_str().unwrap();
    let pushes = serve.until(|_| Some(service.received(&phone)).filter(|p| p.len() >= 2));
    let locators: Vec<Value> = pushes
        .iter()
        .map(|p| serde_json::from_str(p).unwrap())
        .collect();
    assert_eq!(
        locators,
        [
            json!({"type": "waiting", "url": format!("/#q={id}")}),
            json!({"type": "waiting", "url": format!("/#q={second_id}")}),
        ]
    );
    assert_eq!(service.received(&laptop), Vec::<String>::new());
}

#[test]
fn push_is_off_until_a_device_subscribes_and_off_again_when_it_unsubscribes() {
    let Some(service) = PushService::start() else {
        return;
    };
    let tau = Tau::new();
    let serve = two_questions(&tau);
    let key = serve.get("/api/push/key").json()["public_key"]
        .as_str()
        .unwrap()
        .to_owned();
    // Subscribed at the push service, never handed to tau: push is still off.
    let phone = service.subscribe(&key);
    let session = serve.new_session();
    let first = serve.ask(&session, "write one");
    assert_eq!(serve.approve(first["id"].as_str().unwrap()).status, 200);
    serve.until_answered(&session, "Done.");
    assert_eq!(kept_endpoints(&tau), Vec::<String>::new());

    let kept = serve.post("/api/push/subscriptions", &phone.subscription.to_string());
    assert_eq!(kept.status, 204, "{kept:?}");
    let endpoint = json!({"endpoint": phone.subscription["endpoint"]}).to_string();
    let second = serve.ask(&session, "write two");
    let pushes = serve.until(|_| Some(service.received(&phone)).filter(|p| !p.is_empty()));
    // Only the question asked while push was on.
    assert_eq!(
        pushes,
        [
            json!({"type": "waiting", "url": format!("/#q={}", second["id"].as_str().unwrap())})
                .to_string()
        ]
    );

    // Off again: the subscription is gone, a second DELETE finds nothing.
    assert_eq!(
        serve
            .call("DELETE", "/api/push/subscriptions", Some(&endpoint))
            .status,
        204
    );
    assert_eq!(kept_endpoints(&tau), Vec::<String>::new());
    assert_eq!(
        serve
            .call("DELETE", "/api/push/subscriptions", Some(&endpoint))
            .status,
        404
    );
}

#[test]
fn only_https_or_loopback_endpoints_with_whole_keys_are_kept() {
    let tau = Tau::new();
    let serve = tau.serve(&tau.make_proof(), &tau.serve_config(""));
    let keys = json!({
        "p256dh": "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4",
        "auth": "BTBZMqHH6r4Tts7J_aSIgg",
    });
    let subscribe = |endpoint: &str, keys: &Value| {
        let reply = serve.post(
            "/api/push/subscriptions",
            &json!({"endpoint": endpoint, "expirationTime": null, "keys": keys}).to_string(),
        );
        let error = if reply.body.is_empty() {
            Value::Null
        } else {
            reply.json()["error"].clone()
        };
        (reply.status, error)
    };
    assert_eq!(
        subscribe("https://push.example/a", &keys),
        (204, Value::Null)
    );
    let endpoint_refused =
        json!("the endpoint must be an https URL (or http on this machine's loopback)");
    assert_eq!(
        subscribe("http://push.example/a", &keys),
        (422, endpoint_refused.clone())
    );
    assert_eq!(
        subscribe("http://192.168.1.20:8090/a", &keys),
        (422, endpoint_refused)
    );
    let short_auth = json!({"p256dh": keys["p256dh"], "auth": "BTBZ"});
    assert_eq!(
        subscribe("https://push.example/b", &short_auth),
        (422, json!("keys.auth must be 16 bytes, base64url"))
    );
    assert_eq!(kept_endpoints(&tau), ["https://push.example/a"]);

    // Like the rest of the API: the token, and this page's Origin for a change.
    let host = serve.host();
    let body = json!({"endpoint": "https://push.example/c", "keys": keys}).to_string();
    let anonymous = common::serve::request(
        serve.addr,
        "POST",
        "/api/push/subscriptions",
        &[("Host", &host)],
        Some(&body),
    );
    assert_eq!(anonymous.status, 401);
    let bearer = format!("Bearer {}", serve.token);
    let elsewhere = common::serve::request(
        serve.addr,
        "POST",
        "/api/push/subscriptions",
        &[
            ("Host", &host),
            ("Authorization", &bearer),
            ("Origin", "https://evil.example"),
        ],
        Some(&body),
    );
    assert_eq!(elsewhere.status, 403);
    assert_eq!(kept_endpoints(&tau), ["https://push.example/a"]);
}

#[test]
fn the_installable_app_is_served_with_its_types_under_the_csp() {
    let tau = Tau::new();
    let serve = tau.serve(&tau.make_proof(), &tau.serve_config(""));
    for (path, content_type) in [
        ("/manifest.webmanifest", "application/manifest+json"),
        ("/sw.js", "text/javascript; charset=utf-8"),
        ("/push.js", "text/javascript; charset=utf-8"),
        ("/icon.svg", "image/svg+xml"),
        ("/icon-maskable.svg", "image/svg+xml"),
    ] {
        let reply =
            common::serve::request(serve.addr, "GET", path, &[("Host", &serve.host())], None);
        assert_eq!(
            (reply.status, reply.header("content-type")),
            (200, Some(content_type)),
            "{path}"
        );
        let csp = reply.header("content-security-policy").unwrap();
        assert!(
            csp.contains("manifest-src 'self'") && csp.contains("worker-src 'self'"),
            "{csp}"
        );
    }
    let page = serve.get("/").body;
    assert!(page.contains(r#"<link rel="manifest" href="/manifest.webmanifest">"#));
    // The key is the same across a restart: devices subscribed with it keep receiving.
    let key = serve.get("/api/push/key").json();
    drop(serve);
    let again = tau.serve(&tau.make_proof(), &tau.serve_config(""));
    assert_eq!(again.get("/api/push/key").json(), key);
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(tau.home().join("push-key"))
            .unwrap()
            .permissions(),
    );
    assert_eq!(mode & 0o777, 0o600);
}

/// `tau backup` carries the key pushes are signed with, and `tau restore` brings it back:
/// a device subscribed in the old home keeps getting pushes from the restored one, with
/// no need to turn Push on there again.
#[test]
fn a_restored_home_keeps_pushing_to_the_devices_subscribed_before() {
    let Some(service) = PushService::start() else {
        return;
    };
    let tau = Tau::new();
    let serve = two_questions(&tau);
    let key = serve.get("/api/push/key").json()["public_key"]
        .as_str()
        .unwrap()
        .to_owned();
    let phone = service.subscribe(&key);
    let kept = serve.post("/api/push/subscriptions", &phone.subscription.to_string());
    assert_eq!(kept.status, 204, "{kept:?}");
    let (code, _) = serve.terminate();
    assert_eq!(code, 0);

    let file = tau.dir.path().join("home.tar");
    let backup = tau.run(&["backup", file.to_str().unwrap()], "");
    assert_eq!(backup.code, 0, "{}", backup.stderr);
    assert!(
        backup.stdout.contains(", web-token, push-key\n"),
        "{}",
        backup.stdout
    );
    let restored = Tau::new();
    let run = restored.run(&["restore", file.to_str().unwrap()], "");
    assert_eq!(run.code, 0, "{}", run.stderr);
    let restored_key = restored.home().join("push-key");
    assert_eq!(
        std::fs::read(&restored_key).unwrap(),
        std::fs::read(tau.home().join("push-key")).unwrap()
    );
    assert_eq!(common::mode(&restored_key), 0o600);

    let serve = two_questions(&restored);
    assert_eq!(serve.get("/api/push/key").json()["public_key"], json!(key));
    let session = serve.new_session();
    let question = serve.ask(&session, "write one");
    let pushes = serve.until(|_| Some(service.received(&phone)).filter(|p| !p.is_empty()));
    assert_eq!(
        pushes,
        [
            json!({"type": "waiting", "url": format!("/#q={}", question["id"].as_str().unwrap())})
                .to_string()
        ]
    );
}

/// A person added with `tau people add` while the hub runs turns Push on with their new
/// token, and their own question is pushed to that device at once.
#[test]
fn a_person_added_while_the_hub_runs_gets_their_questions_pushed() {
    let Some(service) = PushService::start() else {
        return;
    };
    let tau = Tau::new();
    let config = tau.serve_config("[[people]]\nname = \"ana\"\n");
    let serve = tau.serve(&tau.make_proof(), &config);
    let cli = |args: &[&str]| {
        let mut all = vec!["--config", config.to_str().unwrap(), "people"];
        all.extend_from_slice(args);
        let run = tau.run(&all, "");
        assert_eq!(run.code, 0, "{args:?}: {}", run.stderr);
        run.stdout
    };
    cli(&["add", "cyd"]);
    let cyd = common::serve::Api {
        addr: serve.addr,
        token: cli(&["token", "cyd"]).trim().to_owned(),
    };
    let key = cyd.get("/api/push/key").json()["public_key"]
        .as_str()
        .unwrap()
        .to_owned();
    let (phone, anas) = (service.subscribe(&key), service.subscribe(&key));
    let kept = cyd.post("/api/push/subscriptions", &phone.subscription.to_string());
    assert_eq!(kept.status, 204, "{kept:?}");
    let kept = serve.post("/api/push/subscriptions", &anas.subscription.to_string());
    assert_eq!(kept.status, 204, "{kept:?}");

    let session = cyd.new_session();
    let question = cyd.ask(&session, "make the proof");
    let pushes = serve.until(|_| Some(service.received(&phone)).filter(|p| !p.is_empty()));
    assert_eq!(
        pushes,
        [
            json!({"type": "waiting", "url": format!("/#q={}", question["id"].as_str().unwrap())})
                .to_string()
        ]
    );
    assert_eq!(service.received(&anas), Vec::<String>::new());
}
