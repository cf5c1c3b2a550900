//! The frame, as a pure function of [`App`]: the transcript, the input line, the status
//! bar and, over them, the approval card. Everything that did not come from tau passes
//! through tau-core's display function before it becomes a cell, and every row is wrapped
//! to its box here, so no text can reach past its box or into the terminal as a control.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Borders, Clear, Paragraph};
use tau_core::display;

use crate::app::{App, Phase};
use crate::rows::entry_rows;
use crate::wrap::{shorten, width, wrap};

/// The most rows the input line grows to.
const MAX_INPUT_ROWS: usize = 5;
/// Where the input text starts: after `> `.
const INPUT_PREFIX: usize = 2;

/// Where each part of the screen goes.
pub(crate) struct Areas {
    pub transcript: Rect,
    pub input_title: Rect,
    pub input: Rect,
    pub status: Rect,
}

/// Splits `area`: the transcript takes what the input line and the status bar leave.
pub(crate) fn areas(app: &App, area: Rect) -> Areas {
    areas_with(area, input_rows(app, usize::from(area.width)).0.len())
}

fn areas_with(area: Rect, input_rows: usize) -> Areas {
    let input_height = u16::try_from(input_rows.clamp(1, MAX_INPUT_ROWS)).unwrap_or(1);
    let status = Rect {
        y: area.y + area.height.saturating_sub(1),
        height: area.height.min(1),
        ..area
    };
    let above = area.height.saturating_sub(1);
    let input_height = input_height.min(above);
    let input = Rect {
        y: area.y + above - input_height,
        height: input_height,
        ..area
    };
    let title_height = u16::from(above > input_height);
    let input_title = Rect {
        y: input.y.saturating_sub(title_height),
        height: title_height,
        ..area
    };
    let transcript = Rect {
        height: above - input_height - title_height,
        ..area
    };
    Areas {
        transcript,
        input_title,
        input,
        status,
    }
}

/// The last transcript rows at `columns`: at least `needed` of them when the transcript
/// has that many, laid out from the newest entry back, so a frame costs what it shows and
/// not the length of the conversation.
pub(crate) fn tail_rows(app: &App, columns: usize, needed: usize) -> Vec<Line<'static>> {
    let mut pieces = Vec::new();
    let mut count = 0;
    for (i, entry) in app.transcript.entries.iter().enumerate().rev() {
        if count >= needed {
            break;
        }
        let rows = entry_rows(entry, columns, app.texts(), app.selected == Some(i), i > 0);
        count += rows.len();
        pieces.push(rows);
    }
    pieces.into_iter().rev().flatten().collect()
}

/// How many rows the entries from `index` to the newest take at `columns`.
pub(crate) fn rows_from(app: &App, columns: usize, index: usize) -> usize {
    app.transcript
        .entries
        .iter()
        .enumerate()
        .skip(index)
        .map(|(i, entry)| {
            entry_rows(entry, columns, app.texts(), app.selected == Some(i), i > 0).len()
        })
        .sum()
}

/// The input's rows (each character shown as the display function shows it) and the
/// cursor's row and column.
fn input_rows(app: &App, columns: usize) -> (Vec<String>, (usize, usize)) {
    let room = columns.saturating_sub(INPUT_PREFIX).max(1);
    let mut rows = vec![String::new()];
    // The width of the last row so far.
    let mut used = 0;
    let mut cursor = (0, 0);
    let text = &app.input.text;
    for (at, c) in text.char_indices() {
        if c == '\n' {
            if at == app.input.cursor {
                cursor = (rows.len() - 1, used);
            }
            rows.push(String::new());
            used = 0;
            continue;
        }
        let shown = display(c.encode_utf8(&mut [0; 4]));
        let shown_width = width(&shown);
        if used + shown_width > room {
            rows.push(String::new());
            used = 0;
        }
        if at == app.input.cursor {
            cursor = (rows.len() - 1, used);
        }
        if let Some(row) = rows.last_mut() {
            row.push_str(&shown);
        }
        used += shown_width;
    }
    if app.input.cursor >= text.len() {
        cursor = (rows.len() - 1, used);
    }
    (rows, cursor)
}

pub(crate) fn render(app: &App, frame: &mut Frame<'_>) {
    let area = frame.area();
    let columns = usize::from(area.width);
    let (input, (cursor_row, cursor_column)) = input_rows(app, columns);
    let parts = areas_with(area, input.len());
    let t = app.texts();

    // The transcript: the window `scroll` rows up from the bottom.
    let height = usize::from(parts.transcript.height);
    let rows = tail_rows(
        app,
        usize::from(parts.transcript.width),
        app.scroll + height,
    );
    let end = rows.len().saturating_sub(app.scroll);
    let start = end.saturating_sub(height);
    let window: Vec<Line<'static>> = rows.get(start..end).unwrap_or_default().to_vec();
    frame.render_widget(Paragraph::new(window), parts.transcript);

    // The input line and its title.
    let hint = match app.phase {
        Phase::Idle => t.input_title,
        Phase::Running { .. } => t.input_busy,
    };
    let title = shorten(&format!("─ {hint} "), columns);
    let fill = "─".repeat(columns.saturating_sub(width(&title)));
    frame.render_widget(
        Paragraph::new(Line::from(Span::styled(title + &fill, dim()))),
        parts.input_title,
    );
    let input_height = usize::from(parts.input.height);
    let first = (cursor_row + 1).saturating_sub(input_height);
    let lines: Vec<Line<'static>> = input
        .iter()
        .enumerate()
        .skip(first)
        .take(input_height)
        .map(|(i, row)| {
            let prefix = if i == 0 { "> " } else { "  " };
            Line::from(vec![Span::styled(prefix, dim()), Span::raw(row.clone())])
        })
        .collect();
    frame.render_widget(Paragraph::new(lines), parts.input);

    frame.render_widget(Paragraph::new(status_line(app)), parts.status);

    if let Some(view) = app.card_view() {
        // Everything behind the card fades, so nothing drawn beside it passes for part of it.
        frame
            .buffer_mut()
            .set_style(area, Style::new().add_modifier(Modifier::DIM));
        draw_card(app, frame, &view);
    } else if parts.input.height > 0 {
        let x = parts.input.x + u16::try_from(INPUT_PREFIX + cursor_column).unwrap_or(u16::MAX);
        let y = parts.input.y + u16::try_from(cursor_row - first).unwrap_or(0);
        if x < area.right() && y < area.bottom() {
            frame.set_cursor_position((x, y));
        }
    }
}

fn draw_card(app: &App, frame: &mut Frame<'_>, view: &crate::card::CardView) {
    let Some(card) = app.cards.front() else {
        return;
    };
    // The card's rows are its own from edge to edge: nothing is drawn beside it.
    let rows = Rect {
        x: frame.area().x,
        width: frame.area().width,
        ..view.rect
    };
    frame.render_widget(Clear, rows);
    let block = Block::new()
        .borders(Borders::ALL)
        .border_type(BorderType::Double)
        .border_style(Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD))
        .title(view.title.clone());
    let inner = block.inner(view.rect).inner(ratatui::layout::Margin {
        horizontal: 1,
        vertical: 0,
    });
    frame.render_widget(block, view.rect);
    let scroll = card.scroll.min(view.max_scroll());
    let mut lines: Vec<Line<'static>> = view
        .body
        .iter()
        .skip(scroll)
        .take(view.window)
        .cloned()
        .collect();
    lines.extend(view.footer.iter().cloned());
    frame.render_widget(Paragraph::new(lines), inner);
}

/// The status bar: the pending approvals first (they matter most), those waiting on other
/// channels when there are any, what tau is doing, what is left of the turn, the session
/// and the model.
fn status_line(app: &App) -> Line<'static> {
    let t = app.texts();
    let pending = app.pending_approvals();
    let approvals = t.approvals.replace("{n}", &pending.to_string());
    let left = app.max_turns.saturating_sub(app.calls_used);
    let calls = t
        .calls_left
        .replace("{n}", &left.to_string())
        .replace("{max}", &app.max_turns.to_string());
    let state = match app.phase {
        Phase::Idle => t.ready,
        Phase::Running { cancelling: false } => t.running,
        Phase::Running { cancelling: true } => t.cancelling,
    };
    let bar = Style::new().bg(Color::DarkGray).fg(Color::White);
    let approvals_style = if pending > 0 {
        Style::new()
            .bg(Color::Yellow)
            .fg(Color::Black)
            .add_modifier(Modifier::BOLD)
    } else {
        bar
    };
    let elsewhere = (app.waiting_elsewhere > 0).then(|| {
        (
            format!(
                " {} ",
                t.elsewhere
                    .replace("{n}", &app.waiting_elsewhere.to_string())
            ),
            Style::new().bg(Color::Yellow).fg(Color::Black),
        )
    });
    let parts = [
        Some((format!(" {approvals} "), approvals_style)),
        elsewhere,
        Some((format!(" {state} "), bar.add_modifier(Modifier::BOLD))),
        Some((format!(" {calls} "), bar)),
        Some((format!(" {} {} ", t.session, display(&app.session)), bar)),
        Some((format!(" {} ", display(&app.model)), bar)),
    ];
    let columns = usize::from(app.size.width);
    let mut used = 0;
    let mut spans = Vec::new();
    for (i, (text, style)) in parts.into_iter().flatten().enumerate() {
        let separator = if i > 0 { "│" } else { "" };
        let piece = format!("{separator}{text}");
        let room = columns.saturating_sub(used);
        if room == 0 {
            break;
        }
        let piece = shorten(&piece, room);
        used += width(&piece);
        spans.push(Span::styled(piece, style));
    }
    spans.push(Span::styled(" ".repeat(columns.saturating_sub(used)), bar));
    Line::from(spans)
}

pub(crate) fn dim() -> Style {
    Style::new().fg(Color::DarkGray)
}

/// `text` (escaped) wrapped at `columns` under `first`, continued under `rest`.
pub(crate) fn hanging(
    first: Vec<Span<'static>>,
    rest: &str,
    text: &str,
    columns: usize,
    style: Style,
) -> Vec<Line<'static>> {
    let prefix: usize = first.iter().map(|s| width(&s.content)).sum();
    let mut rows = Vec::new();
    let mut head = Some(first);
    for piece in wrap(text, columns.saturating_sub(prefix.max(width(rest)))) {
        let mut spans = head
            .take()
            .unwrap_or_else(|| vec![Span::styled(rest.to_owned(), dim())]);
        spans.push(Span::styled(piece, style));
        rows.push(Line::from(spans));
    }
    rows
}
