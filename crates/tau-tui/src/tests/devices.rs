//! Device cards as the registry writes them, on the TUI: one frame per kind, and the
//! second step of a lock-class device, which a bare `y` never passes.

use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use pretty_assertions::assert_eq;
use tau_core::Language;
use tau_protocol::{ChannelEvent, Decision};

use super::*;
use crate::app::Action;

fn questions() -> Vec<tau_protocol::ApprovalQuestion> {
    tau_devices::example::questions("tui", "47").unwrap()
}

/// An app showing the card of the `n`-th example call, answerable and read to its end.
fn showing(n: usize) -> App {
    let mut app = app(Language::En);
    app.turn_started("open the garage");
    let question = questions().remove(n);
    app.event(&started(
        &question.call_id,
        &question.tool,
        Some(tau_protocol::Tier::Physical),
        question.arguments.clone(),
    ));
    app.event(&ChannelEvent::ApprovalRequested(Box::new(question)));
    settle_card(&mut app);
    app
}

#[test]
fn every_kind_of_device_card_shows_tau_s_headline() {
    let mut frames = String::new();
    for n in 0..questions().len() {
        let mut app = showing(n);
        frames.push_str(&frame(&mut app, 80, 24));
        frames.push('\n');
    }
    // The model's reason imitates a headline; it shows quoted, under "the model says", and
    // in the arguments, never where tau's headline is.
    assert!(frames.contains("OPEN · Garage door (garage) — a lock-class device"));
    assert!(!frames.contains("║ switch OFF · Kitchen light"), "{frames}");
    insta::assert_snapshot!(frames);
}

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn type_text(app: &mut App, text: &str, at: Instant) -> Vec<Action> {
    let mut actions: Vec<Action> = text
        .chars()
        .map(|c| app.key(key(KeyCode::Char(c)), at))
        .collect();
    actions.push(app.key(key(KeyCode::Enter), at));
    actions
}

#[test]
fn a_bare_y_never_passes_the_second_step() {
    let mut app = showing(2);
    let later = app.now + Duration::from_secs(1);
    // `y` alone answers a plain card; here it is a letter in the field.
    assert_eq!(app.key(key(KeyCode::Char('y')), later), Action::Nothing);
    assert_eq!(app.cards.len(), 1);
    assert_eq!(app.key(key(KeyCode::Enter), later), Action::Nothing);
    assert_eq!(app.cards.len(), 1, "a bare y took the card away");
    for bare in ["yes", "E", "evet"] {
        let actions = type_text(&mut app, bare, later);
        assert!(actions.iter().all(|a| *a == Action::Nothing), "{bare}");
    }
    let shown = frame(&mut app, 80, 24);
    assert!(
        shown.contains("a bare yes does not run this call"),
        "{shown}"
    );
    insta::assert_snapshot!(shown);
    // Its name passes.
    let actions = type_text(&mut app, "garage-door", later);
    assert_eq!(
        actions.last(),
        Some(&Action::Answer {
            approval_id: tau_protocol::ApprovalId::parse(&format!("ap_{:032x}", 3)).unwrap(),
            decision: Decision::Approved,
            confirmation: Some("garage-door".into()),
            grant: None,
        })
    );
    assert!(app.cards.is_empty());
}

#[test]
fn the_number_passes_and_anything_else_refuses() {
    let mut app = showing(2);
    let later = app.now + Duration::from_secs(1);
    let actions = type_text(&mut app, "47", later);
    assert_eq!(
        actions.last(),
        Some(&Action::Answer {
            approval_id: tau_protocol::ApprovalId::parse(&format!("ap_{:032x}", 3)).unwrap(),
            decision: Decision::Approved,
            confirmation: Some("47".into()),
            grant: None,
        })
    );
    for other in ["48", "garage", "n"] {
        let mut app = showing(2);
        let actions = type_text(&mut app, other, later);
        assert_eq!(
            actions.last(),
            Some(&Action::Answer {
                approval_id: tau_protocol::ApprovalId::parse(&format!("ap_{:032x}", 3)).unwrap(),
                decision: Decision::Rejected,
                confirmation: None,
                grant: None,
            }),
            "{other}"
        );
    }
    let mut app = showing(2);
    assert_eq!(
        app.key(key(KeyCode::Esc), later),
        Action::Answer {
            approval_id: tau_protocol::ApprovalId::parse(&format!("ap_{:032x}", 3)).unwrap(),
            decision: Decision::Rejected,
            confirmation: None,
            grant: None,
        }
    );
}

#[test]
fn the_step_is_guarded_like_any_answer() {
    let mut app = app(Language::En);
    app.turn_started("open the garage");
    app.event(&ChannelEvent::ApprovalRequested(Box::new(
        questions().remove(2),
    )));
    let start = Instant::now();
    app.frame_drawn(start);
    // Typed ahead, within the guard: the Enter answers nothing and the field is emptied.
    let early = type_text(&mut app, "garage-door", start + Duration::from_millis(100));
    assert!(early.iter().all(|a| *a == Action::Nothing));
    assert!(app.cards.front().unwrap().typed.is_empty());
}
