//! `TerminalApprover`: waits for the person's answer line. The prompt itself is drawn by
//! the console from the `approval_requested` event, and the outcome from
//! `approval_decided`; this only reads the answer and says who gave it.

use std::sync::Arc;

use async_trait::async_trait;
use tau_core::{Answer, Approver, ApproverError};
use tau_protocol::{ApprovalQuestion, DecidedBy, Decision, GrantRequest, GrantScope};

use crate::console::Console;
use crate::passkeys::PasskeyQuestions;
use crate::prompt::{always_scope, is_always, parse_answer};
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
    /// The person of `[[people]]` at this terminal, named in each answer's `decided_by`.
    person: Option<String>,
    passkeys: Option<PasskeyQuestions>,
}

impl TerminalApprover {
    /// The console draws the questions that `questions` asks.
    pub fn new(console: Arc<Console>, questions: Questions) -> Self {
        console.draws_for(questions.clone());
        Self {
            console,
            questions,
            person: None,
            passkeys: None,
        }
    }

    /// Whose answers these are: `person` of `[[people]]` (none in a home that names
    /// nobody).
    pub fn for_person(mut self, person: Option<String>) -> Self {
        self.person = person;
        self
    }

    /// Questions whose yes takes a passkey, or that are not the person's, approve nothing
    /// here (see `passkeys.rs`).
    pub fn with_passkeys(mut self, passkeys: PasskeyQuestions) -> Self {
        self.console.asks_passkeys(passkeys.clone());
        self.passkeys = Some(passkeys);
        self
    }

    /// `answer` as given by this terminal's person.
    fn theirs(&self, mut answer: Answer) -> Answer {
        if let DecidedBy::Person { person, .. } = &mut answer.decided_by {
            person.clone_from(&self.person);
        }
        answer
    }
}

#[async_trait]
impl Approver for TerminalApprover {
    fn name(&self) -> &str {
        TERMINAL_CHANNEL
    }

    async fn decide(&self, request: ApprovalQuestion) -> Result<Answer, ApproverError> {
        let id = &request.approval_id;
        let step = request.card.confirm.as_ref();
        let not_yours = self
            .passkeys
            .as_ref()
            .and_then(|passkeys| (passkeys.not_yours)(&request));
        let mut asking = self.questions.ask(id);
        let reply = loop {
            match asking.next().await {
                Heard::TooSoon(line) => self.console.too_soon(&line),
                // A question taller than the screen: Enter shows more, and a yes (or the
                // second step's answer) before its end was on screen is no answer;
                // anything else refuses as usual.
                Heard::Reply(Reply::Line(line)) if self.console.more_to_show(id) => {
                    if line.trim().is_empty() {
                        self.console.next_page(id);
                    } else if parse_answer(Some(&line)) == Decision::Approved
                        || is_always(&line)
                        || step.is_some_and(|step| step.accepts(&line))
                    {
                        self.console.not_seen_yet(id, &line);
                    } else {
                        break Reply::Line(line);
                    }
                    asking = self.questions.ask(id);
                }
                // A question that is not the person's, or takes a passkey: no yes typed
                // here approves it.
                Heard::Reply(Reply::Line(line))
                    if (not_yours.is_some() || self.console.refuses_yes(id))
                        && (parse_answer(Some(&line)) == Decision::Approved
                            || is_always(&line)
                            || step.is_some_and(|step| step.accepts(&line))) =>
                {
                    let t = crate::texts::texts(self.console.language());
                    let shown = match &not_yours {
                        Some(why) => format!("{why}; {}", t.approvers_refused),
                        None => t.passkey_refused.to_owned(),
                    };
                    self.console.yes_refused(&line, id, &shown);
                    if let Some(passkeys) = &self.passkeys {
                        (passkeys.refused)(&request, not_yours.as_deref());
                    }
                    asking = self.questions.ask(id);
                }
                // A question with a second step ignores a bare yes and asks again.
                Heard::Reply(Reply::Line(line))
                    if step.is_some_and(|step| !step.accepts(&line))
                        && parse_answer(Some(&line)) == Decision::Approved =>
                {
                    self.console.step_needed(&line, id);
                    asking = self.questions.ask(id);
                }
                Heard::Reply(reply) => break reply,
            }
        };
        Ok(self.theirs(match reply {
            // A second step: its name or its number approves; anything else refuses. Such
            // a question offers no grant, so `always` refuses here too.
            Reply::Line(line) if step.is_some() => {
                self.console.answered(Some(&line));
                match step {
                    Some(step) if step.accepts(&line) => {
                        Answer::approved_by(TERMINAL_CHANNEL).confirmed_with(line)
                    }
                    _ => Answer::new(Decision::Rejected, DecidedBy::person(TERMINAL_CHANNEL)),
                }
            }
            // A question that offered a grant: `always` approves and asks for it.
            Reply::Line(line) if request.grant.is_some() && is_always(&line) => {
                self.console.answered(Some(&line));
                let request = match always_scope(&line) {
                    Some(GrantScope::Channel) => GrantRequest::channel(),
                    Some(GrantScope::Conversation) | None => GrantRequest::conversation(),
                };
                Answer::approved_with_grant(TERMINAL_CHANNEL, request)
            }
            // Any other question: y/yes/e/evet approves, anything else refuses.
            Reply::Line(line) => {
                self.console.answered(Some(&line));
                Answer::new(
                    parse_answer(Some(&line)),
                    DecidedBy::person(TERMINAL_CHANNEL),
                )
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
        }))
    }
}

#[cfg(test)]
#[path = "approver_tests.rs"]
mod tests;
