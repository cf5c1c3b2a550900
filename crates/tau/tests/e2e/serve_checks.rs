//! `tau serve`'s checks end to end: the token, `Host` and `Origin`, bad input of every
//! kind, slow and vanishing clients, the display view, an address off loopback.

use crate::common;

use common::serve::{Events, request};
use common::{Tau, answer, tool_call};
use pretty_assertions::assert_eq;
use serde_json::json;

#[test]
fn the_token_host_and_origin_are_checked() {
    let tau = Tau::new();
    let serve = tau.serve(&tau.make_proof(), &tau.serve_config(""));
    let session = serve.new_session();
    let row = serve.ask(&session, "make a file");
    let answer_path = format!("/api/approvals/{}", row["id"].as_str().unwrap());
    let host = serve.host();
    let origin = serve.origin();
    let bearer = format!("Bearer {}", serve.token);
    let yes = json!({"decision": "approve", "card_sha256": row["card_sha256"]}).to_string();
    let decision = Some(yes.as_str());
    let token_cookie = format!("tau_web={}", serve.token);
    let status = |method: &str, path: &str, headers: &[(&str, &str)], body| {
        request(serve.addr, method, path, headers, body).status
    };
    // (what, method, path, headers, expected status)
    type Case<'a> = (&'a str, &'a str, &'a str, Vec<(&'a str, &'a str)>, u16);
    let cases: Vec<Case<'_>> = vec![
        (
            "no token",
            "GET",
            "/api/sessions",
            vec![("Host", &host)],
            401,
        ),
        (
            "no token",
            "POST",
            &answer_path,
            vec![("Host", &host), ("Origin", &origin)],
            401,
        ),
        (
            "a wrong token",
            "GET",
            "/api/approvals",
            vec![("Host", &host), ("Authorization", "Bearer 0000")],
            401,
        ),
        (
            "the token as a cookie",
            "GET",
            "/api/sessions",
            vec![("Host", &host), ("Cookie", &token_cookie)],
            401,
        ),
        (
            "another origin",
            "POST",
            &answer_path,
            vec![
                ("Host", &host),
                ("Authorization", &bearer),
                ("Origin", "http://evil.example"),
            ],
            403,
        ),
        (
            "a rebound name",
            "GET",
            "/api/sessions",
            vec![("Host", "evil.example:7878"), ("Authorization", &bearer)],
            403,
        ),
        (
            "a rebound name, the page",
            "GET",
            "/",
            vec![("Host", "evil.example")],
            403,
        ),
        (
            "no Host",
            "GET",
            "/api/sessions",
            vec![("Authorization", &bearer)],
            403,
        ),
    ];
    for (what, method, path, headers, expected) in cases {
        let body = (method == "POST").then_some(decision).flatten();
        assert_eq!(status(method, path, &headers, body), expected, "{what}");
    }
    let unauthorized = request(serve.addr, "GET", "/api/sessions", &[("Host", &host)], None);
    assert_eq!(
        unauthorized.json(),
        json!({"error": "the token is required"})
    );
    assert_eq!(unauthorized.header("www-authenticate"), Some("Bearer"));

    // The page trades the token for a cookie that is HttpOnly and SameSite=Strict.
    let login = request(
        serve.addr,
        "POST",
        "/api/login",
        &[
            ("Host", &host),
            ("Origin", &origin),
            ("Authorization", &bearer),
        ],
        Some(""),
    );
    assert_eq!(login.status, 204, "{login:?}");
    let set_cookie = login.header("set-cookie").unwrap().to_owned();
    assert!(
        set_cookie.contains("HttpOnly") && set_cookie.contains("SameSite=Strict"),
        "{set_cookie}"
    );
    let cookie = set_cookie.split(';').next().unwrap().to_owned();
    assert!(
        !cookie.contains(&serve.token),
        "the cookie is not the token"
    );
    fn with<'a>(
        host: &'a str,
        cookie: &'a str,
        extra: &[(&'a str, &'a str)],
    ) -> Vec<(&'a str, &'a str)> {
        let mut headers = vec![("Host", host), ("Cookie", cookie)];
        headers.extend_from_slice(extra);
        headers
    }
    let with_cookie = |extra: &[(&'static str, &'static str)]| with(&host, &cookie, extra);
    assert_eq!(status("GET", "/api/sessions", &with_cookie(&[]), None), 200);
    assert_eq!(
        status("POST", &answer_path, &with_cookie(&[]), decision),
        403,
        "a change by cookie needs its Origin"
    );
    assert_eq!(
        status(
            "POST",
            &answer_path,
            &with_cookie(&[("Origin", "http://evil.example")]),
            decision
        ),
        403
    );
    assert_eq!(tau.proof(), None, "nothing was approved on the way");
    assert_eq!(
        status(
            "POST",
            &answer_path,
            &with(&host, &cookie, &[("Origin", &origin)]),
            decision
        ),
        200
    );
    serve.until_answered(&session, "Done.");
    assert_eq!(tau.proof().as_deref(), Some("made\n"));

    // Every response carries the page's protections.
    let page = request(serve.addr, "GET", "/", &[("Host", &host)], None);
    assert_eq!(page.status, 200);
    let csp = page.header("content-security-policy").unwrap();
    assert!(
        csp.contains("default-src 'none'") && csp.contains("script-src 'self'"),
        "{csp}"
    );
    assert!(!csp.contains("unsafe-inline"), "{csp}");
    assert_eq!(page.header("x-content-type-options"), Some("nosniff"));
    assert_eq!(page.header("x-frame-options"), Some("DENY"));
    serve.kill_hard();
}

#[test]
fn bad_input_gets_a_clear_error_and_runs_nothing() {
    let tau = Tau::new();
    let serve = tau.serve(&tau.make_proof(), &tau.serve_config(""));
    let session = serve.new_session();
    let row = serve.ask(&session, "make a file");
    let id = row["id"].as_str().unwrap();
    let answer_path = format!("/api/approvals/{id}");
    let huge = "x".repeat(70 * 1024);
    let cases: Vec<(&str, String, String, u16, &str)> = vec![
        (
            "an unknown id",
            "/api/approvals/ap_00000000000000000000000000000000".into(),
            r#"{"decision":"approve"}"#.into(),
            404,
            "no such approval",
        ),
        (
            "a malformed id",
            "/api/approvals/..%2F..%2Fetc".into(),
            r#"{"decision":"approve"}"#.into(),
            404,
            "no such approval",
        ),
        (
            "an id in capitals",
            answer_path
                .to_uppercase()
                .replace("/API/APPROVALS/", "/api/approvals/"),
            r#"{"decision":"approve"}"#.into(),
            404,
            "no such approval",
        ),
        (
            "a capital decision",
            answer_path.clone(),
            r#"{"decision":"Approve"}"#.into(),
            400,
            "",
        ),
        (
            "yes",
            answer_path.clone(),
            r#"{"decision":"yes"}"#.into(),
            400,
            "",
        ),
        (
            "true",
            answer_path.clone(),
            r#"{"decision":true}"#.into(),
            400,
            "",
        ),
        (
            "an extra field",
            answer_path.clone(),
            r#"{"decision":"approve","user":"admin"}"#.into(),
            400,
            "",
        ),
        (
            "two decisions",
            answer_path.clone(),
            r#"{"decision":"reject","decision":"approve"}"#.into(),
            400,
            "",
        ),
        ("not JSON", answer_path.clone(), "approve".into(), 400, ""),
        ("an empty body", answer_path.clone(), String::new(), 400, ""),
        (
            "a huge body",
            answer_path.clone(),
            format!(r#"{{"decision":"approve","x":"{huge}"}}"#),
            413,
            "the body is too large",
        ),
        (
            "a message to no session",
            "/api/sessions/web-nope/messages".into(),
            r#"{"text":"hi"}"#.into(),
            404,
            "no such session",
        ),
        (
            "a session name with a path",
            "/api/sessions/..%2Fstate.db/messages".into(),
            r#"{"text":"hi"}"#.into(),
            404,
            "no such session",
        ),
        (
            "an empty message",
            format!("/api/sessions/{session}/messages"),
            r#"{"text":"  "}"#.into(),
            400,
            "the text is empty",
        ),
        (
            "a message that is not text",
            format!("/api/sessions/{session}/messages"),
            r#"{"text":["hi"]}"#.into(),
            400,
            "",
        ),
    ];
    for (what, path, body, expected, error) in cases {
        let reply = serve.post(&path, &body);
        assert_eq!(reply.status, expected, "{what}: {reply:?}");
        if !error.is_empty() {
            assert_eq!(reply.json()["error"], error, "{what}");
        }
        if expected == 400 && path == answer_path {
            assert_eq!(
                reply.json()["error"],
                r#"the body must be {"decision": "approve", "card_sha256": "..."} or {"decision": "reject"}, with "confirm" for a question's second step or "grant" ({"scope": "conversation" or "channel", "hours", "max_uses"}) to allow the same call again"#
            );
        }
    }
    let bogus = serve.get("/api/approvals?state=maybe");
    assert_eq!(bogus.status, 400);
    assert_eq!(serve.get("/api/sessions/web-nope/messages").status, 404);
    assert_eq!(serve.get("/api/nothing").status, 404);
    // Nothing ran, the question still waits, and the hub still answers.
    assert_eq!(tau.proof(), None);
    let pending = serve.get("/api/approvals?state=pending").json();
    assert_eq!(pending[0]["id"], json!(id));
    assert_eq!(serve.get("/api/sessions").status, 200);
    serve.kill_hard();
}

#[test]
fn a_slow_client_and_a_vanished_stream_do_not_hold_anyone_up() {
    use std::io::Write;
    let tau = Tau::new();
    let serve = tau.serve(&tau.make_proof(), &tau.serve_config(""));
    let session = serve.new_session();
    // A client that sends half a request head and then nothing.
    let mut slow = std::net::TcpStream::connect(serve.addr).unwrap();
    slow.write_all(b"POST /api/sessions HTTP/1.1\r\nHost: ")
        .unwrap();
    // A stream reader that goes away.
    drop(Events::open(&serve, &session));
    // A stream reader that stays but never reads.
    let _idle = Events::open(&serve, &session);
    let started = std::time::Instant::now();
    let row = serve.ask(&session, "make a file");
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    let id = row["id"].as_str().unwrap();
    assert_eq!(serve.approve(id).status, 200);
    serve.until_answered(&session, "Done.");
    drop(slow);
    serve.kill_hard();
}

#[test]
fn an_address_off_loopback_needs_its_own_setting() {
    let tau = Tau::new();
    let config = tau.config("[web]\nlisten = \"0.0.0.0:0\"\n");
    let run = tau.run(
        &[
            "--config",
            config.to_str().unwrap(),
            "--model",
            &tau.make_proof(),
            "serve",
        ],
        "",
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("web.allow_remote = true"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("plain HTTP"), "{}", run.stderr);
}

#[test]
fn the_display_view_escapes_what_the_model_wrote_and_the_raw_view_keeps_it() {
    let tau = Tau::new();
    let hostile = "<b>bold</b> \u{202e}txt.exe \u{1b}[2J";
    let model = tau.replay(&json!([
        tool_call("t1", "run_command", &json!({"command": "echo \u{200b}hi"})),
        answer(hostile),
    ]));
    let serve = tau.serve(&model, &tau.serve_config(""));
    let session = serve.new_session();
    let row = serve.ask(&session, "go");
    let shown = serve
        .get("/api/approvals?state=pending&display=true")
        .json();
    assert_eq!(shown[0]["arguments"], r#"{"command":"echo \u{200b}hi"}"#);
    assert_eq!(
        row["arguments"], "{\"command\":\"echo \u{200b}hi\"}",
        "raw as stored"
    );
    let id = row["id"].as_str().unwrap();
    let mut events = Events::open(&serve, &session);
    serve.post(&format!("/api/approvals/{id}"), r#"{"decision":"reject"}"#);
    let raw = serve.until_answered(&session, hostile);
    assert_eq!(raw.last().unwrap()["content"][0]["text"], hostile);
    let displayed = serve
        .get(&format!("/api/sessions/{session}/messages?display=true"))
        .json();
    assert_eq!(
        displayed.as_array().unwrap().last().unwrap()["content"][0]["text"],
        r"<b>bold</b> \u{202e}txt.exe \u{1b}[2J"
    );
    // The stream's raw events carry the text as the model sent it.
    let streamed: String = events
        .until_turn_ends("end_turn")
        .iter()
        .filter(|e| e["data"]["type"] == "text_delta")
        .map(|e| e["data"]["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(streamed, hostile);
    serve.kill_hard();
}
