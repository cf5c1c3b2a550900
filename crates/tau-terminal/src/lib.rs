//! tau-terminal: the terminal channel.
//!
//! Owns the line chat's input (one reader for stdin: answers only while a question is
//! open), the console that renders a turn, the approval prompt (every argument whole,
//! wrapped to the terminal, everything from the model through tau-core's display
//! function), and `TerminalApprover`. Knows nothing of models, tools or the gate's rules:
//! it renders what tau-core hands it and answers what tau-core asks.

mod approver;
mod console;
mod escape;
mod input;
mod prompt;
mod texts;
mod width;
mod wrap;

pub use approver::{TERMINAL_CHANNEL, TerminalApprover};
pub use console::Console;
pub use escape::{escape_for_terminal, sorted_json};
pub use input::{Prompts, Questions, Reply, start as start_input};
pub use prompt::{parse_answer, render_prompt};
pub use texts::{Texts, texts};
