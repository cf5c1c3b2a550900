//! The approval card: a modal naming the tool, its tier, tau's own text of the effect and
//! every argument whole, scrollable when long. Its answers are guarded: a key pressed
//! before the card was drawn, or within [`ANSWER_GUARD`] after, is not an answer, and `y`
//! counts only once the whole card has been on screen.

use std::time::{Duration, Instant};

use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use serde_json::Value;
use tau_core::{display, display_multiline};
use tau_protocol::{ApprovalId, ApprovalQuestion, CallCard, CardNote, GrantOffer, NoteLevel, Tier};

use crate::args::pretty;
use crate::texts::Texts;
use crate::wrap::{width, wrap};

/// How long after a card is first drawn keys still do not answer it: long enough for a
/// key already on its way (typing ahead, a repeat) to land harmlessly.
pub(crate) const ANSWER_GUARD: Duration = Duration::from_millis(300);

/// One open question, as its `approval_requested` event described it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Card {
    pub approval_id: ApprovalId,
    pub tool: String,
    pub tier: Tier,
    /// tau's own text, from the tool's registration; never the model's.
    pub effect: String,
    pub arguments: Value,
    /// What tau says about the call besides its effect.
    pub call_card: CallCard,
    /// When the gate withdraws the question.
    pub deadline: Option<jiff::Timestamp>,
    /// When the card was first on screen.
    pub shown_at: Option<Instant>,
    /// The first body row in the window.
    pub scroll: usize,
    /// The last body row has been on screen.
    pub seen_end: bool,
    /// A key came before the guard time was over.
    pub ignored_early: bool,
    /// What the person typed so far for the card's second step.
    pub typed: String,
    /// A bare yes was entered on a card with a second step.
    pub bare_yes: bool,
    /// What a grant made from this question would cover ("yes, and allow this again"),
    /// when the gate offers one.
    pub grant: Option<GrantOffer>,
    /// No yes given here approves the question (it takes a passkey, or is not the
    /// person's): the card offers only the key that refuses it.
    pub no_yes: bool,
}

impl Card {
    pub(crate) fn new(question: &ApprovalQuestion) -> Self {
        Self {
            approval_id: question.approval_id.clone(),
            tool: question.tool.clone(),
            tier: question.tier,
            effect: question.effect.clone(),
            arguments: question.arguments.clone(),
            call_card: question.card.clone(),
            deadline: question.deadline.as_deref().and_then(|d| d.parse().ok()),
            shown_at: None,
            scroll: 0,
            seen_end: false,
            ignored_early: false,
            typed: String::new(),
            bare_yes: false,
            grant: question.grant.clone(),
            no_yes: false,
        }
    }

    /// Adds a typed character to the card's field (the second step's answer or the grant's
    /// word), up to `max` characters.
    pub(crate) fn type_char(&mut self, c: char, max: usize) {
        if self.typed.chars().count() < max {
            self.typed.push(c);
        }
    }

    /// True when a key read at `at` can answer this card: it was drawn, and the guard
    /// time had passed when the key came.
    pub(crate) fn answers_at(&self, at: Instant) -> bool {
        self.shown_at
            .is_some_and(|shown| at.saturating_duration_since(shown) >= ANSWER_GUARD)
    }
}

/// What the card's footer needs to know besides the card.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Moment {
    pub now: Instant,
    pub wall: jiff::Timestamp,
    /// Questions behind this one.
    pub waiting: usize,
}

/// The card laid out in a frame: where it goes and every row it has.
pub(crate) struct CardView {
    pub rect: Rect,
    pub title: Line<'static>,
    pub body: Vec<Line<'static>>,
    pub footer: Vec<Line<'static>>,
    /// Body rows that fit in the window.
    pub window: usize,
}

impl CardView {
    pub(crate) fn max_scroll(&self) -> usize {
        self.body.len().saturating_sub(self.window)
    }

    /// Lays `card` out in `area` (the screen above the status bar).
    pub(crate) fn new(card: &Card, area: Rect, t: &Texts, moment: Moment) -> Self {
        let outer_width = if area.width >= 50 {
            (area.width - 4).min(84)
        } else {
            area.width
        };
        // A cell of padding on each side inside the border.
        let inner_width = usize::from(outer_width.saturating_sub(4));
        let body = body(card, inner_width, t);
        let inner_limit = usize::from(area.height.saturating_sub(2));
        // Rows below the window, for a window of `window` rows at the card's scroll.
        let hidden = |window: usize| {
            let scroll = card.scroll.min(body.len().saturating_sub(window));
            body.len().saturating_sub(scroll + window)
        };
        let mut footer = footer(card, inner_width, t, moment, 0);
        let mut window = inner_limit.saturating_sub(footer.len());
        if hidden(window) > 0 {
            // The note on what is below may take a row of the window.
            footer = self::footer(card, inner_width, t, moment, hidden(window));
            window = inner_limit.saturating_sub(footer.len());
            footer = self::footer(card, inner_width, t, moment, hidden(window));
        }
        let window = window.min(body.len());
        let inner_height = u16::try_from(window + footer.len()).unwrap_or(u16::MAX);
        let height = inner_height.saturating_add(2).min(area.height);
        let rect = Rect {
            x: area.x + (area.width - outer_width) / 2,
            y: area.y + (area.height - height) / 2,
            width: outer_width,
            height,
        };
        let title = Line::from(Span::styled(
            format!(" {} ", t.card_title),
            Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD),
        ));
        Self {
            rect,
            title,
            body,
            footer,
            window,
        }
    }
}

fn dim() -> Style {
    Style::new().fg(Color::DarkGray)
}

/// The rows of the card's body: tau's headline, tool, tier, effect, tau's notes, then every
/// argument.
fn body(card: &Card, columns: usize, t: &Texts) -> Vec<Line<'static>> {
    let label_width = [t.tool, t.tier, t.effect]
        .iter()
        .map(|l| width(l))
        .max()
        .unwrap_or(0)
        + 2;
    let mut rows = Vec::new();
    if let Some(headline) = &card.call_card.headline {
        for piece in wrap(&display(headline), columns) {
            rows.push(Line::from(Span::styled(
                piece,
                Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD),
            )));
        }
    }
    let labelled = |rows: &mut Vec<Line<'static>>, label: &str, value: String, style: Style| {
        let value_columns = columns.saturating_sub(label_width);
        for (i, piece) in wrap(&value, value_columns).into_iter().enumerate() {
            let head = if i == 0 { label } else { "" };
            let pad = label_width.saturating_sub(width(head));
            rows.push(Line::from(vec![
                Span::styled(format!("{head}{}", " ".repeat(pad)), dim()),
                Span::styled(piece, style),
            ]));
        }
    };
    labelled(
        &mut rows,
        t.tool,
        display(&card.tool),
        Style::new().add_modifier(Modifier::BOLD),
    );
    labelled(
        &mut rows,
        t.tier,
        card.tier.to_string(),
        tier_style(Some(card.tier)),
    );
    labelled(&mut rows, t.effect, display(&card.effect), Style::new());
    for note in &card.call_card.notes {
        rows.extend(note_rows(note, columns));
    }
    rows.push(Line::from(Span::styled(t.arguments.to_owned(), dim())));
    rows.extend(argument_rows(&card.arguments, columns, t));
    // What `always` would make, in tau's words, inside the card: it scrolls with it, and
    // a small screen keeps its footer to the keys.
    if let Some(offer) = &card.grant {
        let line = if offer.pins_workspace {
            t.grant_line_pinned
        } else {
            t.grant_line
        };
        let line = line.replace("{hours}", &offer.hours.to_string());
        for piece in wrap(&line, columns) {
            rows.push(Line::from(Span::styled(
                piece,
                Style::new().fg(Color::Cyan),
            )));
        }
        if let Some(suggestion) = &offer.suggestion {
            for piece in wrap(&format!("☆ {}", suggestion.text()), columns) {
                rows.push(Line::from(Span::styled(
                    piece,
                    Style::new().fg(Color::Cyan),
                )));
            }
        }
    }
    rows
}

/// A note of tau's: its label and line (a warning marked and loud), then its detail
/// indented, every row of it: the card scrolls, and a yes waits until its end was seen.
fn note_rows(note: &CardNote, columns: usize) -> Vec<Line<'static>> {
    let (mark, style) = match note.level {
        NoteLevel::Info => ("·", Style::new().fg(Color::Cyan)),
        NoteLevel::Warning => (
            "⚠",
            Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD),
        ),
    };
    let line = format!("{mark} {}: {}", display(&note.label), display(&note.text));
    let mut rows: Vec<Line<'static>> = wrap(&line, columns)
        .into_iter()
        .map(|piece| Line::from(Span::styled(piece, style)))
        .collect();
    if let Some(detail) = &note.detail {
        for text_line in display_multiline(detail).replace('\t', "    ").lines() {
            for piece in wrap(text_line, columns.saturating_sub(4)) {
                rows.push(Line::from(vec![Span::raw("  │ "), Span::raw(piece)]));
            }
        }
    }
    rows
}

/// Pretty-printed arguments wrapped at `columns`, for the card and an expanded call.
pub(crate) fn argument_rows(arguments: &Value, columns: usize, t: &Texts) -> Vec<Line<'static>> {
    let mut rows = Vec::new();
    for arg in pretty(arguments, t) {
        let indent = 2 * arg.depth;
        let pieces = wrap(&arg.text, columns.saturating_sub(indent + 2));
        let last = pieces.len().saturating_sub(1);
        for (i, piece) in pieces.into_iter().enumerate() {
            let pad = if i == 0 { indent } else { indent + 2 };
            let mut spans = vec![Span::raw(" ".repeat(pad)), Span::raw(piece)];
            if i == last
                && let Some(note) = &arg.note
            {
                let note = format!("  ({note})");
                let used: usize = spans.iter().map(|s| width(&s.content)).sum();
                if used + width(&note) <= columns {
                    spans.push(Span::styled(note, dim()));
                } else {
                    rows.push(Line::from(spans));
                    spans = vec![
                        Span::raw(" ".repeat(indent + 2)),
                        Span::styled(note.trim_start().to_owned(), dim()),
                    ];
                }
            }
            rows.push(Line::from(spans));
        }
    }
    rows
}

/// The footer: what else the person should know, then the keys that answer.
fn footer(
    card: &Card,
    columns: usize,
    t: &Texts,
    moment: Moment,
    hidden: usize,
) -> Vec<Line<'static>> {
    let mut notes: Vec<String> = Vec::new();
    if hidden == 1 {
        notes.push(t.more_line.to_owned());
    } else if hidden > 1 {
        notes.push(t.more_lines.replace("{n}", &hidden.to_string()));
    }
    if let Some(deadline) = card.deadline {
        let left = deadline
            .duration_since(moment.wall)
            .as_secs()
            .max(0)
            .unsigned_abs();
        let time = format!("{}:{:02}", left / 60, left % 60);
        notes.push(t.withdrawn_in.replace("{time}", &time));
    }
    if moment.waiting > 0 {
        notes.push(t.more_waiting.replace("{n}", &moment.waiting.to_string()));
    }
    if card.ignored_early {
        notes.push(t.early_key.to_owned());
    }
    if card.bare_yes {
        notes.push(t.bare_yes.to_owned());
    }
    let mut rows = pack(&notes, columns, Style::new().fg(Color::Yellow));
    let keys: Vec<String> = match &card.call_card.confirm {
        _ if !card.answers_at(moment.now) => vec![t.wait.to_owned()],
        _ if card.no_yes => vec![t.reject_key.to_owned()],
        Some(step) => {
            let mut keys = vec![
                t.step_keys
                    .replace("{word}", &display(&step.word))
                    .replace("{code}", &display(&step.code)),
                t.step_reject_key.to_owned(),
            ];
            if !(card.seen_end || hidden == 0) {
                keys.push(t.scroll_first.to_owned());
            }
            keys.push(t.step_typed.replace("{typed}", &display(&card.typed)));
            keys
        }
        None if card.seen_end || hidden == 0 => {
            let mut keys = vec![t.approve_key.to_owned()];
            if card.grant.is_some() {
                keys.push(t.grant_key.to_owned());
            }
            keys.push(t.reject_key.to_owned());
            if !card.typed.is_empty() {
                keys.push(t.step_typed.replace("{typed}", &display(&card.typed)));
            }
            keys
        }
        None => vec![t.reject_key.to_owned(), t.scroll_first.to_owned()],
    };
    rows.extend(pack(
        &keys,
        columns,
        Style::new().add_modifier(Modifier::BOLD),
    ));
    rows
}

/// Items joined by ` · `, a new row where the next one would not fit; an item wider than
/// a row is wrapped.
fn pack(items: &[String], columns: usize, style: Style) -> Vec<Line<'static>> {
    let mut rows: Vec<String> = Vec::new();
    for item in items {
        match rows.last_mut() {
            Some(row) if width(row) + 3 + width(item) <= columns => {
                row.push_str(" · ");
                row.push_str(item);
            }
            _ => rows.extend(wrap(item, columns)),
        }
    }
    rows.into_iter()
        .map(|row| Line::from(Span::styled(row, style)))
        .collect()
}

/// The colour of a tier's badge: the higher the tier, the louder.
pub(crate) fn tier_style(tier: Option<Tier>) -> Style {
    let color = match tier {
        Some(Tier::Read) => Color::Green,
        Some(Tier::Write) => Color::Cyan,
        Some(Tier::Physical) => Color::Red,
        None => Color::Magenta,
    };
    Style::new().fg(color).add_modifier(Modifier::BOLD)
}
