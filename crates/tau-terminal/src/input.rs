//! One reader owns stdin. A line is an answer only while a question is open; every other
//! line is a prompt, so an approval never swallows what the person typed next.
//!
//! From a terminal the reader reads as lines arrive (type-ahead becomes the next prompt).
//! From a pipe it reads a line only when someone waits for one, so a scripted session's
//! answers reach the questions they were written for. Answers come from the prompt
//! stream, from a terminal of their own (the controlling terminal when stdin is a pipe),
//! or from nowhere; see [`Answers`] and [`crate::question`] for when a line counts.

use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::editor::{Edited, EditorError, PromptEditor};
use crate::lines::Lines;
use crate::question::{Flush, Questions, Reply, Route, Shared, State};

const READ_BYTES: usize = 8192;

/// Where the answers to questions come from.
pub enum Answers {
    /// Lines of the prompt stream. `terminal` when that stream is a terminal: the guard
    /// applies and drawing a question empties its input queue. Without it every line
    /// read while a question is open answers it, as written (`--answers-from-stdin`).
    FromPrompts { terminal: Option<Flush> },
    /// A terminal of their own, guarded; it is read only while a question is open, and a
    /// line it reads with no question open is dropped.
    FromTerminal {
        source: Box<dyn AsyncRead + Unpin + Send>,
        flush: Flush,
    },
    /// Nowhere: every question ends at once with [`Reply::NowhereToAsk`].
    Nowhere,
}

/// Where prompts come from; owned by the chat loop.
pub struct Prompts {
    shared: Arc<Shared>,
    lines: mpsc::UnboundedReceiver<String>,
}

/// Starts the readers: prompts from `source`, read ahead when `eager` (a terminal) and on
/// demand otherwise (a pipe), and answers from where `answers` says.
pub fn start<R>(source: R, eager: bool, answers: Answers) -> (Prompts, Questions)
where
    R: AsyncRead + Unpin + Send + 'static,
{
    let (route, flush, terminal) = match answers {
        Answers::FromPrompts { terminal } => (Route::Prompts, terminal, None),
        Answers::FromTerminal { source, flush } => (Route::Terminal, Some(flush), Some(source)),
        Answers::Nowhere => (Route::Nowhere, None, None),
    };
    let shared = Arc::new(Shared::new(eager, route, flush));
    let (sender, lines) = mpsc::unbounded_channel();
    tokio::spawn(read_prompts(source, Arc::clone(&shared), sender));
    if let Some(terminal) = terminal {
        tokio::spawn(read_answers(terminal, Arc::clone(&shared)));
    }
    (
        Prompts {
            shared: Arc::clone(&shared),
            lines,
        },
        Questions { shared },
    )
}

async fn read_prompts<R: AsyncRead + Unpin>(
    mut source: R,
    shared: Arc<Shared>,
    prompts: mpsc::UnboundedSender<String>,
) {
    let mut lines = Lines::default();
    let mut buffer = vec![0; READ_BYTES];
    let mut ended = false;
    loop {
        // The line editor reads the terminal: keep off it until it is done. Whole lines
        // read before are prompts typed ahead, handed over first.
        if shared.lock().editing {
            while let Some(line) = lines.pop() {
                deliver(&shared, &prompts, line);
            }
            if ended {
                // The input ended (Ctrl-D while a turn ran): nothing for the editor.
                break;
            }
            park(&shared).await;
        }
        // Wait until someone wants a line (always, when reading ahead).
        shared
            .until(|state| {
                state.editing
                    || state.eager
                    || state.prompt_wanted
                    || (state.route == Route::Prompts && state.question_open())
            })
            .await;
        if shared.lock().editing {
            continue;
        }
        let Some(line) = lines.pop() else {
            if ended {
                break;
            }
            // A read in flight is dropped when the editor starts: the source is read
            // through the reactor, so nothing it did not return was taken.
            let read = tokio::select! {
                read = source.read(&mut buffer) => Some(read),
                () = shared.until(|state| state.editing) => None,
            };
            match read {
                None => {}
                Some(Ok(0) | Err(_)) => {
                    lines.end();
                    ended = true;
                }
                Some(Ok(n)) => lines.feed(buffer.get(..n).unwrap_or_default(), Instant::now()),
            }
            continue;
        };
        deliver(&shared, &prompts, line);
    }
    let mut state = shared.lock();
    if state.route == Route::Prompts {
        state.answers_ended = true;
        state.end_question(Reply::EndOfInput);
    }
    state.reader_done = true;
    drop(state);
    shared.changed();
    // Dropping `prompts` closes the prompt stream.
}

/// A line read from the prompt source: the open question's answer when it may be one,
/// else a prompt.
fn deliver(shared: &Shared, prompts: &mpsc::UnboundedSender<String>, line: crate::lines::Line) {
    let mut state = shared.lock();
    let line = match state.route {
        Route::Prompts => state.hear(line),
        Route::Terminal | Route::Nowhere => Some(line),
    };
    if let Some(line) = line {
        state.prompt_wanted = false;
        let _ = prompts.send(line.text);
    }
    drop(state);
    shared.changed();
}

/// Says the reader is off the terminal, and waits until the editor is done with it.
async fn park(shared: &Shared) {
    shared.lock().reader_parked = true;
    shared.changed();
    shared.until(|state| !state.editing).await;
    shared.lock().reader_parked = false;
}

/// Reads a terminal of the answers' own while a question is open.
async fn read_answers(mut source: Box<dyn AsyncRead + Unpin + Send>, shared: Arc<Shared>) {
    let mut lines = Lines::default();
    let mut buffer = vec![0; READ_BYTES];
    loop {
        shared.until(State::question_open).await;
        let read = tokio::select! {
            read = source.read(&mut buffer) => read,
            // Reading is cancel-safe: nothing read is lost by stopping here.
            () = shared.until(|state| !state.question_open()) => continue,
        };
        let mut state = shared.lock();
        match read {
            Ok(0) => {
                // Ctrl-D: the end of this question's input; a terminal goes on after it.
                lines.end();
                while let Some(line) = lines.pop() {
                    state.hear(line);
                }
                state.end_question(Reply::EndOfInput);
            }
            Ok(n) => {
                lines.feed(buffer.get(..n).unwrap_or_default(), Instant::now());
                // A line with no question open was not typed for one: dropped.
                while let Some(line) = lines.pop() {
                    state.hear(line);
                }
            }
            Err(_) => {
                state.answers_ended = true;
                state.end_question(Reply::EndOfInput);
                drop(state);
                shared.changed();
                return;
            }
        }
        drop(state);
        shared.changed();
    }
}

impl Prompts {
    /// The next prompt, or `None` at the end of input.
    pub async fn next(&mut self) -> Option<String> {
        self.shared.lock().prompt_wanted = true;
        self.shared.changed();
        self.lines.recv().await
    }

    /// The next prompt from the line editor. A line typed while a turn ran comes first,
    /// as it would without an editor; otherwise the reader keeps off the terminal while
    /// the editor reads. `None` at the end of input.
    pub async fn next_edited(&mut self, editor: &mut PromptEditor, prompt: &str) -> Option<Read> {
        if let Ok(line) = self.lines.try_recv() {
            return Some(Read::TypedAhead(line));
        }
        self.set_editing(true);
        self.shared
            .until(|state| state.reader_parked || state.reader_done)
            .await;
        // What the reader took before it parked is still a prompt.
        let waiting = match self.lines.try_recv() {
            Ok(line) => Some(Some(Read::TypedAhead(line))),
            Err(mpsc::error::TryRecvError::Disconnected) => Some(None),
            Err(mpsc::error::TryRecvError::Empty) => None,
        };
        let read = match waiting {
            Some(read) => read,
            None => Some(Read::Edited(editor.read(prompt).await)),
        };
        self.set_editing(false);
        read
    }

    fn set_editing(&self, editing: bool) {
        self.shared.lock().editing = editing;
        self.shared.changed();
    }
}

/// A prompt read at a terminal with the line editor.
#[derive(Debug)]
pub enum Read {
    /// A line typed while a turn ran, read as a plain line (never edited).
    TypedAhead(String),
    /// What the editor read.
    Edited(Result<Edited, EditorError>),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::question::{Asking, GUARD, Heard};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;
    use tokio::io::{AsyncWriteExt, DuplexStream};

    const PAST_THE_GUARD: Duration = Duration::from_millis(400);

    fn line(text: &str) -> Heard {
        Heard::Reply(Reply::Line(text.into()))
    }

    /// A terminal whose flushes are counted.
    fn terminal() -> (Flush, Arc<AtomicUsize>) {
        let count = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&count);
        let flush = Flush::new(move || {
            counter.fetch_add(1, Ordering::SeqCst);
        });
        (flush, count)
    }

    /// Prompts and answers on one terminal: (keyboard, prompts, questions, flushes).
    fn on_a_terminal() -> (DuplexStream, Prompts, Questions, Arc<AtomicUsize>) {
        let (writer, reader) = tokio::io::duplex(64);
        let (flush, flushes) = terminal();
        let answers = Answers::FromPrompts {
            terminal: Some(flush),
        };
        let (prompts, questions) = start(reader, true, answers);
        (writer, prompts, questions, flushes)
    }

    /// Asks and draws the question, as the approver and the console do.
    fn ask_and_draw(questions: &Questions, id: &str) -> Asking {
        let id = tau_protocol::ApprovalId::parse(id).unwrap();
        let asking = questions.ask(&id);
        questions.drawn(&id);
        asking
    }

    #[tokio::test]
    async fn piped_answers_reach_their_questions_and_prompts_stay_prompts() {
        let input = &b"lights on\ny\nwhat time is it?\n"[..];
        let answers = Answers::FromPrompts { terminal: None };
        let (mut prompts, questions) = start(input, false, answers);
        assert_eq!(prompts.next().await.as_deref(), Some("lights on"));
        assert_eq!(
            questions
                .ask(&tau_protocol::ApprovalId::parse("ap_1").unwrap())
                .next()
                .await,
            line("y")
        );
        assert_eq!(prompts.next().await.as_deref(), Some("what time is it?"));
        assert_eq!(prompts.next().await, None);
        assert_eq!(
            questions
                .ask(&tau_protocol::ApprovalId::parse("ap_2").unwrap())
                .next()
                .await,
            Heard::Reply(Reply::EndOfInput),
            "at the end of input a question gets no answer"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn type_ahead_from_a_terminal_is_never_taken_as_an_answer() {
        let (mut keyboard, mut prompts, questions, _) = on_a_terminal();
        keyboard.write_all(b"first\nsecond prompt\n").await.unwrap();
        assert_eq!(prompts.next().await.as_deref(), Some("first"));
        // "second prompt" was typed before any question: it waits as the next prompt.
        tokio::time::sleep(Duration::from_millis(20)).await;
        let mut asking = ask_and_draw(&questions, "ap_1");
        tokio::time::sleep(PAST_THE_GUARD).await;
        keyboard.write_all(b"yes\n").await.unwrap();
        assert_eq!(asking.next().await, line("yes"));
        assert_eq!(prompts.next().await.as_deref(), Some("second prompt"));
    }

    #[tokio::test(start_paused = true)]
    async fn a_line_within_the_guard_is_too_soon_and_the_question_stays_open() {
        let (mut keyboard, _prompts, questions, flushes) = on_a_terminal();
        let mut asking = ask_and_draw(&questions, "ap_1");
        assert_eq!(
            flushes.load(Ordering::SeqCst),
            1,
            "drawing flushes the terminal"
        );
        tokio::time::sleep(GUARD - Duration::from_millis(1)).await;
        keyboard.write_all(b"y\n").await.unwrap();
        assert_eq!(asking.next().await, Heard::TooSoon("y".into()));
        assert!(questions.is_open());
        tokio::time::sleep(Duration::from_millis(1)).await;
        keyboard.write_all(b"y\n").await.unwrap();
        assert_eq!(asking.next().await, line("y"));
        assert!(!questions.is_open());
    }

    #[tokio::test(start_paused = true)]
    async fn the_guard_starts_when_the_question_is_drawn_not_when_it_is_asked() {
        let (mut keyboard, _prompts, questions, _) = on_a_terminal();
        let mut asking = questions.ask(&tau_protocol::ApprovalId::parse("ap_1").unwrap());
        tokio::time::sleep(Duration::from_secs(1)).await;
        keyboard.write_all(b"y\n").await.unwrap();
        assert_eq!(
            asking.next().await,
            Heard::TooSoon("y".into()),
            "asked but not on screen"
        );
        questions.drawn(&tau_protocol::ApprovalId::parse("ap_1").unwrap());
        tokio::time::sleep(Duration::from_millis(100)).await;
        keyboard.write_all(b"y\n").await.unwrap();
        assert_eq!(asking.next().await, Heard::TooSoon("y".into()));
        tokio::time::sleep(PAST_THE_GUARD).await;
        keyboard.write_all(b"y\n").await.unwrap();
        assert_eq!(asking.next().await, line("y"));
    }

    #[tokio::test(start_paused = true)]
    async fn a_question_drawn_before_it_is_asked_keeps_what_it_heard() {
        let (mut keyboard, _prompts, questions, _) = on_a_terminal();
        questions.drawn(&tau_protocol::ApprovalId::parse("ap_1").unwrap());
        keyboard.write_all(b"early\n").await.unwrap();
        tokio::time::sleep(PAST_THE_GUARD).await;
        keyboard.write_all(b"n\n").await.unwrap();
        tokio::time::sleep(Duration::from_millis(10)).await;
        let mut asking = questions.ask(&tau_protocol::ApprovalId::parse("ap_1").unwrap());
        assert_eq!(asking.next().await, Heard::TooSoon("early".into()));
        assert_eq!(asking.next().await, line("n"));
    }

    #[tokio::test(start_paused = true)]
    async fn each_question_has_a_guard_of_its_own() {
        let (mut keyboard, _prompts, questions, flushes) = on_a_terminal();
        let mut first = ask_and_draw(&questions, "ap_1");
        tokio::time::sleep(PAST_THE_GUARD).await;
        keyboard.write_all(b"y\n").await.unwrap();
        assert_eq!(first.next().await, line("y"));
        drop(first);
        // The next question opens at once; the second `y` of a double `y` follows.
        let mut second = ask_and_draw(&questions, "ap_2");
        assert_eq!(flushes.load(Ordering::SeqCst), 2);
        tokio::time::sleep(Duration::from_millis(50)).await;
        keyboard.write_all(b"y\n").await.unwrap();
        assert_eq!(second.next().await, Heard::TooSoon("y".into()));
        assert!(questions.is_open());
    }

    #[tokio::test(start_paused = true)]
    async fn a_y_meant_for_a_question_that_timed_out_does_not_answer_the_next() {
        let (mut keyboard, _prompts, questions, _) = on_a_terminal();
        let mut first = ask_and_draw(&questions, "ap_1");
        let withdrawn = tokio::time::timeout(Duration::from_secs(1), first.next()).await;
        assert!(withdrawn.is_err());
        drop(first);
        let mut second = ask_and_draw(&questions, "ap_2");
        tokio::time::sleep(Duration::from_millis(200)).await;
        keyboard.write_all(b"y\n").await.unwrap();
        assert_eq!(second.next().await, Heard::TooSoon("y".into()));
    }

    #[tokio::test(start_paused = true)]
    async fn a_line_begun_before_the_question_is_too_soon_however_late_it_ends() {
        let (mut keyboard, _prompts, questions, _) = on_a_terminal();
        keyboard.write_all(b"y").await.unwrap();
        tokio::time::sleep(Duration::from_millis(10)).await;
        let mut asking = ask_and_draw(&questions, "ap_1");
        tokio::time::sleep(Duration::from_secs(5)).await;
        keyboard.write_all(b"\n").await.unwrap();
        assert_eq!(asking.next().await, Heard::TooSoon("y".into()));
    }

    #[tokio::test]
    async fn end_of_input_during_a_question_answers_nothing() {
        let (writer, reader) = tokio::io::duplex(64);
        let answers = Answers::FromPrompts { terminal: None };
        let (_prompts, questions) = start(reader, false, answers);
        let mut asking = questions.ask(&tau_protocol::ApprovalId::parse("ap_1").unwrap());
        drop(writer);
        assert_eq!(asking.next().await, Heard::Reply(Reply::EndOfInput));
    }

    #[tokio::test]
    async fn a_withdrawn_question_leaves_the_next_line_to_the_prompts() {
        let (mut writer, reader) = tokio::io::duplex(64);
        let answers = Answers::FromPrompts { terminal: None };
        let (mut prompts, questions) = start(reader, false, answers);
        let mut asking = questions.ask(&tau_protocol::ApprovalId::parse("ap_1").unwrap());
        let withdrawn = tokio::time::timeout(Duration::from_millis(10), asking.next()).await;
        assert!(withdrawn.is_err());
        drop(asking);
        assert!(!questions.is_open());
        writer.write_all(b"a prompt\n").await.unwrap();
        assert_eq!(prompts.next().await.as_deref(), Some("a prompt"));
    }

    #[tokio::test]
    async fn closing_a_question_refuses_it() {
        let (_writer, reader) = tokio::io::duplex(64);
        let answers = Answers::FromPrompts { terminal: None };
        let (_prompts, questions) = start(reader, false, answers);
        let mut asking = questions.ask(&tau_protocol::ApprovalId::parse("ap_1").unwrap());
        questions.close();
        assert_eq!(asking.next().await, Heard::Reply(Reply::Closed));
    }

    #[tokio::test]
    async fn a_question_drawn_but_never_asked_ends_with_its_outcome() {
        let (_writer, reader) = tokio::io::duplex(64);
        let answers = Answers::FromPrompts { terminal: None };
        let (_prompts, questions) = start(reader, false, answers);
        questions.drawn(&tau_protocol::ApprovalId::parse("ap_1").unwrap());
        assert!(questions.is_open());
        questions.decided(&tau_protocol::ApprovalId::parse("ap_2").unwrap());
        assert!(questions.is_open(), "another question's outcome");
        questions.decided(&tau_protocol::ApprovalId::parse("ap_1").unwrap());
        assert!(!questions.is_open());
    }

    #[tokio::test]
    async fn a_line_typed_while_a_turn_ran_comes_before_the_editor() {
        let (mut keyboard, mut prompts, _questions, _) = on_a_terminal();
        keyboard.write_all(b"typed ahead\n").await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        let mut editor = PromptEditor::new(&[]).unwrap();
        let read = prompts.next_edited(&mut editor, "you> ").await;
        assert!(
            matches!(&read, Some(Read::TypedAhead(line)) if line == "typed ahead"),
            "{read:?}"
        );
    }

    #[tokio::test]
    async fn the_end_of_input_while_a_turn_ran_ends_the_chat_without_the_editor() {
        let (keyboard, mut prompts, _questions, _) = on_a_terminal();
        drop(keyboard);
        tokio::time::sleep(Duration::from_millis(50)).await;
        let mut editor = PromptEditor::new(&[]).unwrap();
        let read = prompts.next_edited(&mut editor, "you> ").await;
        assert!(read.is_none(), "{read:?}");
    }

    /// Prompts from a pipe, answers from a terminal of their own.
    fn with_a_terminal_for_answers() -> (DuplexStream, DuplexStream, Prompts, Questions) {
        let (pipe, prompt_source) = tokio::io::duplex(64);
        let (keyboard, terminal_source) = tokio::io::duplex(64);
        let (flush, _) = terminal();
        let answers = Answers::FromTerminal {
            source: Box::new(terminal_source),
            flush,
        };
        let (prompts, questions) = start(prompt_source, false, answers);
        (pipe, keyboard, prompts, questions)
    }

    #[tokio::test(start_paused = true)]
    async fn with_a_terminal_for_answers_a_piped_yes_is_a_prompt() {
        let (mut pipe, mut keyboard, mut prompts, questions) = with_a_terminal_for_answers();
        pipe.write_all(b"go\nyes\n").await.unwrap();
        assert_eq!(prompts.next().await.as_deref(), Some("go"));
        let mut asking = ask_and_draw(&questions, "ap_1");
        tokio::time::sleep(PAST_THE_GUARD).await;
        keyboard.write_all(b"n\n").await.unwrap();
        assert_eq!(asking.next().await, line("n"));
        assert_eq!(prompts.next().await.as_deref(), Some("yes"));
    }

    #[tokio::test(start_paused = true)]
    async fn with_a_terminal_for_answers_what_was_typed_with_no_question_answers_nothing() {
        let (_pipe, mut keyboard, _prompts, questions) = with_a_terminal_for_answers();
        // Typed while nothing was asked (a real terminal's queue is also flushed).
        keyboard.write_all(b"y\n").await.unwrap();
        tokio::time::sleep(Duration::from_secs(3)).await;
        let mut asking = ask_and_draw(&questions, "ap_1");
        assert_eq!(asking.next().await, Heard::TooSoon("y".into()));
        tokio::time::sleep(PAST_THE_GUARD).await;
        keyboard.write_all(b"yes\n").await.unwrap();
        assert_eq!(asking.next().await, line("yes"));
    }

    #[tokio::test(start_paused = true)]
    async fn with_a_terminal_for_answers_its_end_ends_only_the_open_question() {
        let (mut pipe, keyboard, mut prompts, questions) = with_a_terminal_for_answers();
        let mut asking = ask_and_draw(&questions, "ap_1");
        drop(keyboard);
        assert_eq!(asking.next().await, Heard::Reply(Reply::EndOfInput));
        pipe.write_all(b"next\n").await.unwrap();
        assert_eq!(prompts.next().await.as_deref(), Some("next"));
    }

    #[tokio::test]
    async fn with_nowhere_to_ask_every_question_ends_at_once() {
        let input = &b"go\nyes\n"[..];
        let (mut prompts, questions) = start(input, false, Answers::Nowhere);
        assert_eq!(prompts.next().await.as_deref(), Some("go"));
        assert_eq!(
            questions
                .ask(&tau_protocol::ApprovalId::parse("ap_1").unwrap())
                .next()
                .await,
            Heard::Reply(Reply::NowhereToAsk)
        );
        assert_eq!(prompts.next().await.as_deref(), Some("yes"));
    }
}
