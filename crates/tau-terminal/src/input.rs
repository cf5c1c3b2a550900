//! One reader owns stdin. A line is an answer only while a question is open; every other
//! line is a prompt, so an approval never swallows what the person typed next.
//!
//! From a terminal the reader reads as lines arrive (type-ahead becomes the next prompt).
//! From a pipe it reads a line only when someone waits for one, so a scripted session's
//! answers reach the questions they were written for.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::io::{AsyncBufRead, AsyncBufReadExt};
use tokio::sync::{Notify, mpsc, oneshot};

/// Longest line kept; the rest of a longer line is dropped.
const MAX_LINE_BYTES: usize = 1 << 20;

/// How an open question ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// The person typed this line.
    Line(String),
    /// The input ended (a closed pipe, Ctrl-D).
    EndOfInput,
    /// The question was closed from outside (Ctrl-C).
    Closed,
}

#[derive(Default)]
struct State {
    eager: bool,
    prompt_wanted: bool,
    question: Option<(u64, oneshot::Sender<Reply>)>,
    eof: bool,
}

struct Shared {
    state: Mutex<State>,
    wake: Notify,
    next_id: AtomicU64,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Where prompts come from; owned by the chat loop.
pub struct Prompts {
    shared: Arc<Shared>,
    lines: mpsc::UnboundedReceiver<String>,
}

/// Opens questions; shared with the approver.
#[derive(Clone)]
pub struct Questions {
    shared: Arc<Shared>,
}

/// Starts the reader on `source`. `eager` reads ahead (a terminal); otherwise lines are
/// read on demand (a pipe).
pub fn start<R>(source: R, eager: bool) -> (Prompts, Questions)
where
    R: AsyncBufRead + Unpin + Send + 'static,
{
    let shared = Arc::new(Shared {
        state: Mutex::new(State {
            eager,
            ..State::default()
        }),
        wake: Notify::new(),
        next_id: AtomicU64::new(0),
    });
    let (sender, lines) = mpsc::unbounded_channel();
    tokio::spawn(read_lines(source, Arc::clone(&shared), sender));
    (
        Prompts {
            shared: Arc::clone(&shared),
            lines,
        },
        Questions { shared },
    )
}

async fn read_lines<R: AsyncBufRead + Unpin>(
    mut source: R,
    shared: Arc<Shared>,
    prompts: mpsc::UnboundedSender<String>,
) {
    loop {
        // Wait until someone wants a line (always, when reading ahead).
        loop {
            let notified = shared.wake.notified();
            {
                let state = shared.lock();
                if state.eager || state.prompt_wanted || state.question.is_some() {
                    break;
                }
            }
            notified.await;
        }
        let Some(line) = read_line(&mut source).await else {
            break;
        };
        let mut state = shared.lock();
        match state.question.take() {
            Some((_, answer)) => {
                let _ = answer.send(Reply::Line(line));
            }
            None => {
                state.prompt_wanted = false;
                let _ = prompts.send(line);
            }
        }
    }
    let mut state = shared.lock();
    state.eof = true;
    if let Some((_, answer)) = state.question.take() {
        let _ = answer.send(Reply::EndOfInput);
    }
    // Dropping `prompts` closes the prompt stream.
}

/// One line without its ending, or `None` at the end of input (or a read error).
async fn read_line<R: AsyncBufRead + Unpin>(source: &mut R) -> Option<String> {
    let mut bytes = Vec::new();
    match source.read_until(b'\n', &mut bytes).await {
        Ok(0) | Err(_) => None,
        Ok(_) => {
            bytes.truncate(MAX_LINE_BYTES);
            let text = String::from_utf8_lossy(&bytes);
            Some(text.trim_end_matches(['\n', '\r']).to_owned())
        }
    }
}

impl Prompts {
    /// The next prompt, or `None` at the end of input.
    pub async fn next(&mut self) -> Option<String> {
        {
            let mut state = self.shared.lock();
            state.prompt_wanted = true;
        }
        self.shared.wake.notify_one();
        self.lines.recv().await
    }
}

/// Withdraws the question when its future is dropped (a timeout, a cancelled turn).
struct OpenQuestion<'a> {
    shared: &'a Shared,
    id: u64,
}

impl Drop for OpenQuestion<'_> {
    fn drop(&mut self) {
        let mut state = self.shared.lock();
        if state
            .question
            .as_ref()
            .is_some_and(|(id, _)| *id == self.id)
        {
            state.question = None;
        }
    }
}

impl Questions {
    /// Waits for the answer line, the end of input, or the question being closed.
    /// Cancel-safe: dropping the future withdraws the question.
    pub async fn ask(&self) -> Reply {
        let id = self.shared.next_id.fetch_add(1, Ordering::Relaxed);
        let (sender, receiver) = oneshot::channel();
        {
            let mut state = self.shared.lock();
            if state.eof {
                return Reply::EndOfInput;
            }
            // A newer question replaces an older one that was never withdrawn.
            if let Some((_, old)) = state.question.replace((id, sender)) {
                let _ = old.send(Reply::Closed);
            }
        }
        let _open = OpenQuestion {
            shared: &self.shared,
            id,
        };
        self.shared.wake.notify_one();
        receiver.await.unwrap_or(Reply::Closed)
    }

    /// Closes the open question without an answer (Ctrl-C), so it refuses.
    pub fn close(&self) {
        if let Some((_, answer)) = self.shared.lock().question.take() {
            let _ = answer.send(Reply::Closed);
        }
    }

    pub fn is_open(&self) -> bool {
        self.shared.lock().question.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tokio::io::{AsyncWriteExt, BufReader};

    #[tokio::test]
    async fn piped_answers_reach_their_questions_and_prompts_stay_prompts() {
        let input = &b"lights on\ny\nwhat time is it?\n"[..];
        let (mut prompts, questions) = start(BufReader::new(input), false);
        assert_eq!(prompts.next().await.as_deref(), Some("lights on"));
        assert_eq!(questions.ask().await, Reply::Line("y".into()));
        assert_eq!(prompts.next().await.as_deref(), Some("what time is it?"));
        assert_eq!(prompts.next().await, None);
        assert_eq!(
            questions.ask().await,
            Reply::EndOfInput,
            "at the end of input a question gets no answer"
        );
    }

    #[tokio::test]
    async fn type_ahead_from_a_terminal_is_never_taken_as_an_answer() {
        let (mut writer, reader) = tokio::io::duplex(64);
        let (mut prompts, questions) = start(BufReader::new(reader), true);
        writer.write_all(b"first\nsecond prompt\n").await.unwrap();
        assert_eq!(prompts.next().await.as_deref(), Some("first"));
        // "second prompt" was typed before any question: it waits as the next prompt.
        tokio::time::sleep(Duration::from_millis(20)).await;
        let answer = tokio::spawn({
            let questions = questions.clone();
            async move { questions.ask().await }
        });
        while !questions.is_open() {
            tokio::task::yield_now().await;
        }
        writer.write_all(b"yes\n").await.unwrap();
        assert_eq!(answer.await.unwrap(), Reply::Line("yes".into()));
        assert_eq!(prompts.next().await.as_deref(), Some("second prompt"));
    }

    #[tokio::test]
    async fn end_of_input_during_a_question_answers_nothing() {
        let (writer, reader) = tokio::io::duplex(64);
        let (_prompts, questions) = start(BufReader::new(reader), false);
        let answer = tokio::spawn({
            let questions = questions.clone();
            async move { questions.ask().await }
        });
        while !questions.is_open() {
            tokio::task::yield_now().await;
        }
        drop(writer);
        assert_eq!(answer.await.unwrap(), Reply::EndOfInput);
    }

    #[tokio::test]
    async fn a_withdrawn_question_leaves_the_next_line_to_the_prompts() {
        let (mut writer, reader) = tokio::io::duplex(64);
        let (mut prompts, questions) = start(BufReader::new(reader), false);
        let withdrawn = tokio::time::timeout(Duration::from_millis(10), questions.ask()).await;
        assert!(withdrawn.is_err());
        assert!(!questions.is_open());
        writer.write_all(b"a prompt\n").await.unwrap();
        assert_eq!(prompts.next().await.as_deref(), Some("a prompt"));
    }

    #[tokio::test]
    async fn closing_a_question_refuses_it() {
        let (_writer, reader) = tokio::io::duplex(64);
        let (_prompts, questions) = start(BufReader::new(reader), false);
        let answer = tokio::spawn({
            let questions = questions.clone();
            async move { questions.ask().await }
        });
        while !questions.is_open() {
            tokio::task::yield_now().await;
        }
        questions.close();
        assert_eq!(answer.await.unwrap(), Reply::Closed);
    }
}
