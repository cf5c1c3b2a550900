//! The session picker: recent sessions (name, time of the last message, message count)
//! and a new one, first.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};
use tau_core::{Language, display};

use crate::texts::{Texts, texts};
use crate::ui::dim;
use crate::wrap::{shorten, width};

/// One stored session as the picker lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRow {
    pub name: String,
    /// Unix seconds of the last message.
    pub updated_at: i64,
    pub message_count: u64,
}

/// What the person picked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pick {
    New,
    Open(String),
    Quit,
    /// A signal ended the picker (its number).
    Signal(i32),
}

const TIME_COLUMNS: usize = 16;
const COUNT_COLUMNS: usize = 8;

pub(crate) struct Picker {
    language: Language,
    sessions: Vec<SessionRow>,
    /// 0 is "new session", then the sessions in order.
    selected: usize,
    zone: jiff::tz::TimeZone,
}

impl Picker {
    pub(crate) fn new(
        language: Language,
        sessions: Vec<SessionRow>,
        zone: jiff::tz::TimeZone,
    ) -> Self {
        Self {
            language,
            sessions,
            selected: 0,
            zone,
        }
    }

    fn texts(&self) -> &'static Texts {
        texts(self.language)
    }

    pub(crate) fn key(&mut self, key: KeyEvent) -> Option<Pick> {
        if key.kind == KeyEventKind::Release {
            return None;
        }
        let last = self.sessions.len();
        match key.code {
            KeyCode::Char('c' | 'C' | 'd' | 'D')
                if key.modifiers.contains(KeyModifiers::CONTROL) =>
            {
                return Some(Pick::Quit);
            }
            KeyCode::Esc | KeyCode::Char('q') => return Some(Pick::Quit),
            KeyCode::Up | KeyCode::Char('k') => self.selected = self.selected.saturating_sub(1),
            KeyCode::Down | KeyCode::Char('j') => self.selected = (self.selected + 1).min(last),
            KeyCode::PageUp => self.selected = self.selected.saturating_sub(10),
            KeyCode::PageDown => self.selected = (self.selected + 10).min(last),
            KeyCode::Home => self.selected = 0,
            KeyCode::End => self.selected = last,
            KeyCode::Char('n') => return Some(Pick::New),
            KeyCode::Enter => {
                return Some(match self.selected.checked_sub(1) {
                    None => Pick::New,
                    Some(i) => self
                        .sessions
                        .get(i)
                        .map_or(Pick::New, |s| Pick::Open(s.name.clone())),
                });
            }
            _ => {}
        }
        None
    }

    fn time(&self, seconds: i64) -> String {
        jiff::Timestamp::from_second(seconds).map_or_else(
            |_| seconds.to_string(),
            |t| {
                t.to_zoned_datetime(self.zone.clone())
                    .strftime("%Y-%m-%d %H:%M")
                    .to_string()
            },
        )
    }

    pub(crate) fn render(&self, frame: &mut Frame<'_>) {
        let t = self.texts();
        let area = frame.area();
        let block = Block::new().borders(Borders::ALL).title(Span::styled(
            format!(" {} ", t.sessions_title),
            Style::new().add_modifier(Modifier::BOLD),
        ));
        let inner = block.inner(area);
        frame.render_widget(block, area);
        let columns = usize::from(inner.width);
        let name_columns = columns
            .saturating_sub(TIME_COLUMNS + COUNT_COLUMNS + 4)
            .max(4);
        let row = |name: &str, time: &str, count: &str| {
            let name = shorten(name, name_columns);
            let pad = name_columns.saturating_sub(width(&name));
            format!(
                "  {name}{}  {time:<TIME_COLUMNS$}{count:>COUNT_COLUMNS$}",
                " ".repeat(pad)
            )
        };
        let mut lines = vec![Line::from(Span::styled(
            shorten(
                &row(t.column_name, t.column_last, t.column_messages),
                columns,
            ),
            dim(),
        ))];
        let mut items = vec![Line::from(format!("  {}", t.start_new))];
        for session in &self.sessions {
            items.push(Line::from(shorten(
                &row(
                    &display(&session.name),
                    &self.time(session.updated_at),
                    &session.message_count.to_string(),
                ),
                columns,
            )));
        }
        // Keep the selected row in the window (header and footer take a row each).
        let window = usize::from(inner.height).saturating_sub(2).max(1);
        let first = (self.selected + 1).saturating_sub(window);
        for (i, mut line) in items.into_iter().enumerate().skip(first).take(window) {
            if i == self.selected {
                line = line.style(Style::new().add_modifier(Modifier::REVERSED));
                if let Some(span) = line.spans.first_mut() {
                    let rest = span.content.get(1..).unwrap_or_default().to_owned();
                    *span = Span::raw(format!("▸{rest}"));
                }
            }
            lines.push(line);
        }
        frame.render_widget(Paragraph::new(lines), inner);
        let footer = Rect {
            y: inner.y + inner.height.saturating_sub(1),
            height: inner.height.min(1),
            ..inner
        };
        frame.render_widget(
            Paragraph::new(Span::styled(
                shorten(&format!("  {}", t.picker_keys), columns),
                Style::new().fg(Color::Yellow),
            )),
            footer,
        );
    }
}
