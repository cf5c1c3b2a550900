//! The TUI's state and what keys and turn events do to it. Nothing here draws or waits:
//! the frame is a pure function of this state (`ui.rs`), and the event loop (`run.rs`)
//! only feeds it keys, events and the time.

use std::collections::VecDeque;
use std::time::Instant;

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::layout::Rect;
use tau_core::Language;
use tau_protocol::{ApprovalId, ChannelEvent, Decision};

pub(crate) mod card_keys;

use crate::card::{Card, CardView, Moment};
use crate::input::Input;
use crate::texts::{Texts, texts};
use crate::transcript::{Entry, Transcript};
use crate::ui::{areas, rows_from, tail_rows};

/// What the event loop should do after a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Action {
    Nothing,
    /// Start a turn with this prompt.
    Submit(String),
    /// The person answered the question with this id (with what they typed for its
    /// second step, when it has one).
    Answer {
        approval_id: ApprovalId,
        decision: Decision,
        confirmation: Option<String>,
        /// "Yes, and allow this again": `always` (this conversation) or `always all`
        /// (every conversation on the TUI) typed on a card that offers a grant.
        grant: Option<tau_protocol::GrantScope>,
    },
    /// Cancel the running turn and close its questions.
    Cancel,
    Quit,
}

/// Whether a turn runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    Idle,
    Running { cancelling: bool },
}

/// Everything on screen.
pub(crate) struct App {
    pub language: Language,
    pub transcript: Transcript,
    /// Open questions, the one on screen first.
    pub cards: VecDeque<Card>,
    pub input: Input,
    pub model: String,
    pub session: String,
    pub max_turns: u32,
    /// Model calls made in the running (or last) turn.
    pub calls_used: u32,
    pub phase: Phase,
    /// Transcript rows scrolled up from the bottom; 0 follows the conversation.
    pub scroll: usize,
    /// The selected call (an index into the transcript's entries).
    pub selected: Option<usize>,
    pub size: Rect,
    pub now: Instant,
    pub wall: jiff::Timestamp,
    /// Questions asked since the last frame: the loop rings the terminal's bell once for
    /// each, so a person looking elsewhere hears that tau waits.
    pub bells: usize,
    /// Questions that wait on other channels (TauBar, Telegram), answered there; the
    /// status bar counts them so a person here knows something waits.
    pub waiting_elsewhere: usize,
    /// Which questions no yes given here approves: their cards say so.
    pub no_yes: Option<crate::approver::NoYesOf>,
}

impl App {
    pub(crate) fn new(
        language: Language,
        transcript: Transcript,
        model: String,
        session: String,
        max_turns: u32,
    ) -> Self {
        let input = Input::with_history(transcript.prompts());
        Self {
            language,
            transcript,
            cards: VecDeque::new(),
            input,
            model,
            session,
            max_turns,
            calls_used: 0,
            phase: Phase::Idle,
            scroll: 0,
            selected: None,
            size: Rect::new(0, 0, 80, 24),
            now: Instant::now(),
            wall: jiff::Timestamp::now(),
            bells: 0,
            waiting_elsewhere: 0,
            no_yes: None,
        }
    }

    pub(crate) fn texts(&self) -> &'static Texts {
        texts(self.language)
    }

    /// Questions open or still to come in this turn.
    pub(crate) fn pending_approvals(&self) -> usize {
        self.cards.len() + self.transcript.questions_to_come()
    }

    pub(crate) fn moment(&self) -> Moment {
        Moment {
            now: self.now,
            wall: self.wall,
            waiting: self.pending_approvals().saturating_sub(1),
        }
    }

    /// The front card laid out for the current screen.
    pub(crate) fn card_view(&self) -> Option<CardView> {
        let card = self.cards.front()?;
        let above_status = Rect {
            height: self.size.height.saturating_sub(1),
            ..self.size
        };
        Some(CardView::new(
            card,
            above_status,
            self.texts(),
            self.moment(),
        ))
    }

    pub(crate) fn event(&mut self, event: &ChannelEvent) {
        match event {
            ChannelEvent::ApprovalRequested(question) => {
                // A question asked again (the same id) is not new: no second bell.
                if !self
                    .cards
                    .iter()
                    .any(|c| c.approval_id == question.approval_id)
                {
                    self.bells += 1;
                }
                let mut question = question.as_ref().clone();
                // No yes given here approves it, so no grant is offered either.
                let note = self.no_yes.as_ref().and_then(|no_yes| no_yes(&question));
                if let Some(note) = &note {
                    question.card.notes.push(self.texts().no_yes_note(note));
                    question.grant = None;
                }
                let mut card = Card::new(&question);
                card.no_yes = note.is_some();
                self.cards.push_back(card);
            }
            ChannelEvent::ApprovalDecided { approval_id, .. } => {
                self.cards.retain(|card| &card.approval_id != approval_id);
            }
            // No question outlives its turn.
            ChannelEvent::TurnEnded { .. } => self.cards.clear(),
            ChannelEvent::TextDelta { .. }
            | ChannelEvent::ToolCallStarted { .. }
            | ChannelEvent::ToolProgress { .. }
            | ChannelEvent::ToolCallFinished { .. }
            | ChannelEvent::ToolOutput { .. }
            | ChannelEvent::Notice { .. } => {}
        }
        self.transcript.apply(event);
    }

    /// A prompt the TUI answered itself (`/grants`, `/revoke`): the prompt, then what
    /// became of it, as tau's lines; no turn starts.
    pub(crate) fn local_command(
        &mut self,
        prompt: &str,
        command: crate::commands::Local<'_>,
        grants: &dyn crate::GrantCommands,
    ) {
        self.transcript.push(Entry::User(prompt.trim().to_owned()));
        let lines = match command {
            crate::commands::Local::Grants => grants.list(),
            crate::commands::Local::Revoke(id) => vec![grants.revoke(id)],
            crate::commands::Local::RevokeWithoutId => vec![self.texts().revoke_usage.to_owned()],
        };
        for line in lines {
            self.transcript.push(Entry::Info(line));
        }
        self.scroll = 0;
    }

    pub(crate) fn turn_started(&mut self, prompt: &str) {
        self.transcript.push(Entry::User(prompt.to_owned()));
        self.phase = Phase::Running { cancelling: false };
        self.calls_used = 0;
        self.scroll = 0;
    }

    pub(crate) fn turn_ended(&mut self) {
        self.phase = Phase::Idle;
        self.cards.clear();
    }

    /// The front card was on screen at `now` (called after every frame).
    pub(crate) fn frame_drawn(&mut self, now: Instant) {
        let max_scroll = self.card_view().map(|view| view.max_scroll());
        if let (Some(card), Some(max_scroll)) = (self.cards.front_mut(), max_scroll) {
            card.shown_at.get_or_insert(now);
            if card.scroll >= max_scroll {
                card.seen_end = true;
            }
        }
    }

    pub(crate) fn paste(&mut self, text: &str) {
        // A paste never answers a card: it goes to the input line, or nowhere.
        if self.cards.is_empty() && !self.input.insert(text) {
            let kib = crate::input::MAX_INPUT_BYTES >> 10;
            let note = self.texts().paste_cut.replace("{kib}", &kib.to_string());
            self.transcript.push(Entry::Info(note));
        }
    }

    /// A key the person pressed, read at `at`.
    pub(crate) fn key(&mut self, key: KeyEvent, at: Instant) -> Action {
        if key.kind == KeyEventKind::Release {
            return Action::Nothing;
        }
        let control = key.modifiers.contains(KeyModifiers::CONTROL);
        if control && matches!(key.code, KeyCode::Char('c' | 'C')) {
            return self.interrupt();
        }
        if !self.cards.is_empty() {
            return self.card_key(key, at);
        }
        match key.code {
            KeyCode::Char('d' | 'D')
                if control && self.phase == Phase::Idle && self.input.is_empty() =>
            {
                return Action::Quit;
            }
            KeyCode::Char('o' | 'O') if control => self.toggle_selected(),
            KeyCode::Enter if key.modifiers.contains(KeyModifiers::ALT) => {
                self.input.insert("\n");
            }
            KeyCode::Enter if self.phase == Phase::Idle && !self.input.text.trim().is_empty() => {
                self.selected = None;
                return Action::Submit(self.input.take());
            }
            KeyCode::Char(c) if !control => {
                self.input.insert(c.encode_utf8(&mut [0; 4]));
            }
            KeyCode::Backspace => self.input.backspace(),
            KeyCode::Delete => self.input.delete(),
            KeyCode::Left => self.input.left(),
            KeyCode::Right => self.input.right(),
            KeyCode::Up if self.input.on_first_line() => self.input.older(),
            KeyCode::Down if self.input.on_last_line() => self.input.newer(),
            KeyCode::Home | KeyCode::Up => self.input.home(),
            KeyCode::End | KeyCode::Down => self.input.end(),
            KeyCode::PageUp => self.scroll_by(self.page(), true),
            KeyCode::PageDown => self.scroll_by(self.page(), false),
            KeyCode::Tab => self.select(true),
            KeyCode::BackTab => self.select(false),
            KeyCode::Esc => self.selected = None,
            _ => {}
        }
        Action::Nothing
    }

    /// Ctrl-C: cancels the turn (closing its questions), and quits when nothing runs or
    /// when the turn is already being cancelled. An idle Ctrl-C first clears the input.
    pub(crate) fn interrupt(&mut self) -> Action {
        match self.phase {
            Phase::Running { cancelling: false } => {
                self.phase = Phase::Running { cancelling: true };
                self.cards.clear();
                Action::Cancel
            }
            Phase::Idle if !self.input.is_empty() => {
                self.input.clear();
                Action::Nothing
            }
            Phase::Running { cancelling: true } | Phase::Idle => Action::Quit,
        }
    }

    fn page(&self) -> usize {
        usize::from(areas(self, self.size).transcript.height)
            .saturating_sub(1)
            .max(1)
    }

    fn scroll_by(&mut self, rows: usize, up: bool) {
        if !up {
            self.scroll = self.scroll.saturating_sub(rows);
            return;
        }
        let area = areas(self, self.size).transcript;
        let height = usize::from(area.height);
        let wanted = self.scroll + rows;
        // Never further up than the first row at the top of the window.
        let have = tail_rows(self, usize::from(area.width), wanted + height).len();
        self.scroll = wanted.min(have.saturating_sub(height));
    }

    /// Tab selects the call before the selected one (the newest first), Shift-Tab the one
    /// after; the selected call is scrolled into view.
    fn select(&mut self, older: bool) {
        let calls = self.transcript.call_indexes();
        let position = self
            .selected
            .and_then(|selected| calls.iter().position(|&i| i == selected));
        let next = match (position, older) {
            (None, _) => calls.last().copied(),
            (Some(p), true) => calls.get(p.saturating_sub(1)).copied(),
            (Some(p), false) => calls.get(p + 1).copied().or(self.selected),
        };
        self.selected = next;
        self.reveal_selected();
    }

    fn toggle_selected(&mut self) {
        let target = self
            .selected
            .or_else(|| self.transcript.call_indexes().last().copied());
        if let Some(Entry::Call(call)) = target.and_then(|i| self.transcript.entries.get_mut(i)) {
            call.expanded = !call.expanded;
        }
        self.selected = target;
        self.reveal_selected();
    }

    /// Scrolls so the selected call's first row is in the window, at its top when it
    /// was not.
    fn reveal_selected(&mut self) {
        let Some(selected) = self.selected else {
            return;
        };
        let area = areas(self, self.size).transcript;
        let height = usize::from(area.height);
        // The row's place counted from the bottom (0 is the last row).
        let Some(from_bottom) = rows_from(self, usize::from(area.width), selected).checked_sub(1)
        else {
            return;
        };
        if from_bottom < self.scroll || from_bottom >= self.scroll + height {
            self.scroll = (from_bottom + 1).saturating_sub(height);
        }
    }
}
