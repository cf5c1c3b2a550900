//! The answer guard: only a deliberate key, on a card that was on screen long enough and
//! read to its end, answers; and only the card it was meant for.

use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use pretty_assertions::assert_eq;
use serde_json::json;
use tau_core::Language;
use tau_protocol::{Decision, Tier};

use super::*;
use crate::app::{Action, Phase};
use crate::card::ANSWER_GUARD;

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn ctrl(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
}

fn answer(id: &str, decision: Decision) -> Action {
    Action::Answer {
        approval_id: tau_protocol::ApprovalId::parse(id).unwrap(),
        decision,
        confirmation: None,
        grant: None,
    }
}

/// An app with one open card (not yet drawn) during a turn, at 80x24.
fn asking(arguments: serde_json::Value) -> App {
    let mut app = app(Language::En);
    app.size = Rect::new(0, 0, 80, 24);
    app.turn_started("go");
    app.event(&requested(
        "ap_1",
        "t1",
        "run_command",
        EFFECT,
        arguments,
        None,
    ));
    app
}

#[test]
fn keys_before_the_card_was_drawn_or_within_its_guard_are_not_answers() {
    let mut app = asking(command("ls"));
    let start = Instant::now();
    // Not drawn yet: no key answers it.
    assert_eq!(app.key(key(KeyCode::Char('y')), start), Action::Nothing);
    app.frame_drawn(start);
    // A key read before the frame (already queued when it was drawn) does not answer.
    let queued = start.checked_sub(Duration::from_millis(1)).unwrap_or(start);
    assert_eq!(app.key(key(KeyCode::Char('y')), queued), Action::Nothing);
    for early in [0, 1, 150, 299] {
        let at = start + Duration::from_millis(early);
        assert_eq!(
            app.key(key(KeyCode::Char('y')), at),
            Action::Nothing,
            "{early} ms"
        );
        assert_eq!(
            app.key(key(KeyCode::Esc), at),
            Action::Nothing,
            "{early} ms"
        );
        assert_eq!(
            app.key(key(KeyCode::Char('n')), at),
            Action::Nothing,
            "{early} ms"
        );
    }
    assert!(
        app.cards[0].ignored_early,
        "the card says a key was ignored"
    );
    assert_eq!(app.cards.len(), 1);
    assert_eq!(
        app.key(key(KeyCode::Char('y')), start + ANSWER_GUARD),
        answer("ap_1", Decision::Approved)
    );
    assert!(app.cards.is_empty());
}

#[test]
fn only_y_approves_and_n_or_esc_refuse() {
    let late = |app: &App| app.cards[0].shown_at.unwrap() + ANSWER_GUARD;
    for (pressed, expected) in [
        (key(KeyCode::Char('y')), Some(Decision::Approved)),
        (
            KeyEvent::new(KeyCode::Char('Y'), KeyModifiers::SHIFT),
            Some(Decision::Approved),
        ),
        (key(KeyCode::Char('n')), Some(Decision::Rejected)),
        (key(KeyCode::Char('N')), Some(Decision::Rejected)),
        (key(KeyCode::Esc), Some(Decision::Rejected)),
        (key(KeyCode::Enter), None),
        (key(KeyCode::Char(' ')), None),
        (key(KeyCode::Char('e')), None),
        (key(KeyCode::Char('1')), None),
        (ctrl('y'), None),
        (KeyEvent::new(KeyCode::Char('y'), KeyModifiers::ALT), None),
        (
            KeyEvent::new_with_kind(
                KeyCode::Char('y'),
                KeyModifiers::NONE,
                KeyEventKind::Release,
            ),
            None,
        ),
    ] {
        let mut app = asking(command("ls"));
        app.frame_drawn(Instant::now());
        let at = late(&app);
        let action = app.key(pressed, at);
        match expected {
            Some(decision) => assert_eq!(action, answer("ap_1", decision), "{pressed:?}"),
            None => {
                assert_eq!(action, Action::Nothing, "{pressed:?}");
                assert_eq!(app.cards.len(), 1, "{pressed:?}");
            }
        }
    }
}

#[test]
fn a_yes_counts_only_once_the_whole_card_was_on_screen() {
    let long = "word ".repeat(2_000);
    let mut app = asking(command(&long));
    let start = Instant::now();
    app.frame_drawn(start);
    let late = start + ANSWER_GUARD;
    assert!(!app.cards[0].seen_end);
    assert_eq!(app.key(key(KeyCode::Char('y')), late), Action::Nothing);
    assert_eq!(app.cards.len(), 1);
    // Scrolling to the end and being drawn there makes the yes count.
    assert_eq!(app.key(key(KeyCode::End), late), Action::Nothing);
    app.frame_drawn(late);
    assert!(app.cards[0].seen_end);
    assert_eq!(
        app.key(key(KeyCode::Char('y')), late),
        answer("ap_1", Decision::Approved)
    );
    // A refusal never needs the end.
    let mut app = asking(command(&long));
    app.frame_drawn(start);
    assert_eq!(
        app.key(key(KeyCode::Char('n')), late),
        answer("ap_1", Decision::Rejected)
    );
}

#[test]
fn the_next_card_is_not_answered_by_a_key_meant_for_the_first() {
    let mut app = asking(command("ls"));
    app.event(&requested(
        "ap_2",
        "t2",
        "run_command",
        EFFECT,
        command("rm -rf /"),
        None,
    ));
    let start = Instant::now();
    app.frame_drawn(start);
    let late = start + ANSWER_GUARD;
    assert_eq!(
        app.key(key(KeyCode::Char('y')), late),
        answer("ap_1", Decision::Approved)
    );
    // The second card has not been drawn: a repeated `y` is nothing.
    assert_eq!(app.key(key(KeyCode::Char('y')), late), Action::Nothing);
    assert_eq!(
        app.key(key(KeyCode::Char('y')), late + ANSWER_GUARD),
        Action::Nothing
    );
    app.frame_drawn(late + ANSWER_GUARD);
    assert_eq!(
        app.key(key(KeyCode::Char('y')), late + ANSWER_GUARD),
        Action::Nothing,
        "still within the second card's own guard"
    );
    assert_eq!(
        app.key(key(KeyCode::Char('n')), late + ANSWER_GUARD * 2),
        answer("ap_2", Decision::Rejected)
    );
}

#[test]
fn each_new_question_rings_once_and_nothing_else_rings() {
    let mut app = asking(command("ls"));
    assert_eq!(app.bells, 1);
    app.bells = 0;
    // The same question again, its decision, text, the turn's end: no bell.
    app.event(&requested(
        "ap_1",
        "t1",
        "run_command",
        EFFECT,
        command("ls"),
        None,
    ));
    app.event(&decided(
        "ap_1",
        "t1",
        Decision::Rejected,
        DecidedBy::Timeout,
    ));
    app.event(&text("done"));
    app.event(&ended(TurnStop::EndTurn));
    assert_eq!(app.bells, 0);
    app.event(&requested(
        "ap_2",
        "t2",
        "run_command",
        EFFECT,
        command("a"),
        None,
    ));
    app.event(&requested(
        "ap_3",
        "t3",
        "run_command",
        EFFECT,
        command("b"),
        None,
    ));
    assert_eq!(app.bells, 2);
}

#[test]
fn a_card_goes_when_its_question_is_decided_elsewhere_or_the_turn_ends() {
    let mut app = asking(command("ls"));
    app.event(&decided(
        "ap_1",
        "t1",
        Decision::Timeout,
        DecidedBy::Timeout,
    ));
    assert!(app.cards.is_empty());
    let mut app = asking(command("ls"));
    app.event(&ended(TurnStop::EndTurn));
    assert!(app.cards.is_empty());
}

#[test]
fn a_paste_or_typing_never_answers_and_never_reaches_the_input_behind_the_card() {
    let mut app = asking(command("ls"));
    let start = Instant::now();
    app.frame_drawn(start);
    app.paste("y\n");
    for c in ['a', 'b'] {
        assert_eq!(
            app.key(key(KeyCode::Char(c)), start + ANSWER_GUARD),
            Action::Nothing
        );
    }
    assert_eq!(app.cards.len(), 1);
    assert_eq!(app.input.text, "");
}

#[test]
fn ctrl_c_cancels_the_turn_closing_the_card_and_a_second_quits() {
    let mut app = asking(command("ls"));
    app.frame_drawn(Instant::now());
    assert_eq!(app.key(ctrl('c'), Instant::now()), Action::Cancel);
    assert!(app.cards.is_empty());
    assert_eq!(app.phase, Phase::Running { cancelling: true });
    assert_eq!(app.key(ctrl('c'), Instant::now()), Action::Quit);
}

#[test]
fn idle_ctrl_c_clears_the_input_first_then_quits() {
    let mut app = app(Language::En);
    app.input.insert("half a thought");
    assert_eq!(app.key(ctrl('c'), Instant::now()), Action::Nothing);
    assert_eq!(app.input.text, "");
    assert_eq!(app.key(ctrl('c'), Instant::now()), Action::Quit);
    assert_eq!(app.key(ctrl('d'), Instant::now()), Action::Quit);
}

#[test]
fn enter_sends_only_when_idle_and_alt_enter_adds_a_line() {
    let mut app = app(Language::En);
    let now = Instant::now();
    assert_eq!(
        app.key(key(KeyCode::Enter), now),
        Action::Nothing,
        "nothing typed"
    );
    for c in "hi".chars() {
        app.key(key(KeyCode::Char(c)), now);
    }
    app.key(KeyEvent::new(KeyCode::Enter, KeyModifiers::ALT), now);
    app.key(key(KeyCode::Char('x')), now);
    assert_eq!(
        app.key(key(KeyCode::Enter), now),
        Action::Submit("hi\nx".into())
    );
    app.turn_started("hi\nx");
    app.key(key(KeyCode::Char('z')), now);
    assert_eq!(
        app.key(key(KeyCode::Enter), now),
        Action::Nothing,
        "a turn runs"
    );
    assert_eq!(app.input.text, "z");
}

#[test]
fn tab_selects_calls_and_ctrl_o_expands_one() {
    let mut app = app(Language::En);
    app.size = Rect::new(0, 0, 80, 24);
    app.event(&started("t1", "clock", Some(Tier::Read), json!({})));
    app.event(&started("t2", "clock", Some(Tier::Read), json!({})));
    let now = Instant::now();
    app.key(key(KeyCode::Tab), now);
    assert_eq!(app.selected, Some(1));
    app.key(key(KeyCode::Tab), now);
    assert_eq!(app.selected, Some(0));
    app.key(ctrl('o'), now);
    let expanded: Vec<bool> = app
        .transcript
        .entries
        .iter()
        .filter_map(|e| match e {
            crate::transcript::Entry::Call(call) => Some(call.expanded),
            _ => None,
        })
        .collect();
    assert_eq!(expanded, [true, false]);
}

#[test]
fn page_up_stops_at_the_first_row_and_tab_brings_a_call_into_view() {
    let mut app = app(Language::En);
    app.size = Rect::new(0, 0, 80, 24);
    app.event(&started("t0", "clock", Some(Tier::Read), json!({})));
    for i in 0..60 {
        app.transcript
            .push(crate::transcript::Entry::Info(format!("line {i}")));
    }
    let now = Instant::now();
    for _ in 0..10 {
        app.key(key(KeyCode::PageUp), now);
    }
    let top = frame(&mut app, 80, 24);
    assert!(top.lines().next().unwrap().contains("[0] clock"), "{top}");
    app.key(key(KeyCode::PageDown), now);
    app.key(key(KeyCode::PageDown), now);
    app.key(key(KeyCode::PageDown), now);
    app.key(key(KeyCode::PageDown), now);
    assert_eq!(app.scroll, 0);
    assert!(frame(&mut app, 80, 24).contains("line 59"));
    // The only call is far above: Tab scrolls it to the top of the window.
    app.key(key(KeyCode::Tab), now);
    let shown = frame(&mut app, 80, 24);
    assert!(
        shown.lines().next().unwrap().contains("▸ [0] clock"),
        "{shown}"
    );
}

#[test]
fn a_paste_beyond_the_limit_is_cut_and_the_transcript_says_so() {
    let mut app = app(Language::En);
    app.paste(&"é".repeat(40_000));
    assert_eq!(app.input.text.len(), crate::input::MAX_INPUT_BYTES);
    assert_eq!(
        app.transcript.entries.last(),
        Some(&crate::transcript::Entry::Info(
            "the paste was cut: a prompt holds at most 64 KiB".into()
        ))
    );
    // A frame with the longest input is drawn without trouble.
    let _ = buffer(&mut app, 80, 24);
}
