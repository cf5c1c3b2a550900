//! `TerminalApprover`: waits for the person's answer line. The prompt itself is drawn by
//! the console from the `approval_requested` event, and the outcome from
//! `approval_decided`; this only reads the answer and says who gave it.

use std::sync::Arc;

use async_trait::async_trait;
use tau_core::{Answer, ApprovalRequest, Approver, ApproverError, DecidedBy};

use crate::console::Console;
use crate::prompt::parse_answer;
use crate::question::{Heard, Questions, Reply};

/// The channel name in approval requests and `decided_by`.
pub const TERMINAL_CHANNEL: &str = "terminal";

/// Why the approver failed when there is nobody to ask (the audit log's error event).
pub const NOWHERE_TO_ASK: &str = "no terminal to ask on: stdin is not a terminal, there is no controlling terminal, and answers from stdin were not allowed (--answers-from-stdin)";

/// Asks the person at the terminal. Cancel-safe: when the future is dropped (the gate's
/// timeout) the question is withdrawn and the next line is a prompt again.
pub struct TerminalApprover {
    console: Arc<Console>,
    questions: Questions,
}

impl TerminalApprover {
    /// The console draws the questions that `questions` asks.
    pub fn new(console: Arc<Console>, questions: Questions) -> Self {
        console.draws_for(questions.clone());
        Self { console, questions }
    }
}

#[async_trait]
impl Approver for TerminalApprover {
    fn name(&self) -> &str {
        TERMINAL_CHANNEL
    }

    async fn decide(&self, request: ApprovalRequest) -> Result<Answer, ApproverError> {
        let mut asking = self.questions.ask(&request.approval_id);
        let reply = loop {
            match asking.next().await {
                Heard::TooSoon(line) => self.console.too_soon(&line),
                Heard::Reply(reply) => break reply,
            }
        };
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
            Reply::NowhereToAsk => {
                // The approver cannot ask anyone: the gate refuses it as `approver_failed`.
                self.console.cannot_ask();
                return Err(ApproverError::new(NOWHERE_TO_ASK));
            }
        })
    }
}
