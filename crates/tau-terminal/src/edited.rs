//! The next prompt at a terminal that can draw the line editor, and which terminals can.

use crate::console::Console;
use crate::editor::{Edited, PromptEditor};
use crate::escape::escape_for_terminal;
use crate::input::{Prompts, Read};

/// Terminals rustyline cannot draw on: there the prompt is read as a plain line.
const NO_EDITING_TERMS: [&str; 3] = ["dumb", "cons25", "emacs"];

/// Whether the terminal (by `TERM`) can draw the line editor.
pub fn can_edit(term: Option<&str>) -> bool {
    term.is_none_or(|term| !NO_EDITING_TERMS.contains(&term))
}

impl Prompts {
    /// The next prompt at a terminal with the line editor; `None` ends the chat (Ctrl-D,
    /// or Ctrl-C on an empty line). `keep` hears each prompt the history keeps.
    pub async fn next_prompt(
        &mut self,
        editor: &mut PromptEditor,
        console: &Console,
        keep: &dyn Fn(&str),
    ) -> Option<String> {
        match self.next_edited(editor, "you> ").await? {
            Read::TypedAhead(text) => {
                // Typed while the turn ran: echoed then, shown whole now.
                console.print(&format!("you> {}\n", escape_for_terminal(&text)));
                if editor.remember(&text) {
                    keep(&text);
                }
                Some(text)
            }
            Read::Edited(Ok(Edited::Line { text, remember })) => {
                if remember {
                    keep(&text);
                }
                Some(text)
            }
            Read::Edited(Ok(Edited::Interrupted | Edited::EndOfInput)) => {
                console.print("\n");
                None
            }
            Read::Edited(Err(error)) => {
                console.notice(&error.to_string());
                None
            }
        }
    }
}
