//! tau-terminal: the terminal channel.
//!
//! Owns the line chat's loop (a prompt, its turn, Ctrl-C; the binary opens the session and
//! hands it the agent's parts), its input (one reader for stdin; answers only from a
//! person at a terminal, and only for the question on screen; the line editor for
//! prompts, never for answers, and their history in the home), the console that renders
//! a turn and its thinking indicator, the approval prompt (every argument whole, wrapped
//! to the terminal, everything from the model through tau-core's display function), and
//! `TerminalApprover`. Knows nothing of models, tools or the gate's rules: it renders
//! what tau-core hands it and answers what tau-core asks.

mod approver;
mod chat;
mod console;
mod edited;
mod editor;
mod escape;
mod input;
mod lines;
mod output;
mod pager;
mod passkeys;
mod prompt;
mod question;
#[cfg(test)]
mod testing;
mod texts;
mod tty;
mod width;
mod wrap;

pub use approver::{NOWHERE_TO_ASK, TERMINAL_CHANNEL, TerminalApprover};
pub use chat::{ChatError, ChatSetup, Ended, chat};
pub use console::Console;
pub use edited::can_edit;
pub use editor::{Edited, EditorError, HISTORY_ENTRIES, PromptEditor};
pub use escape::{escape_for_terminal, sorted_json};
pub use input::{Answers, Prompts, Read, start as start_input};
pub use passkeys::{NotYours, PasskeyQuestions, RefusedYes, TakesPasskey};
pub use prompt::{parse_answer, render_prompt};
pub use question::{Asking, Flush, Heard, Questions, Reply};
pub use texts::{Texts, texts};
pub use tty::{Input, start_stdin};
