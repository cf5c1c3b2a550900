//! The event loop, kept thin: it feeds keys, turn events, signals and the time to the
//! [`App`], draws a frame after each, and does what the app asks (start a turn, answer a
//! question, cancel). All decisions about what a key means are the app's.

use std::io::Write;
use std::pin::pin;
use std::time::{Duration, Instant};

use crossterm::event::{Event, EventStream};
use futures::{FutureExt, StreamExt};
use ratatui::layout::Rect;
use tau_agent::CancelHandle;
use tau_core::{ChannelSink, Language, TauAgent, TurnError, TurnOutcome, approval::Standing};
use tau_protocol::ChannelEvent;
use tokio::sync::mpsc;

use crate::app::{Action, App};
use crate::approver::Questions;
use crate::calls::ModelCalls;
use crate::picker::{Pick, Picker, SessionRow};
use crate::screen::Screen;
use crate::transcript::{Entry, Transcript};
use crate::{TuiError, ui};

/// The terminal's bell (BEL), rung once per new question after the frame that shows it.
const BELL: &str = "\u{7}";
/// How often the screen is redrawn while nothing else happens (countdowns, the guard).
const TICK: Duration = Duration::from_millis(250);
/// How long a turn may take to wind down after SIGTERM before tau leaves anyway.
const WIND_DOWN: Duration = Duration::from_secs(2);

/// How the TUI ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// The person quit (Ctrl-C, Ctrl-D, Esc in the picker).
    Quit,
    /// A signal ended it (its number: 15 for SIGTERM, 1 for SIGHUP).
    Signal(i32),
}

/// The conversation about to be shown.
pub struct ChatSetup {
    pub language: Language,
    pub session: String,
    pub model: String,
    pub max_turns: u32,
    /// Messages stored before this run (0: a new session).
    pub stored: u64,
    /// What tau found wrong at start (a model it cannot reach), shown as notices.
    pub warnings: Vec<String>,
    /// How many questions wait on other channels, kept current by the caller (who knows
    /// where they are stored); `None` shows no count.
    pub waiting_elsewhere: Option<tokio::sync::watch::Receiver<usize>>,
    /// Which cards say that no yes given here approves them (`TuiApprover::no_yes`).
    pub no_yes: Option<crate::approver::NoYesOf>,
    /// `/grants` and `/revoke` in the input line; `None` sends them to the model.
    pub grants: Option<std::sync::Arc<dyn crate::GrantCommands>>,
}

enum Step {
    Continue,
    Submit(String),
    Exit(Exit),
}

enum Signal {
    Interrupt,
    Terminate(i32),
}

struct Signals {
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
    #[cfg(unix)]
    hangup: tokio::signal::unix::Signal,
}

impl Signals {
    fn listen() -> Result<Self, TuiError> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Ok(Self {
                interrupt: signal(SignalKind::interrupt()).map_err(TuiError::Terminal)?,
                terminate: signal(SignalKind::terminate()).map_err(TuiError::Terminal)?,
                hangup: signal(SignalKind::hangup()).map_err(TuiError::Terminal)?,
            })
        }
        #[cfg(not(unix))]
        {
            Ok(Self {})
        }
    }

    async fn next(&mut self) -> Signal {
        #[cfg(unix)]
        {
            tokio::select! {
                Some(()) = self.interrupt.recv() => Signal::Interrupt,
                Some(()) = self.terminate.recv() => Signal::Terminate(15),
                Some(()) = self.hangup.recv() => Signal::Terminate(1),
                else => std::future::pending().await,
            }
        }
        #[cfg(not(unix))]
        {
            std::future::pending().await
        }
    }
}

/// Lets the person pick a session (or a new one) from `sessions`, their times in `zone`
/// (tau's, named beside each time).
pub async fn pick_session(
    screen: &mut Screen,
    language: Language,
    sessions: Vec<SessionRow>,
    zone: jiff::tz::TimeZone,
) -> Result<Pick, TuiError> {
    let mut picker = Picker::new(language, sessions, zone);
    let mut keys = EventStream::new();
    let mut signals = Signals::listen()?;
    loop {
        screen.reenter_if_restored()?;
        screen.terminal.draw(|frame| picker.render(frame))?;
        tokio::select! {
            event = keys.next() => match event {
                Some(Ok(Event::Key(key))) => {
                    if let Some(pick) = picker.key(key) {
                        return Ok(pick);
                    }
                }
                Some(Ok(_)) => {}
                Some(Err(error)) => return Err(TuiError::Terminal(error)),
                None => return Ok(Pick::Quit),
            },
            signal = signals.next() => match signal {
                Signal::Interrupt => return Ok(Pick::Quit),
                Signal::Terminate(number) => return Ok(Pick::Signal(number)),
            },
        }
    }
}

struct Loop {
    app: App,
    questions: Questions,
    calls: ModelCalls,
    keys: EventStream,
    signals: Signals,
    tick: tokio::time::Interval,
    elsewhere: Option<tokio::sync::watch::Receiver<usize>>,
    events: mpsc::UnboundedReceiver<ChannelEvent>,
    cancel: CancelHandle,
}

/// Runs the conversation until the person quits or a signal ends it.
pub async fn chat(
    screen: &mut Screen,
    agent: &mut TauAgent,
    questions: Questions,
    calls: ModelCalls,
    setup: ChatSetup,
) -> Result<Exit, TuiError> {
    let gate = std::sync::Arc::clone(agent.gate());
    let tier_of = |tool: &str| match gate.standing(tool) {
        Standing::Known { tier, .. } => Some(tier),
        Standing::Unknown | Standing::Invalid { .. } => None,
    };
    let setup_grants = setup.grants.clone();
    let mut transcript = Transcript::from_history(agent.messages(), &tier_of);
    let t = crate::texts::texts(setup.language);
    transcript.push(Entry::Info(if setup.stored == 0 {
        format!("{} {}", t.new_session, setup.session)
    } else {
        format!("{} {} ({})", t.resumed_session, setup.session, setup.stored)
    }));
    for warning in setup.warnings {
        transcript.push(Entry::Notice(warning));
    }
    let (sender, events) = mpsc::unbounded_channel();
    let sink = ChannelSink::from_fn(move |event| {
        let _ = sender.send(event);
    });
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut app = App::new(
        setup.language,
        transcript,
        setup.model,
        setup.session,
        setup.max_turns,
    );
    app.no_yes = setup.no_yes;
    let mut run = Loop {
        app,
        questions,
        calls,
        keys: EventStream::new(),
        signals: Signals::listen()?,
        tick,
        elsewhere: setup.waiting_elsewhere,
        events,
        cancel: agent.cancel_handle(),
    };
    loop {
        // Waiting for a prompt.
        let prompt = loop {
            match run.draw(screen)? {
                Step::Continue => {}
                Step::Submit(prompt) => break prompt,
                Step::Exit(exit) => return Ok(exit),
            }
            match run.wait().await? {
                Step::Continue => {}
                Step::Submit(prompt) => break prompt,
                Step::Exit(exit) => return Ok(exit),
            }
        };
        if let Some(grants) = &setup_grants
            && let Some(command) = crate::commands::local(&prompt)
        {
            run.app.local_command(&prompt, command, grants.as_ref());
            continue;
        }
        // The turn.
        run.calls.reset();
        run.app.turn_started(&prompt);
        run.cancel = agent.cancel_handle();
        let result = {
            let mut turn = pin!(agent.stream(&prompt, Some(&sink)));
            loop {
                let step = match run.draw(screen)? {
                    Step::Continue => {
                        tokio::select! {
                            result = &mut turn => break result,
                            step = run.wait() => step?,
                        }
                    }
                    step => step,
                };
                match step {
                    Step::Continue | Step::Submit(_) => {}
                    Step::Exit(Exit::Quit) => return Ok(Exit::Quit),
                    Step::Exit(exit @ Exit::Signal(_)) => {
                        run.cancel_turn();
                        let _ = tokio::time::timeout(WIND_DOWN, &mut turn).await;
                        return Ok(exit);
                    }
                }
            }
        };
        run.finish_turn(&result, agent);
    }
}

impl Loop {
    /// Draws a frame. When it shows a card for the first time, every key already waiting
    /// is read at once and counted as pressed before the card: none of them answers it.
    fn draw(&mut self, screen: &mut Screen) -> Result<Step, TuiError> {
        screen.reenter_if_restored()?;
        let size = screen.terminal.size()?;
        self.app.size = Rect::new(0, 0, size.width, size.height);
        self.app.now = Instant::now();
        self.app.wall = jiff::Timestamp::now();
        self.app.calls_used = self.calls.get();
        if let Some(elsewhere) = &self.elsewhere {
            self.app.waiting_elsewhere = *elsewhere.borrow();
        }
        let before = Instant::now();
        let new_card = self.app.cards.front().is_some_and(|c| c.shown_at.is_none());
        screen.terminal.draw(|frame| ui::render(&self.app, frame))?;
        self.app.frame_drawn(Instant::now());
        let bells = std::mem::take(&mut self.app.bells);
        if bells > 0 {
            let backend = screen.terminal.backend_mut();
            backend.write_all(BELL.repeat(bells).as_bytes())?;
            backend.flush()?;
        }
        if new_card {
            while let Some(Some(event)) = self.keys.next().now_or_never() {
                let event = event.map_err(TuiError::Terminal)?;
                match self.terminal_event(event, before) {
                    Step::Continue => {}
                    step => return Ok(step),
                }
            }
        }
        Ok(Step::Continue)
    }

    /// The next thing that happens: a key, a signal, a turn event or the tick.
    async fn wait(&mut self) -> Result<Step, TuiError> {
        tokio::select! {
            event = self.keys.next() => match event {
                Some(Ok(event)) => Ok(self.terminal_event(event, Instant::now())),
                Some(Err(error)) => Err(TuiError::Terminal(error)),
                // The terminal is gone: nobody is there to answer or to read.
                None => Ok(Step::Exit(Exit::Quit)),
            },
            signal = self.signals.next() => Ok(match signal {
                Signal::Interrupt => {
                    let action = self.app.interrupt();
                    self.act(action)
                }
                Signal::Terminate(number) => Step::Exit(Exit::Signal(number)),
            }),
            Some(event) = self.events.recv() => {
                self.apply(&event);
                while let Ok(event) = self.events.try_recv() {
                    self.apply(&event);
                }
                Ok(Step::Continue)
            }
            _ = self.tick.tick() => Ok(Step::Continue),
        }
    }

    fn apply(&mut self, event: &ChannelEvent) {
        if let ChannelEvent::ApprovalDecided { approval_id, .. } = event {
            self.questions.forget(approval_id);
        }
        self.app.event(event);
    }

    fn terminal_event(&mut self, event: Event, at: Instant) -> Step {
        match event {
            Event::Key(key) => {
                let action = self.app.key(key, at);
                self.act(action)
            }
            Event::Paste(text) => {
                self.app.paste(&text);
                Step::Continue
            }
            Event::Resize(width, height) => {
                self.app.size = Rect::new(0, 0, width, height);
                Step::Continue
            }
            Event::FocusGained | Event::FocusLost | Event::Mouse(_) => Step::Continue,
        }
    }

    fn act(&mut self, action: Action) -> Step {
        match action {
            Action::Nothing => Step::Continue,
            Action::Submit(prompt) => Step::Submit(prompt),
            Action::Answer {
                approval_id,
                decision,
                confirmation,
                grant,
            } => {
                self.questions
                    .answer(&approval_id, decision, confirmation.as_deref(), grant);
                Step::Continue
            }
            Action::Cancel => {
                self.cancel_turn();
                Step::Continue
            }
            Action::Quit => Step::Exit(Exit::Quit),
        }
    }

    fn cancel_turn(&mut self) {
        self.cancel.cancel();
        self.questions.close_all();
    }

    fn finish_turn(&mut self, result: &Result<TurnOutcome, TurnError>, agent: &TauAgent) {
        // The sink runs in the turn's task: every event of the turn is queued by now.
        while let Ok(event) = self.events.try_recv() {
            self.apply(&event);
        }
        if let Err(error) = result
            && error.notice.is_none()
        {
            self.app.transcript.push(Entry::Notice(error.to_string()));
        }
        self.app.calls_used = self.calls.get();
        self.app.turn_ended();
        self.app.transcript.attach_results(agent.messages());
    }
}
