//! `TerminalApprover`: asks on the terminal, withdraws the question when the gate's
//! timeout ends the wait.

use std::sync::Arc;

use async_trait::async_trait;
use tau_core::{ApprovalRequest, Approver, ApproverError, Decision, Notice};

use crate::console::Console;
use crate::input::Questions;
use crate::prompt::{parse_answer, render_decision, render_prompt};

/// Asks the person at the terminal. Cancel-safe: when the future is dropped the question
/// is withdrawn, a notice says so, and the next line is a prompt again.
pub struct TerminalApprover {
    console: Arc<Console>,
    questions: Questions,
}

impl TerminalApprover {
    pub fn new(console: Arc<Console>, questions: Questions) -> Self {
        Self { console, questions }
    }
}

/// Prints the withdrawal notice unless an answer arrived.
struct Pending<'a> {
    console: &'a Console,
    tool: &'a str,
    answered: bool,
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        if !self.answered {
            self.console.print("\n");
            self.console.notice(
                &Notice::ApprovalTimedOut {
                    tool: self.tool.to_owned(),
                }
                .text(self.console.language()),
            );
        }
    }
}

#[async_trait]
impl Approver for TerminalApprover {
    fn name(&self) -> &str {
        "terminal"
    }

    async fn decide(&self, request: ApprovalRequest) -> Result<Decision, ApproverError> {
        let language = self.console.language();
        let columns = crate::width::columns(self.console.is_tty());
        self.console
            .print(&render_prompt(&request, language, columns));
        let mut pending = Pending {
            console: &self.console,
            tool: &request.tool,
            answered: false,
        };
        let line = self.questions.ask().await;
        pending.answered = true;
        if !self.console.is_tty() {
            // A piped answer is not echoed by the terminal; show it so the transcript reads whole.
            self.console.print(&format!(
                "{}\n",
                line.as_deref()
                    .map_or_else(String::new, crate::escape::escape_for_terminal)
            ));
        }
        let decision = parse_answer(line.as_deref());
        self.console.print(&render_decision(decision, language));
        Ok(decision)
    }
}
