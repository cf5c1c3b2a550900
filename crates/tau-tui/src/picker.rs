//! The session picker: recent sessions (title and name, time of the last message,
//! message count) and a new one, first. `/` filters by title or name as one types, `r`
//! renames the selected session, `d` deletes it after a `y`; the binary does both and
//! shows the picker again.

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
    /// What it is called (a person's title, else its first prompt's); untrusted text.
    pub title: Option<String>,
    /// Unix seconds of the last message.
    pub updated_at: i64,
    pub message_count: u64,
}

/// What the person picked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pick {
    New,
    Open(String),
    /// Name the session (an empty title gives back its first prompt's).
    Rename {
        name: String,
        title: String,
    },
    /// Delete the session, the person having said `y`.
    Delete(String),
    Quit,
    /// A signal ended the picker (its number).
    Signal(i32),
}

const COUNT_COLUMNS: usize = 8;

/// What the keys do now.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Mode {
    Choose,
    /// `/`: the typed text filters the list.
    Search(String),
    /// `r`: a new title for the selected session, as typed.
    Rename(String),
    /// `d`: `y` deletes the selected session, any other key keeps it.
    ConfirmDelete,
}

/// The longest text typed into the picker, in characters.
const MAX_TYPED: usize = 120;

pub(crate) struct Picker {
    language: Language,
    sessions: Vec<SessionRow>,
    /// 0 is "new session", then the shown sessions in order.
    selected: usize,
    zone: jiff::tz::TimeZone,
    mode: Mode,
    /// The filter last typed after `/` (kept while choosing).
    filter: String,
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
            mode: Mode::Choose,
            filter: String::new(),
        }
    }

    /// The sessions the filter lets through, in order.
    fn shown(&self) -> Vec<&SessionRow> {
        let wanted = self.filter.to_lowercase();
        self.sessions
            .iter()
            .filter(|s| {
                wanted.is_empty()
                    || s.name.to_lowercase().contains(&wanted)
                    || s.title
                        .as_deref()
                        .is_some_and(|t| t.to_lowercase().contains(&wanted))
            })
            .collect()
    }

    fn selected_session(&self) -> Option<&SessionRow> {
        let i = self.selected.checked_sub(1)?;
        self.shown().get(i).copied()
    }

    /// A key while typing a filter or a title: letters go in, Backspace takes one out,
    /// Esc leaves; Enter is the caller's.
    fn typing(text: &mut String, key: &KeyEvent) -> bool {
        match key.code {
            KeyCode::Char(c)
                if !key.modifiers.contains(KeyModifiers::CONTROL)
                    && !c.is_control()
                    && text.chars().count() < MAX_TYPED =>
            {
                text.push(c);
                true
            }
            KeyCode::Backspace => {
                text.pop();
                true
            }
            _ => false,
        }
    }

    /// A key in the search, rename or delete modes; `None` when it was taken there.
    fn key_in_mode(&mut self, key: &KeyEvent) -> Option<Option<Pick>> {
        match &mut self.mode {
            Mode::Choose => None,
            Mode::Search(text) => {
                if Self::typing(text, key) {
                    self.filter = text.clone();
                    self.selected = usize::from(!self.filter.is_empty()).min(self.shown().len());
                    return Some(None);
                }
                match key.code {
                    KeyCode::Esc => {
                        self.filter.clear();
                        self.mode = Mode::Choose;
                    }
                    KeyCode::Enter | KeyCode::Up | KeyCode::Down => self.mode = Mode::Choose,
                    _ => {}
                }
                Some(None)
            }
            Mode::Rename(text) => {
                if Self::typing(text, key) {
                    return Some(None);
                }
                match key.code {
                    KeyCode::Esc => self.mode = Mode::Choose,
                    KeyCode::Enter => {
                        let title = std::mem::take(text);
                        self.mode = Mode::Choose;
                        let name = self.selected_session()?.name.clone();
                        return Some(Some(Pick::Rename { name, title }));
                    }
                    _ => {}
                }
                Some(None)
            }
            Mode::ConfirmDelete => {
                self.mode = Mode::Choose;
                if matches!(key.code, KeyCode::Char('y' | 'Y')) {
                    let name = self.selected_session()?.name.clone();
                    return Some(Some(Pick::Delete(name)));
                }
                Some(None)
            }
        }
    }

    fn texts(&self) -> &'static Texts {
        texts(self.language)
    }

    pub(crate) fn key(&mut self, key: KeyEvent) -> Option<Pick> {
        if key.kind == KeyEventKind::Release {
            return None;
        }
        if key.modifiers.contains(KeyModifiers::CONTROL)
            && matches!(key.code, KeyCode::Char('c' | 'C' | 'd' | 'D'))
        {
            return Some(Pick::Quit);
        }
        if let Some(taken) = self.key_in_mode(&key) {
            return taken;
        }
        let last = self.shown().len();
        match key.code {
            KeyCode::Char('/') => self.mode = Mode::Search(self.filter.clone()),
            KeyCode::Char('r') if self.selected_session().is_some() => {
                self.mode = Mode::Rename(String::new());
            }
            KeyCode::Char('d') if self.selected_session().is_some() => {
                self.mode = Mode::ConfirmDelete;
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
                    Some(_) => self
                        .selected_session()
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
                    .strftime("%Y-%m-%d %H:%M %Z")
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
        let shown = self.shown();
        // `2026-12-02 14:33 +03`: each time with its zone's name (`UTC`, `CET`, `+0530`).
        let times: Vec<String> = shown.iter().map(|s| self.time(s.updated_at)).collect();
        let time_columns = times
            .iter()
            .map(|time| width(time))
            .chain([width(t.column_last)])
            .max()
            .unwrap_or_default();
        let name_columns = columns
            .saturating_sub(time_columns + COUNT_COLUMNS + 4)
            .max(4);
        let row = |name: &str, time: &str, count: &str| {
            let name = shorten(name, name_columns);
            let pad = name_columns.saturating_sub(width(&name));
            format!(
                "  {name}{}  {time:<time_columns$}{count:>COUNT_COLUMNS$}",
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
        for (session, time) in shown.iter().zip(&times) {
            // Its title first (what a person knows it by), its name after.
            let named = match &session.title {
                Some(title) => format!("{} · {}", display(title), display(&session.name)),
                None => display(&session.name),
            };
            items.push(Line::from(shorten(
                &row(&named, time, &session.message_count.to_string()),
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
        let said = match &self.mode {
            Mode::Choose if self.filter.is_empty() => t.picker_keys.to_owned(),
            Mode::Choose => t.picker_filtered.replace("{text}", &display(&self.filter)),
            Mode::Search(text) => t.picker_search.replace("{text}", &display(text)),
            Mode::Rename(text) => t.picker_rename.replace("{text}", &display(text)),
            Mode::ConfirmDelete => t.picker_delete.replace(
                "{name}",
                &self.selected_session().map_or_else(String::new, |s| {
                    display(s.title.as_deref().unwrap_or(&s.name))
                }),
            ),
        };
        frame.render_widget(
            Paragraph::new(Span::styled(
                shorten(&format!("  {said}"), columns),
                Style::new().fg(Color::Yellow),
            )),
            footer,
        );
    }
}
