//! A web conversation is named by its first prompt: `title` in `GET /api/sessions` is
//! the prompt's first line, cut at 60 characters, and through the display function in the
//! view the page reads; a conversation nobody wrote in yet has none.

use crate::common;

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

/// A person renames a conversation (and gives the name back to the first prompt), finds
/// conversations by title or message text, and deletes one with all its messages; a
/// conversation whose question waits is not deleted.
#[test]
fn conversations_are_renamed_found_and_deleted() {
    let tau = Tau::new();
    let model = tau.replay(&json!([answer("Done.")]));
    let serve = tau.serve(&model, &tau.serve_config(""));
    let talk = |text: &str| {
        let session = serve.new_session();
        let sent = serve.post(
            &format!("/api/sessions/{session}/messages"),
            &json!({ "text": text }).to_string(),
        );
        assert_eq!(sent.status, 202, "{sent:?}");
        serve.until_answered(&session, "Done.");
        session
    };
    let plants = talk("water the plants at 7");
    let lights = talk("dim the kitchen lights");
    let rename = |session: &str, body: &str| {
        serve.call("PATCH", &format!("/api/sessions/{session}"), Some(body))
    };

    let renamed = rename(&plants, r#"{"title": "  Garden\n chores "}"#);
    assert_eq!(renamed.status, 200, "{renamed:?}");
    assert_eq!(
        renamed.json(),
        json!({"id": plants, "title": "Garden chores"})
    );
    assert_eq!(
        listed(&serve, "/api/sessions", &plants)["title"],
        json!("Garden chores")
    );
    for (body, status) in [
        (r#"{"title": ""}"#.to_owned(), 422),
        (r#"{"title": "   "}"#.to_owned(), 422),
        (json!({ "title": "x".repeat(121) }).to_string(), 422),
        (r#"{"name": "x"}"#.to_owned(), 400),
        ("not json".to_owned(), 400),
    ] {
        assert_eq!(rename(&plants, &body).status, status, "{body}");
    }
    assert_eq!(rename("no-such-session", r#"{"title": "x"}"#).status, 404);

    // Search: by the title a person gave, by the text of a message; `%` is a character.
    let found = |text: &str| -> Vec<String> {
        let path = format!(
            "/api/sessions?search={}",
            text.replace('%', "%25").replace(' ', "%20")
        );
        serve
            .get(&path)
            .json()
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["id"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(found("garden"), vec![plants.clone()]);
    assert_eq!(found("KITCHEN"), vec![lights.clone()]);
    assert_eq!(found("Done"), {
        let mut both = vec![lights.clone(), plants.clone()];
        both.sort_by_key(|id| if id == &lights { 0 } else { 1 });
        both
    });
    assert!(found("%").is_empty());
    assert_eq!(serve.get("/api/sessions?query=x").status, 400);

    // Back to its first prompt's title.
    assert_eq!(rename(&plants, r#"{"title": null}"#).status, 200);
    assert_eq!(
        listed(&serve, "/api/sessions", &plants)["title"],
        json!("water the plants at 7")
    );

    // Deleted: gone from the list, its messages with it, its id unknown from now on.
    let deleted = serve.call("DELETE", &format!("/api/sessions/{lights}"), None);
    assert_eq!(deleted.status, 204, "{deleted:?}");
    let ids: Vec<Value> = serve
        .get("/api/sessions")
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].clone())
        .collect();
    assert_eq!(ids, vec![json!(plants)]);
    assert_eq!(
        serve
            .get(&format!("/api/sessions/{lights}/messages"))
            .status,
        404
    );
    assert_eq!(
        serve
            .call("DELETE", &format!("/api/sessions/{lights}"), None)
            .status,
        404
    );
    let db = rusqlite::Connection::open(tau.home().join("state.db")).unwrap();
    let left: i64 = db
        .query_row(
            "SELECT COUNT(*) FROM messages WHERE session_id = ?1",
            [&lights],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(left, 0);
}

/// A conversation whose question waits is not deleted (its turn would lose its home);
/// once the question is answered it can be.
#[test]
fn a_conversation_with_a_waiting_question_is_not_deleted() {
    let tau = Tau::new();
    let model = tau.replay(&json!([
        common::tool_call("t1", "run_command", &json!({"command": "true"})),
        answer("Ran.")
    ]));
    let serve = tau.serve(&model, &tau.serve_config(""));
    let session = serve.new_session();
    let row = serve.ask(&session, "run it");
    let refused = serve.call("DELETE", &format!("/api/sessions/{session}"), None);
    assert_eq!(refused.status, 409, "{refused:?}");
    assert_eq!(
        refused.json()["error"],
        json!("a question waits in this conversation: answer it first")
    );
    let id = row["id"].as_str().unwrap();
    let answered = serve.approve(id);
    assert_eq!(answered.status, 200);
    serve.until_answered(&session, "Ran.");
    // The turn winds down a moment after its answer is stored: 409 until then.
    serve.until(|serve| {
        let deleted = serve.call("DELETE", &format!("/api/sessions/{session}"), None);
        assert!([204, 409].contains(&deleted.status), "{deleted:?}");
        (deleted.status == 204).then_some(())
    });
}
