//! Frames as a person sees them (ratatui's `TestBackend`, pinned with insta), the answer
//! guard, and hostile text in every field.

mod devices;
mod frames;
mod grants;
mod hostile;
mod keys;

use std::time::{Duration, Instant};

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use serde_json::{Value, json};
use tau_core::Language;
use tau_protocol::{
    Approval, CallStatus, ChannelEvent, DecidedBy, Decision, NoticeKind, Tier, TurnStop, TurnUsage,
};

use crate::app::App;
use crate::transcript::Transcript;
use crate::ui::render;

/// A fixed wall clock, so countdowns are the same on every run.
pub(crate) fn wall() -> jiff::Timestamp {
    "2026-12-02T12:00:00Z".parse().unwrap()
}

pub(crate) fn app(language: Language) -> App {
    let mut app = App::new(
        language,
        Transcript::default(),
        "replay:convo.json".into(),
        "kitchen".into(),
        20,
    );
    app.wall = wall();
    app
}

/// The buffer of one frame of `app` at `width` x `height`.
pub(crate) fn buffer(app: &mut App, width: u16, height: u16) -> Buffer {
    app.size = Rect::new(0, 0, width, height);
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal.draw(|frame| render(app, frame)).unwrap();
    terminal.backend().buffer().clone()
}

/// One frame as text, a row per line.
pub(crate) fn frame(app: &mut App, width: u16, height: u16) -> String {
    app.size = Rect::new(0, 0, width, height);
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal.draw(|frame| render(app, frame)).unwrap();
    terminal.backend().to_string()
}

/// Both sizes of one state, one after the other, each as if the card had been drawn at
/// that size (whether it was read to its end depends on the size).
pub(crate) fn both(app: &mut App) -> String {
    let mut out = String::new();
    for (width, height) in [(80, 24), (40, 12)] {
        app.size = Rect::new(0, 0, width, height);
        if let Some(card) = app.cards.front_mut() {
            card.seen_end = false;
        }
        app.frame_drawn(app.now);
        out.push_str(&format!(
            "{width}x{height}\n{}\n",
            frame(app, width, height)
        ));
    }
    out
}

/// The front card as if it had been on screen long enough to be answered, read to its end.
pub(crate) fn settle_card(app: &mut App) {
    let shown = Instant::now();
    app.now = shown + Duration::from_secs(1);
    if let Some(card) = app.cards.front_mut() {
        card.shown_at = Some(shown);
    }
    app.frame_drawn(shown);
}

pub(crate) fn started(
    call_id: &str,
    tool: &str,
    tier: Option<Tier>,
    arguments: Value,
) -> ChannelEvent {
    ChannelEvent::ToolCallStarted {
        call_id: call_id.into(),
        tool: tool.into(),
        tier,
        effect: tier.map(|_| "an effect".into()),
        arguments,
    }
}

pub(crate) fn requested(
    approval_id: &str,
    call_id: &str,
    tool: &str,
    effect: &str,
    arguments: Value,
    deadline: Option<&str>,
) -> ChannelEvent {
    ChannelEvent::ApprovalRequested(Box::new(tau_protocol::ApprovalQuestion {
        approval_id: tau_protocol::ApprovalId::parse(approval_id).unwrap(),
        call_id: call_id.into(),
        tool: tool.into(),
        tier: Tier::Physical,
        effect: effect.into(),
        arguments,
        channel: "tui".into(),
        deadline: deadline.map(str::to_owned),
        card: Default::default(),
        grant: None,
    }))
}

pub(crate) fn decided(
    approval_id: &str,
    call_id: &str,
    decision: Decision,
    by: DecidedBy,
) -> ChannelEvent {
    ChannelEvent::ApprovalDecided {
        approval_id: tau_protocol::ApprovalId::parse(approval_id).unwrap(),
        call_id: call_id.into(),
        tool: "run_command".into(),
        ruling: tau_protocol::Ruling::new(decision, by),
        grant: None,
    }
}

pub(crate) fn finished(
    call_id: &str,
    tool: &str,
    status: CallStatus,
    approval: Approval,
    by: DecidedBy,
    duration_ms: Option<u64>,
    summary: &str,
) -> ChannelEvent {
    ChannelEvent::ToolCallFinished {
        call_id: call_id.into(),
        tool: tool.into(),
        fate: tau_protocol::CallFate {
            status,
            approval,
            decided_by: by,
        },
        duration_ms,
        result_summary: Some(summary.into()),
        provenance: Default::default(),
    }
}

pub(crate) fn text(text: &str) -> ChannelEvent {
    ChannelEvent::TextDelta { text: text.into() }
}

pub(crate) fn notice(kind: NoticeKind, text: &str) -> ChannelEvent {
    ChannelEvent::Notice {
        kind,
        text: text.into(),
    }
}

pub(crate) fn ended(stop_reason: TurnStop) -> ChannelEvent {
    ChannelEvent::TurnEnded {
        stop_reason,
        usage: TurnUsage::default(),
    }
}

pub(crate) const EFFECT: &str = "runs a shell command in the workspace — code the agent wrote";

pub(crate) fn command(command: &str) -> Value {
    json!({"command": command, "timeout_seconds": 30})
}
