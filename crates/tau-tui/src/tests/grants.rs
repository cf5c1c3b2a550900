//! "Yes, and allow this again" on the TUI: a card that offers a grant says what it would
//! cover, and only the word `always` and Enter make it; `y` still approves alone, and no
//! key typed ahead can make a grant.

use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use pretty_assertions::assert_eq;
use serde_json::json;
use tau_core::Language;
use tau_protocol::{ChannelEvent, Decision, GrantOffer};

use super::*;
use crate::app::Action;

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

/// An app showing a card that offers a grant, answerable and read to its end.
fn offering(language: Language) -> App {
    let mut app = app(language);
    app.turn_started("append x");
    app.event(&started(
        "t1",
        "run_command",
        Some(tau_protocol::Tier::Physical),
        command("echo x >> out.txt"),
    ));
    let ChannelEvent::ApprovalRequested(mut question) = requested(
        "ap_1",
        "t1",
        "run_command",
        EFFECT,
        command("echo x >> out.txt"),
        None,
    ) else {
        panic!("not a question");
    };
    question.grant = Some(GrantOffer {
        schema_sha256: "0".repeat(64),
        arguments_sha256: "1".repeat(64),
        card_sha256: "2".repeat(64),
        hours: 24,
        pins_workspace: true,
        suggestion: None,
    });
    // Asked again although a grant covers the call: a file it runs changed since.
    question.card.push(tau_protocol::CardNote::warning(
        tau_core::GRANT_LABEL,
        tau_core::asked_again_text(&["job.py".to_owned()]),
    ));
    app.event(&ChannelEvent::ApprovalRequested(question));
    settle_card(&mut app);
    app
}

fn answered(grant: bool) -> Action {
    answered_for(grant.then_some(tau_protocol::GrantScope::Conversation))
}

fn answered_for(grant: Option<tau_protocol::GrantScope>) -> Action {
    Action::Answer {
        approval_id: tau_protocol::ApprovalId::parse("ap_1").unwrap(),
        decision: Decision::Approved,
        confirmation: None,
        grant,
    }
}

fn typed(app: &mut App, text: &str, at: Instant) -> Vec<Action> {
    text.chars()
        .map(|c| app.key(key(KeyCode::Char(c)), at))
        .collect()
}

#[test]
fn the_card_says_what_a_grant_covers_and_how_to_make_it() {
    let mut app = offering(Language::En);
    let shown = frame(&mut app, 80, 24);
    assert!(
        shown.contains("↻ allow again: exactly this call for 24 h, if its files stay unchanged"),
        "{shown}"
    );
    assert!(
        shown.contains("y run it · always, Enter: allow again too (always all: all chats)"),
        "{shown}"
    );
    insta::assert_snapshot!(shown);
}

#[test]
fn always_and_enter_approve_and_grant_and_its_y_is_not_a_yes() {
    let mut app = offering(Language::En);
    let at = Instant::now() + Duration::from_secs(2);
    // "always" has a y in it: inside the word it is a letter, not an answer.
    assert!(
        typed(&mut app, "always", at)
            .iter()
            .all(|a| *a == Action::Nothing)
    );
    assert_eq!(app.cards.len(), 1);
    assert_eq!(app.key(key(KeyCode::Enter), at), answered(true));
    assert!(app.cards.is_empty());
}

#[test]
fn always_all_grants_for_every_conversation_here_and_a_space_starts_no_word() {
    let mut app = offering(Language::En);
    let at = Instant::now() + Duration::from_secs(2);
    // A space alone scrolls the card; inside a word it is part of it.
    assert_eq!(app.key(key(KeyCode::Char(' ')), at), Action::Nothing);
    assert!(app.cards[0].typed.is_empty());
    typed(&mut app, "always all", at);
    assert_eq!(
        app.key(key(KeyCode::Enter), at),
        answered_for(Some(tau_protocol::GrantScope::Channel))
    );
    // Anything more after `all` is no word tau takes.
    let mut app = offering(Language::En);
    typed(&mut app, "always all y", at);
    assert_eq!(app.key(key(KeyCode::Enter), at), Action::Nothing);
    assert_eq!(app.cards.len(), 1);
    for (word, scope) in [
        ("always", Some(tau_protocol::GrantScope::Conversation)),
        ("ALWAYS  All", Some(tau_protocol::GrantScope::Channel)),
        ("always al", None),
        ("all always", None),
    ] {
        assert_eq!(crate::app::card_keys::grant_scope(word), scope, "{word}");
    }
}

#[test]
fn y_alone_approves_without_a_grant_and_another_word_answers_nothing() {
    let mut app = offering(Language::En);
    let at = Instant::now() + Duration::from_secs(2);
    assert!(
        typed(&mut app, "alway", at)
            .iter()
            .all(|a| *a == Action::Nothing)
    );
    assert_eq!(
        app.key(key(KeyCode::Enter), at),
        Action::Nothing,
        "not the word"
    );
    assert_eq!(app.cards.len(), 1);
    assert!(app.cards[0].typed.is_empty(), "the wrong word is cleared");
    // Esc first clears a word being typed; the card stays.
    typed(&mut app, "alw", at);
    assert_eq!(app.key(key(KeyCode::Esc), at), Action::Nothing);
    assert_eq!(app.cards.len(), 1);
    assert_eq!(app.key(key(KeyCode::Char('y')), at), answered(false));
}

#[test]
fn the_word_typed_before_the_guard_ran_out_makes_no_grant() {
    let mut app = offering(Language::En);
    let shown = app.cards[0].shown_at.unwrap();
    // Typed while the card was still new: the word fills, but its Enter is not an answer.
    typed(&mut app, "always", shown);
    assert_eq!(app.key(key(KeyCode::Enter), shown), Action::Nothing);
    assert_eq!(app.cards.len(), 1);
    assert!(app.cards[0].ignored_early);
}

#[test]
fn a_card_without_an_offer_takes_no_word() {
    let mut app = app(Language::En);
    app.turn_started("go");
    app.event(&requested(
        "ap_1",
        "t1",
        "run_command",
        EFFECT,
        json!({"command": "ls"}),
        None,
    ));
    settle_card(&mut app);
    let at = Instant::now() + Duration::from_secs(2);
    for c in "always".chars() {
        let action = app.key(key(KeyCode::Char(c)), at);
        if c == 'y' {
            // Without an offer, y is the plain yes it always was.
            assert_eq!(action, answered(false));
            return;
        }
        assert_eq!(action, Action::Nothing);
    }
    panic!("y never answered");
}

/// A grants view that records what it was asked.
struct Listed {
    revoked: std::sync::Mutex<Vec<String>>,
}

impl crate::GrantCommands for Listed {
    fn list(&self) -> Vec<String> {
        vec![
            "gr_1  run_command (tier 2)  conversation s1".to_owned(),
            "  arguments {\"command\":\"npm run test\"}".to_owned(),
        ]
    }

    fn revoke(&self, id: &str) -> String {
        self.revoked.lock().unwrap().push(id.to_owned());
        format!("revoked {id}")
    }
}

#[test]
fn grants_and_revoke_are_answered_in_the_transcript_without_a_turn() {
    let listed = Listed {
        revoked: std::sync::Mutex::new(Vec::new()),
    };
    let mut app = app(Language::En);
    for prompt in ["/grants", "/revoke gr_1", "/revoke"] {
        let command = crate::commands::local(prompt).unwrap();
        app.local_command(prompt, command, &listed);
    }
    assert_eq!(app.phase, crate::app::Phase::Idle, "no turn started");
    assert_eq!(*listed.revoked.lock().unwrap(), vec!["gr_1".to_owned()]);
    insta::assert_snapshot!(frame(&mut app, 80, 14));
}
