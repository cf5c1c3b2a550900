//! The line chat's loop: read a prompt (scripted, from the line editor, or a plain line),
//! run the turn with the console as its sink, and end on end of input or a second Ctrl-C
//! while a turn winds down. The caller opens the home, the session and the agent's parts;
//! the agent is built here, once the approver it asks through exists.

use std::collections::VecDeque;
use std::future::Future;
use std::io::{IsTerminal, Write};
use std::sync::Arc;

use tau_core::{Approver, BuildError, Language, TauAgent};
use tau_home::ChatHistory;
use tau_protocol::SessionId;

use crate::editor::PromptEditor;
use crate::{
    Console, Input, PasskeyQuestions, TerminalApprover, escape_for_terminal, start_stdin, texts,
};

/// A line chat about to start; its session is already open.
pub struct ChatSetup {
    pub language: Language,
    pub session: SessionId,
    /// Messages the session already holds (the banner says whether it is new).
    pub stored: u64,
    /// Prompts to send instead of reading them (the demo); the answers are read as usual.
    pub prompts: Option<Vec<String>>,
    /// `--answers-from-stdin`: when stdin is not a terminal, its lines answer the
    /// approval prompts; otherwise the controlling terminal does, or nobody.
    pub answers_from_stdin: bool,
    /// `NO_COLOR` is set and not empty.
    pub no_color: bool,
    /// `TERM`, for whether the line editor can draw.
    pub term: Option<String>,
    /// Where the prompts typed with the line editor are kept.
    pub history: ChatHistory,
    /// The person of `[[people]]` at this terminal (none in a home that names nobody).
    pub person: Option<String>,
    /// Which questions take a passkey, which this terminal cannot ask for.
    pub passkeys: PasskeyQuestions,
}

/// How a chat ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ended {
    /// Turns that could not finish (the model or the store failed).
    pub failed_turns: u32,
    /// The prompts came from a pipe or a file: a script is reading the exit code.
    pub piped: bool,
}

impl Ended {
    /// 1 when a turn failed on a pipe, so a script learns that its prompt got no answer;
    /// at a terminal the person saw the notice, and the chat ends as they chose.
    pub fn exit_code(self) -> std::process::ExitCode {
        if self.piped && self.failed_turns > 0 {
            std::process::ExitCode::from(1)
        } else {
            std::process::ExitCode::SUCCESS
        }
    }
}

/// Why the line chat could not run.
#[derive(Debug, thiserror::Error)]
pub enum ChatError {
    #[error(transparent)]
    Build(#[from] BuildError),
    #[error("cannot listen for Ctrl-C: {0}")]
    Interrupts(#[source] std::io::Error),
}

/// Runs the chat: `build` makes the agent around the terminal's approver.
pub async fn chat<B, F>(setup: ChatSetup, build: B) -> Result<Ended, ChatError>
where
    B: FnOnce(Arc<dyn Approver>) -> F,
    F: Future<Output = Result<TauAgent, BuildError>>,
{
    let ChatSetup {
        language,
        session: id,
        stored,
        prompts: scripted,
        answers_from_stdin,
        no_color,
        term,
        history,
        person,
        passkeys,
    } = setup;
    let mut scripted = scripted.map(VecDeque::from);
    let stdout_tty = std::io::stdout().is_terminal();
    let color = stdout_tty && !no_color;
    let console = Console::new(Box::new(std::io::stdout()), stdout_tty, color, language);
    let mut editor = if scripted.is_none() && crate::can_edit(term.as_deref()) {
        line_editor(&history)
    } else {
        None
    };
    let Input {
        mut prompts,
        questions,
        question_screen,
        stdin_is_terminal: stdin_tty,
        line_editing,
    } = start_stdin(answers_from_stdin, stdout_tty, editor.is_some());
    if !line_editing {
        editor = None;
    }
    if let Some(screen) = question_screen {
        console.draw_questions_also_on(screen);
    }
    let approver = Arc::new(
        TerminalApprover::new(Arc::clone(&console), questions.clone())
            .for_person(person)
            .with_passkeys(passkeys),
    );
    let mut agent = build(approver).await?;
    let t = texts(language);
    if stored == 0 {
        console.print(&format!("{} {id}\n", t.new_session));
    } else {
        console.print(&format!("{} {id} ({stored})\n", t.resumed_session));
    }

    let sink = console.sink();
    // A call this session's last tau let through and never saw return: said now, and the
    // model reads it with the next prompt.
    if let Err(error) = agent.answer_cut_off_calls(Some(&sink)).await {
        console.notice(&error.to_string());
    }
    let mut interrupts = Interrupts::listen().map_err(ChatError::Interrupts)?;
    let mut ended = Ended {
        failed_turns: 0,
        piped: !stdin_tty && scripted.is_none(),
    };
    loop {
        let prompt = match (&mut scripted, &mut editor) {
            (Some(queue), _) => queue.pop_front(),
            (None, Some(editor)) => {
                let keep = |text: &str| {
                    if let Err(error) = history.append(text) {
                        tracing::warn!(%error, "a prompt could not be added to the history");
                    }
                };
                prompts.next_prompt(editor, &console, &keep).await
            }
            (None, None) => {
                if stdin_tty {
                    console.print("you> ");
                }
                tokio::select! {
                    prompt = prompts.next() => prompt,
                    () = interrupts.next() => None,
                }
            }
        };
        let Some(prompt) = prompt else { break };
        if !stdin_tty || scripted.is_some() {
            console.print(&format!("you> {}\n", escape_for_terminal(&prompt)));
        }
        if prompt.trim().is_empty() {
            continue;
        }
        let cancel = agent.cancel_handle();
        console.thinking();
        let turn = agent.stream(&prompt, Some(&sink));
        tokio::pin!(turn);
        let mut cancelled = false;
        let result = loop {
            tokio::select! {
                result = &mut turn => break result,
                () = interrupts.next() => {
                    if cancelled {
                        // A second Ctrl-C while the turn winds down: leave now.
                        console.print("\n");
                        return Ok(ended);
                    }
                    cancelled = true;
                    cancel.cancel();
                    questions.close();
                }
            }
        };
        if let Err(error) = result {
            ended.failed_turns += 1;
            if error.notice.is_none() {
                console.notice(&error.to_string());
            }
        }
    }
    Ok(ended)
}

/// The editor with the history kept in the home; without the history when it cannot be
/// read (said once), without the editor when none can be made.
fn line_editor(history: &ChatHistory) -> Option<PromptEditor> {
    let entries = history.load().unwrap_or_else(|error| {
        warn_line(&format!(
            "tau: warning: the prompt history cannot be read: {error}"
        ));
        Vec::new()
    });
    match PromptEditor::new(&entries) {
        Ok(editor) => Some(editor),
        Err(error) => {
            warn_line(&format!(
                "tau: warning: {error}; prompts are read as plain lines"
            ));
            None
        }
    }
}

/// `line` on stderr; a reader that went away is not the chat's failure.
fn warn_line(line: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{line}");
    let _ = err.flush();
}

/// Ctrl-C, listened for from the start so it never kills tau mid-turn.
struct Interrupts {
    #[cfg(unix)]
    signal: tokio::signal::unix::Signal,
}

impl Interrupts {
    fn listen() -> std::io::Result<Self> {
        #[cfg(unix)]
        {
            let signal = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?;
            Ok(Self { signal })
        }
        #[cfg(not(unix))]
        {
            Ok(Self {})
        }
    }

    /// The next Ctrl-C.
    async fn next(&mut self) {
        #[cfg(unix)]
        {
            if self.signal.recv().await.is_none() {
                std::future::pending::<()>().await;
            }
        }
        #[cfg(not(unix))]
        {
            if tokio::signal::ctrl_c().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }
}
