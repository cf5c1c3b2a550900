//! The question on screen and the lines that may answer it.
//!
//! A question opens when the console draws it (or when the approver asks, whichever comes
//! first) and ends with its answer, its withdrawal or its outcome. When answers come from a
//! terminal, a line counts only when it was begun [`GUARD`] or more after the question was
//! drawn, and drawing it empties the terminal's input queue: what was typed before is
//! never an answer to it, each question has a guard of its own, and a line that comes too
//! soon is reported and dropped, never turned into a prompt.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tau_protocol::ApprovalId;
use tokio::sync::{Notify, mpsc};
use tokio::time::Instant;

use crate::lines::Line;

/// How long after a question is drawn a line is still not an answer to it. Nobody reads a
/// question of several lines and decides within 300 ms; a line that soon was typed for
/// something else: the question before (a second `y` a moment after the first), one that
/// timed out, or keys already on their way. Short enough that a person who did read never
/// notices it.
pub(crate) const GUARD: Duration = Duration::from_millis(300);

/// How a question ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// The person typed this line.
    Line(String),
    /// The input ended (a closed pipe, Ctrl-D).
    EndOfInput,
    /// The question was closed from outside (Ctrl-C, a newer question).
    Closed,
    /// There is nowhere to read an answer from (no terminal, and stdin not allowed).
    NowhereToAsk,
}

/// What an open question heard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Heard {
    /// The question ended.
    Reply(Reply),
    /// A line that came too soon to be an answer; the question stays open.
    TooSoon(String),
}

/// Empties a terminal's input queue (`tcflush(TCIFLUSH)`).
#[derive(Clone)]
pub struct Flush(Arc<dyn Fn() + Send + Sync>);

impl Flush {
    pub fn new(flush: impl Fn() + Send + Sync + 'static) -> Self {
        Self(Arc::new(flush))
    }
}

/// Where the lines that answer come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Route {
    /// The prompt stream.
    Prompts,
    /// A terminal of its own.
    Terminal,
    /// Nowhere.
    Nowhere,
}

struct Question {
    serial: u64,
    approval_id: ApprovalId,
    drawn_at: Option<Instant>,
    sender: mpsc::UnboundedSender<Heard>,
    /// Until the approver takes it.
    receiver: Option<mpsc::UnboundedReceiver<Heard>>,
}

impl Question {
    fn new(serial: u64, approval_id: &ApprovalId, drawn_at: Option<Instant>) -> Self {
        let (sender, receiver) = mpsc::unbounded_channel();
        Self {
            serial,
            approval_id: approval_id.clone(),
            drawn_at,
            sender,
            receiver: Some(receiver),
        }
    }

    fn end(&self, reply: Reply) {
        let _ = self.sender.send(Heard::Reply(reply));
    }
}

pub(crate) struct State {
    /// Read prompts ahead (a terminal) rather than when one is wanted (a pipe).
    pub eager: bool,
    pub prompt_wanted: bool,
    pub route: Route,
    /// Answers come from a terminal: the guard applies.
    guarded: bool,
    question: Option<Question>,
    /// A question that ended before anyone asked it (drawn first, then answered or
    /// closed), kept so that its asker still hears how it ended.
    unasked: Option<Question>,
    /// The answers' source ended for good.
    pub answers_ended: bool,
    /// The line editor reads the terminal: the prompt reader keeps off it.
    pub editing: bool,
    /// The prompt reader is parked while the editor reads (it reads nothing until
    /// `editing` ends).
    pub reader_parked: bool,
    /// The prompt reader stopped for good (the end of its input).
    pub reader_done: bool,
}

impl State {
    pub fn question_open(&self) -> bool {
        self.question.is_some()
    }

    /// Offers `line` to the open question; gives it back when there is none.
    pub fn hear(&mut self, line: Line) -> Option<Line> {
        let Some(question) = self.question.as_ref() else {
            return Some(line);
        };
        let read_in_time = question
            .drawn_at
            .is_some_and(|drawn| line.begun_at.saturating_duration_since(drawn) >= GUARD);
        if !self.guarded || read_in_time {
            self.end_question(Reply::Line(line.text));
        } else {
            let _ = question.sender.send(Heard::TooSoon(line.text));
        }
        None
    }

    /// Ends the open question, if any.
    pub fn end_question(&mut self, reply: Reply) {
        if let Some(question) = self.question.take() {
            question.end(reply);
            if question.receiver.is_some() {
                self.unasked = Some(question);
            }
        }
    }

    /// The question for `approval_id`: the open one, or a new one replacing any other.
    fn question_for(&mut self, serial: u64, approval_id: &ApprovalId) -> &mut Question {
        let same = self
            .question
            .as_ref()
            .is_some_and(|q| q.approval_id == *approval_id);
        if !same {
            self.end_question(Reply::Closed);
            self.unasked = None;
        }
        self.question
            .get_or_insert_with(|| Question::new(serial, approval_id, None))
    }
}

pub(crate) struct Shared {
    state: Mutex<State>,
    /// Every change of the state that a reader may wait for.
    wake: Notify,
    next_serial: AtomicU64,
    flush: Option<Flush>,
}

impl Shared {
    /// `flush` is the answering terminal's: with one, the guard applies.
    pub fn new(eager: bool, route: Route, flush: Option<Flush>) -> Self {
        Self {
            state: Mutex::new(State {
                eager,
                prompt_wanted: false,
                route,
                guarded: flush.is_some(),
                question: None,
                unasked: None,
                answers_ended: false,
                editing: false,
                reader_parked: false,
                reader_done: false,
            }),
            wake: Notify::new(),
            next_serial: AtomicU64::new(0),
            flush,
        }
    }

    pub fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Wakes every reader waiting for a change.
    pub fn changed(&self) {
        self.wake.notify_waiters();
    }

    /// Waits until `ready` holds.
    pub async fn until(&self, ready: impl Fn(&State) -> bool) {
        loop {
            // Created before the check, so a change in between still wakes it.
            let notified = self.wake.notified();
            if ready(&self.lock()) {
                return;
            }
            notified.await;
        }
    }

    fn serial(&self) -> u64 {
        self.next_serial.fetch_add(1, Ordering::Relaxed)
    }
}

/// Opens questions; shared by the approver and the console that draws them.
#[derive(Clone)]
pub struct Questions {
    pub(crate) shared: Arc<Shared>,
}

impl Questions {
    /// Opens the question for `approval_id` (or joins the one the console drew) and
    /// returns what it hears. Dropping the [`Asking`] withdraws the question (a timeout, a
    /// cancelled turn), so the next line is not taken for it.
    pub fn ask(&self, approval_id: &ApprovalId) -> Asking {
        let serial = self.shared.serial();
        let mut state = self.shared.lock();
        // It was drawn and ended before this ask: hear how.
        if let Some(mut over) = state.unasked.take_if(|q| q.approval_id == *approval_id) {
            return Asking {
                shared: Arc::clone(&self.shared),
                serial,
                receiver: over.receiver.take(),
                ended: None,
            };
        }
        let ended = match state.route {
            Route::Nowhere => Some(Reply::NowhereToAsk),
            Route::Prompts | Route::Terminal if state.answers_ended => Some(Reply::EndOfInput),
            Route::Prompts | Route::Terminal => None,
        };
        if let Some(reply) = ended {
            return Asking {
                shared: Arc::clone(&self.shared),
                serial,
                receiver: None,
                ended: Some(reply),
            };
        }
        let question = state.question_for(serial, approval_id);
        if question.receiver.is_none() {
            // A second ask for the same question takes it over.
            let drawn_at = question.drawn_at;
            let old = std::mem::replace(question, Question::new(serial, approval_id, drawn_at));
            old.end(Reply::Closed);
        }
        let receiver = question.receiver.take();
        let serial = question.serial;
        drop(state);
        self.shared.changed();
        Asking {
            shared: Arc::clone(&self.shared),
            serial,
            receiver,
            ended: None,
        }
    }

    /// The question for `approval_id` is on screen: what was typed on the answering
    /// terminal until now is dropped, and its guard starts.
    pub(crate) fn drawn(&self, approval_id: &ApprovalId) {
        if let Some(Flush(flush)) = &self.shared.flush {
            flush();
        }
        let serial = self.shared.serial();
        let mut state = self.shared.lock();
        state.question_for(serial, approval_id).drawn_at = Some(Instant::now());
        drop(state);
        self.shared.changed();
    }

    /// The outcome of the question for `approval_id` is on screen: it takes no more
    /// lines, even if nobody asked it.
    pub(crate) fn decided(&self, approval_id: &ApprovalId) {
        let mut state = self.shared.lock();
        if state
            .question
            .as_ref()
            .is_some_and(|q| q.approval_id == *approval_id)
        {
            state.end_question(Reply::Closed);
        }
        state.unasked.take_if(|q| q.approval_id == *approval_id);
        drop(state);
        self.shared.changed();
    }

    /// Closes the open question without an answer (Ctrl-C), so it refuses.
    pub fn close(&self) {
        self.shared.lock().end_question(Reply::Closed);
        self.shared.changed();
    }

    pub fn is_open(&self) -> bool {
        self.shared.lock().question_open()
    }
}

/// An open question, as the approver waits on it.
pub struct Asking {
    shared: Arc<Shared>,
    serial: u64,
    receiver: Option<mpsc::UnboundedReceiver<Heard>>,
    ended: Option<Reply>,
}

impl Asking {
    /// The next thing the question hears; after a [`Heard::Reply`] it is over.
    pub async fn next(&mut self) -> Heard {
        if let Some(reply) = self.ended.take() {
            return Heard::Reply(reply);
        }
        let heard = match &mut self.receiver {
            Some(receiver) => receiver.recv().await,
            None => None,
        };
        heard.unwrap_or(Heard::Reply(Reply::Closed))
    }
}

impl Drop for Asking {
    fn drop(&mut self) {
        let mut state = self.shared.lock();
        if state
            .question
            .as_ref()
            .is_some_and(|q| q.serial == self.serial)
        {
            state.question = None;
        }
        drop(state);
        self.shared.changed();
    }
}
