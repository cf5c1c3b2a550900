//! `TerminalApprover`: waits for the person's answer line. The prompt itself is drawn by
//! the console from the `approval_requested` event, and the outcome from
//! `approval_decided`; this only reads the answer and says who gave it.

use std::sync::Arc;

use async_trait::async_trait;
use tau_core::{Answer, ApprovalRequest, Approver, ApproverError, DecidedBy};

use crate::console::Console;
use crate::input::{Questions, Reply};
use crate::prompt::parse_answer;

/// The channel name in approval requests and `decided_by`.
pub const TERMINAL_CHANNEL: &str = "terminal";

/// Asks the person at the terminal. Cancel-safe: when the future is dropped (the gate's
/// timeout) the question is withdrawn and the next line is a prompt again.
pub struct TerminalApprover {
    console: Arc<Console>,
    questions: Questions,
}

impl TerminalApprover {
    pub fn new(console: Arc<Console>, questions: Questions) -> Self {
        Self { console, questions }
    }
}

#[async_trait]
impl Approver for TerminalApprover {
    fn name(&self) -> &str {
        TERMINAL_CHANNEL
    }

    async fn decide(&self, _request: ApprovalRequest) -> Result<Answer, ApproverError> {
        let reply = self.questions.ask().await;
        Ok(match reply {
            Reply::Line(line) => {
                self.console.answered(Some(&line));
                Answer {
                    decision: parse_answer(Some(&line)),
                    decided_by: DecidedBy::person(TERMINAL_CHANNEL),
                }
            }
            Reply::EndOfInput => {
                self.console.answered(None);
                Answer::rejected(DecidedBy::EndOfInput)
            }
            Reply::Closed => {
                self.console.answered(None);
                Answer::rejected(DecidedBy::Cancelled)
            }
        })
    }
}
