//! The line editor for prompts at a terminal (rustyline): arrows move, Up and Down bring
//! back earlier prompts, Ctrl-R searches them. It reads only while the chat waits for a
//! prompt; an approval is never answered through it (see [`crate::input`]): answers stay
//! plain lines, read with the guard.

use rustyline::config::{BellStyle, Configurer};
use rustyline::error::ReadlineError;
use rustyline::history::DefaultHistory;
use rustyline::{
    Cmd, ConditionalEventHandler, Editor, Event, EventContext, EventHandler, KeyCode, KeyEvent,
    Modifiers, Movement, RepeatCount,
};

/// Prompts kept in memory for Up and Ctrl-R.
pub const HISTORY_ENTRIES: usize = 1000;

/// What the editor read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Edited {
    /// A prompt; `remember` when it belongs in the history (not blank, not begun with a
    /// space, not the same as the one before).
    Line { text: String, remember: bool },
    /// Ctrl-C on an empty line (or a SIGINT): the person wants to leave.
    Interrupted,
    /// Ctrl-D on an empty line.
    EndOfInput,
}

/// Why the editor could not read.
#[derive(Debug, thiserror::Error)]
pub enum EditorError {
    /// The terminal could not be set up or read.
    #[error("the line editor failed: {0}")]
    Terminal(#[source] ReadlineError),
    /// A read was asked for while another one runs.
    #[error("the line editor failed: the editor is already reading")]
    AlreadyReading,
    /// The thread that read ended without handing the editor back.
    #[error("the line editor failed: {0}")]
    Thread(#[source] tokio::task::JoinError),
}

/// Ctrl-C with something typed clears the line, as a shell does; on an empty line it
/// interrupts, which ends the chat.
struct ClearOrInterrupt;

impl ConditionalEventHandler for ClearOrInterrupt {
    fn handle(
        &self,
        _event: &Event,
        _count: RepeatCount,
        _positive: bool,
        context: &EventContext<'_>,
    ) -> Option<Cmd> {
        if context.line().is_empty() {
            None
        } else {
            Some(Cmd::Kill(Movement::WholeBuffer))
        }
    }
}

/// The prompt editor, with the history it started from.
pub struct PromptEditor {
    /// Lent to the blocking thread while it reads.
    editor: Option<Editor<(), DefaultHistory>>,
}

impl PromptEditor {
    /// An editor that remembers `history` (oldest first).
    pub fn new(history: &[String]) -> Result<Self, EditorError> {
        let mut editor: Editor<(), DefaultHistory> =
            Editor::new().map_err(EditorError::Terminal)?;
        editor
            .set_max_history_size(HISTORY_ENTRIES)
            .map_err(EditorError::Terminal)?;
        editor.set_history_ignore_space(true);
        editor
            .set_history_ignore_dups(true)
            .map_err(EditorError::Terminal)?;
        editor.set_auto_add_history(false);
        editor.set_bell_style(BellStyle::None);
        let _replaced = editor.bind_sequence(
            KeyEvent(KeyCode::Char('C'), Modifiers::CTRL),
            EventHandler::Conditional(Box::new(ClearOrInterrupt)),
        );
        for entry in history {
            let _ = editor.add_history_entry(entry.as_str());
        }
        Ok(Self {
            editor: Some(editor),
        })
    }

    /// Reads one prompt, on a thread of its own (the editor blocks on the terminal).
    pub async fn read(&mut self, prompt: &str) -> Result<Edited, EditorError> {
        let Some(mut editor) = self.editor.take() else {
            return Err(EditorError::AlreadyReading);
        };
        let prompt = prompt.to_owned();
        let (editor, read) = tokio::task::spawn_blocking(move || {
            let read = editor.readline(prompt.as_str());
            (editor, read)
        })
        .await
        .map_err(EditorError::Thread)?;
        let mut editor = editor;
        let edited = match read {
            Ok(text) => {
                let remember = !text.trim().is_empty()
                    && editor.add_history_entry(text.as_str()).unwrap_or(false);
                Edited::Line { text, remember }
            }
            Err(ReadlineError::Interrupted | ReadlineError::Signal(_)) => Edited::Interrupted,
            Err(ReadlineError::Eof) => Edited::EndOfInput,
            Err(error) => {
                self.editor = Some(editor);
                return Err(EditorError::Terminal(error));
            }
        };
        self.editor = Some(editor);
        Ok(edited)
    }

    /// A prompt that reached the chat another way (typed while a turn ran): it belongs in
    /// the history too. Returns whether it was kept.
    pub fn remember(&mut self, text: &str) -> bool {
        !text.trim().is_empty()
            && self
                .editor
                .as_mut()
                .is_some_and(|e| e.add_history_entry(text).unwrap_or(false))
    }
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn an_editor_error_names_the_line_editor_and_keeps_its_cause() {
        assert_eq!(
            EditorError::AlreadyReading.to_string(),
            "the line editor failed: the editor is already reading"
        );
        let terminal = EditorError::Terminal(ReadlineError::Io(std::io::Error::other("no tty")));
        assert_eq!(terminal.to_string(), "the line editor failed: no tty");
        assert!(terminal.source().is_some());
    }
}
