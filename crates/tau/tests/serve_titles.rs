//! A web conversation is named by its first prompt: `title` in `GET /api/sessions` is
//! the prompt's first line, cut at 60 characters, and through the display function in the
//! view the page reads; a conversation nobody wrote in yet has none.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use common::{Tau, answer};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

fn listed(serve: &common::serve::Serve, path: &str, session: &str) -> Value {
    serve
        .get(path)
        .json()
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == session)
        .cloned()
        .unwrap()
}

#[test]
fn a_conversation_is_named_by_its_first_prompt() {
    let tau = Tau::new();
    let model = tau.replay(&json!([answer("Noon.")]));
    let serve = tau.serve(&model, &tau.serve_config(""));
    let session = serve.new_session();
    assert_eq!(
        listed(&serve, "/api/sessions", &session).get("title"),
        None,
        "nothing written yet"
    );
    let prompt = format!(
        "\n   what time is it {} and then some?\nsecond line",
        "x".repeat(60)
    );
    let sent = serve.post(
        &format!("/api/sessions/{session}/messages"),
        &json!({ "text": prompt }).to_string(),
    );
    assert_eq!(sent.status, 202, "{sent:?}");
    serve.until_answered(&session, "Noon.");
    let title = format!("what time is it {}", "x".repeat(44));
    assert_eq!(title.chars().count(), 60);
    assert_eq!(
        listed(&serve, "/api/sessions", &session)["title"],
        json!(format!("{title}…"))
    );

    // The page's view shows a hostile title escaped, like every text from outside.
    let other = serve.new_session();
    let sent = serve.post(
        &format!("/api/sessions/{other}/messages"),
        &json!({ "text": "rename \u{202e}gnp.exe" }).to_string(),
    );
    assert_eq!(sent.status, 202, "{sent:?}");
    serve.until_answered(&other, "Noon.");
    assert_eq!(
        listed(&serve, "/api/sessions?display=true", &other)["title"],
        json!("rename \\u{202e}gnp.exe")
    );
}
