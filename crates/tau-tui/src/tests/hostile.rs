//! Hostile text in every field: it never reaches a cell as a control, never draws a card,
//! and never changes the layout outside its box.

use pretty_assertions::assert_eq;
use ratatui::buffer::Buffer;
use serde_json::json;
use tau_core::Language;
use tau_core::display::{RUN_CLOSE, RUN_OPEN, WRAP_MARK, is_escaped};
use tau_protocol::{Approval, CallStatus, DecidedBy, NoticeKind, Tier};

use super::*;

const FAKE_CARD: &str = "╔═ tau asks: approval needed ═══╗\n║ tool      run_command        ║\n║ y run it · n/Esc refuse      ║\n╚═══════════════════════════════╝";

/// Texts that try to rewrite, hide, reorder or imitate.
fn hostile() -> Vec<String> {
    vec![
        "\u{1b}[2J\u{1b}[1;1Hall clear".into(),
        "\u{1b}]0;owned\u{7}\u{1b}]8;;https://evil.example\u{1b}\\link".into(),
        "\u{9b}31mC1 \u{85}next".into(),
        "\u{202e}txt.exe\u{202c} \u{2066}isolate\u{2069}".into(),
        "in\u{200b}vis\u{200d}ible\u{2060}\u{feff}\u{34f}\u{fe0f}\u{e0041}".into(),
        "nul\u{0} cr\r back\u{8} tab\t del\u{7f}".into(),
        "line\u{2028}para\u{2029}end".into(),
        "marks ⟨20 spaces⟩ ↩ \u{2800}".into(),
        "wide 中文🙂 e\u{301}".into(),
        "x".repeat(3_000),
        format!("pad{}end", " ".repeat(20_000)),
        FAKE_CARD.into(),
    ]
}

/// Every cell holds only what can be shown: no control, format or invisible character;
/// the only marks are those tau draws itself.
fn assert_clean(buffer: &Buffer) {
    for cell in &buffer.content {
        for c in cell.symbol().chars() {
            let ours = matches!(c, WRAP_MARK | RUN_OPEN | RUN_CLOSE);
            assert!(
                ours || (!c.is_control() && !is_escaped(c)),
                "{c:?} reached a cell"
            );
        }
    }
}

fn rows(buffer: &Buffer) -> Vec<String> {
    let width = usize::from(buffer.area.width);
    buffer
        .content
        .chunks(width.max(1))
        .map(|cells| cells.iter().map(ratatui::buffer::Cell::symbol).collect())
        .collect()
}

fn transcript_app(texts: &[String]) -> App {
    let mut app = app(Language::En);
    for (i, hostile) in texts.iter().enumerate() {
        let id = format!("t{i}");
        app.turn_started(hostile);
        app.event(&text(hostile));
        app.event(&started(
            &id,
            hostile,
            Some(Tier::Read),
            json!({ hostile.clone(): hostile }),
        ));
        app.event(&ChannelEvent::ToolProgress {
            call_id: id.clone(),
            message: hostile.clone(),
        });
        app.event(&finished(
            &id,
            hostile,
            CallStatus::Error,
            Approval::NotRequired,
            DecidedBy::Exemption {
                name: hostile.clone(),
            },
            Some(1),
            hostile,
        ));
        app.event(&notice(NoticeKind::ModelError, hostile));
        if let Some(call) = app.transcript.call_mut(&id) {
            call.expanded = true;
            call.result = Some(hostile.clone());
        }
        app.turn_ended();
    }
    app.input.insert(&texts.join("\n"));
    app
}

#[test]
fn hostile_text_in_the_transcript_stays_in_its_rows_and_draws_no_card() {
    let mut hostile_app = transcript_app(&hostile());
    for (width, height) in [(80, 24), (40, 12), (23, 9)] {
        let mut benign = transcript_app(&["hello".into()]);
        benign.input.clear();
        hostile_app.input.clear();
        for scroll in [0, 7, 40, 400] {
            hostile_app.scroll = scroll;
            let hostile_buffer = buffer(&mut hostile_app, width, height);
            let benign_buffer = buffer(&mut benign, width, height);
            assert_clean(&hostile_buffer);
            let (h, b) = (rows(&hostile_buffer), rows(&benign_buffer));
            // The input title, the input and the status bar are the same as for harmless text.
            let tail = 3;
            assert_eq!(
                h[h.len() - tail..],
                b[b.len() - tail..],
                "{width}x{height} scrolled {scroll}"
            );
            // The model's imitation is in the transcript, behind its gutter, never a card.
            assert!(hostile_app.cards.is_empty());
            for row in &h[..h.len() - tail] {
                if row.contains("tau asks") {
                    assert!(
                        row.starts_with("tau │")
                            || row.starts_with("    │")
                            || row.starts_with("you │")
                            || row.starts_with("  "),
                        "{row:?}"
                    );
                }
            }
        }
    }
}

#[test]
fn hostile_text_in_every_field_of_the_card_stays_inside_its_border() {
    for hostile in hostile() {
        let mut app = app(Language::En);
        app.turn_started("go");
        let arguments = json!({ hostile.clone(): hostile, "nested": {"k": [hostile.clone()]} });
        app.event(&requested(
            "ap_1", "t1", &hostile, &hostile, arguments, None,
        ));
        settle_card(&mut app);
        for (width, height) in [(80, 24), (40, 12)] {
            let buffer = buffer(&mut app, width, height);
            assert_clean(&buffer);
            let view = app.card_view().unwrap();
            let rows = rows(&buffer);
            let rect = view.rect;
            for y in rect.y..rect.y + rect.height {
                let left = buffer[(rect.x, y)].symbol().to_owned();
                let right = buffer[(rect.x + rect.width - 1, y)].symbol().to_owned();
                let edge = if y == rect.y {
                    ("╔", "╗")
                } else if y == rect.y + rect.height - 1 {
                    ("╚", "╝")
                } else {
                    ("║", "║")
                };
                assert_eq!(
                    (left.as_str(), right.as_str()),
                    edge,
                    "{hostile:?} row {y}: {}",
                    rows[usize::from(y)]
                );
            }
            // The status bar below is untouched and counts the one question.
            assert!(
                rows.last().unwrap().contains("approvals: 1"),
                "{:?}",
                rows.last()
            );
        }
    }
}

#[test]
fn a_card_with_hostile_text_and_a_fake_card_in_the_model_text() {
    let mut app = app(Language::En);
    app.turn_started("clean up");
    app.event(&text(&format!("Sure.\n{FAKE_CARD}\n\u{1b}[2J\u{202e}done")));
    let arguments = json!({
        "command": "rm -rf ~/\u{202e}txt.exe\u{202c} #\u{200b}harmless",
        "\u{1b}[8mhidden": "\u{1b}]0;title\u{7}",
        "timeout_seconds": "30",
    });
    app.event(&started(
        "t1",
        "run_command\u{200d}",
        Some(Tier::Physical),
        arguments.clone(),
    ));
    app.event(&requested(
        "ap_1",
        "t1",
        "run_command\u{200d}",
        EFFECT,
        arguments,
        None,
    ));
    settle_card(&mut app);
    insta::assert_snapshot!(both(&mut app));
}
