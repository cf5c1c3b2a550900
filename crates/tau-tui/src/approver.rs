//! `TuiApprover`: waits for the person's key on the card. The card itself is drawn from
//! the `approval_requested` event and taken away by `approval_decided`; this only waits
//! for the answer to the question with the same id, and says who gave it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use tau_core::{Answer, Approver, ApproverError};
use tau_protocol::{ApprovalId, ApprovalQuestion, DecidedBy, Decision, GrantRequest, GrantScope};
use tokio::sync::oneshot;

/// The channel name in approval requests and `decided_by`.
pub const TUI_CHANNEL: &str = "tui";

#[derive(Default)]
struct State {
    waiting: HashMap<ApprovalId, oneshot::Sender<Answer>>,
    /// Answers keyed before `decide` was reached (the card is drawn from the event the
    /// gate emits just before it asks).
    early: HashMap<ApprovalId, Answer>,
}

/// The open questions, shared by the approver and the event loop.
#[derive(Clone, Default)]
pub struct Questions {
    state: Arc<Mutex<State>>,
}

impl Questions {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The person answered the question `approval_id` with a key on its card (and what
    /// they typed for its second step, when it has one).
    pub(crate) fn answer(
        &self,
        approval_id: &ApprovalId,
        decision: Decision,
        confirmation: Option<&str>,
        grant: Option<GrantScope>,
    ) {
        let mut answer = Answer::new(decision, DecidedBy::person(TUI_CHANNEL));
        if let Some(typed) = confirmation {
            answer = answer.confirmed_with(typed);
        }
        if let Some(scope) = grant
            && decision == Decision::Approved
        {
            // For the offer's hours, where the card said: this conversation, or every one
            // on the TUI.
            answer.grant = Some(GrantRequest {
                scope,
                ..GrantRequest::default()
            });
        }
        self.send(approval_id, answer);
    }

    fn send(&self, approval_id: &ApprovalId, answer: Answer) {
        let mut state = self.lock();
        match state.waiting.remove(approval_id) {
            Some(sender) => {
                let _ = sender.send(answer);
            }
            None => {
                state.early.insert(approval_id.clone(), answer);
            }
        }
    }

    /// Closes every open question without an answer (Ctrl-C): each refuses, decided by
    /// `cancelled`.
    pub(crate) fn close_all(&self) {
        let mut state = self.lock();
        state.early.clear();
        for (_, sender) in state.waiting.drain() {
            let _ = sender.send(Answer::rejected(DecidedBy::Cancelled));
        }
    }

    /// Forgets what a finished question left behind.
    pub(crate) fn forget(&self, approval_id: &ApprovalId) {
        self.lock().early.remove(approval_id);
    }

    #[cfg(test)]
    fn open(&self) -> usize {
        self.lock().waiting.len()
    }

    async fn ask(&self, approval_id: &ApprovalId) -> Answer {
        let receiver = {
            let mut state = self.lock();
            if let Some(answer) = state.early.remove(approval_id) {
                return answer;
            }
            let (sender, receiver) = oneshot::channel();
            state.waiting.insert(approval_id.clone(), sender);
            receiver
        };
        let _open = Withdraw {
            questions: self,
            approval_id,
        };
        receiver
            .await
            .unwrap_or_else(|_| Answer::rejected(DecidedBy::Cancelled))
    }
}

/// Withdraws the question when its future is dropped (the gate's timeout).
struct Withdraw<'a> {
    questions: &'a Questions,
    approval_id: &'a ApprovalId,
}

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        self.questions.lock().waiting.remove(self.approval_id);
    }
}

/// Asks the person at the TUI. Cancel-safe: when the gate drops the future (its timeout),
/// the question is withdrawn; the card goes when `approval_decided` arrives.
#[derive(Clone, Default)]
pub struct TuiApprover {
    questions: Questions,
    /// The person of `[[people]]` at this terminal, named in each answer's `decided_by`.
    person: Option<String>,
    passkeys: Option<Passkeys>,
}

/// Whether a question's yes takes a passkey now, which the TUI cannot ask for, or why it
/// is not the person's (its `approvers` name others), and where a yes given to one anyway
/// is recorded (`answer_refused`, with that reason).
#[derive(Clone)]
struct Passkeys {
    takes: Arc<dyn Fn(&ApprovalQuestion) -> bool + Send + Sync>,
    not_yours: NotYours,
    refused: RefusedYes,
}

/// Why no yes given at the TUI approves a question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoYes {
    /// Its `approvers` name others: why, in the hub's words.
    NotYours(String),
    /// It takes a passkey, which the TUI cannot ask for.
    Passkey,
}

/// Which questions no yes given at the TUI approves, and why; asked as each card is drawn.
pub type NoYesOf = Arc<dyn Fn(&ApprovalQuestion) -> Option<NoYes> + Send + Sync>;

/// Why a question is not the person's to answer; `None` when it is.
pub type NotYours = Arc<dyn Fn(&ApprovalQuestion) -> Option<String> + Send + Sync>;

/// Records a yes that approved nothing: with the reason `NotYours` gave, or none when the
/// question takes a passkey.
pub type RefusedYes = Arc<dyn Fn(&ApprovalQuestion, Option<&str>) + Send + Sync>;

impl TuiApprover {
    pub fn new() -> Self {
        Self::default()
    }

    /// Whose answers these are: `person` of `[[people]]` (none in a home that names
    /// nobody).
    pub fn for_person(mut self, person: Option<String>) -> Self {
        self.person = person;
        self
    }

    /// A yes to a question that `takes` says takes a passkey approves nothing: the TUI
    /// cannot ask for one; nor does one to a question `not_yours` says is not the
    /// person's. It refuses the question, and `refused` records the yes.
    pub fn with_passkeys(
        mut self,
        takes: Arc<dyn Fn(&ApprovalQuestion) -> bool + Send + Sync>,
        not_yours: NotYours,
        refused: RefusedYes,
    ) -> Self {
        self.passkeys = Some(Passkeys {
            takes,
            not_yours,
            refused,
        });
        self
    }

    /// Why no yes given here approves a question, for its card; `None` with no hooks.
    pub fn no_yes(&self) -> Option<NoYesOf> {
        let passkeys = self.passkeys.clone()?;
        Some(Arc::new(
            move |question: &ApprovalQuestion| match (passkeys.not_yours)(question) {
                Some(why) => Some(NoYes::NotYours(why)),
                None => (passkeys.takes)(question).then_some(NoYes::Passkey),
            },
        ))
    }

    /// The questions this approver waits on; the event loop answers them.
    pub fn questions(&self) -> Questions {
        self.questions.clone()
    }
}

#[async_trait]
impl Approver for TuiApprover {
    fn name(&self) -> &str {
        TUI_CHANNEL
    }

    async fn decide(&self, request: ApprovalQuestion) -> Result<Answer, ApproverError> {
        let mut answer = self.questions.ask(&request.approval_id).await;
        if answer.decision == Decision::Approved
            && let Some(passkeys) = &self.passkeys
        {
            let not_yours = (passkeys.not_yours)(&request);
            if not_yours.is_some() || (passkeys.takes)(&request) {
                (passkeys.refused)(&request, not_yours.as_deref());
                answer = Answer::new(Decision::Rejected, DecidedBy::person(TUI_CHANNEL));
            }
        }
        if let DecidedBy::Person { person, .. } = &mut answer.decided_by {
            person.clone_from(&self.person);
        }
        Ok(answer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;
    use std::time::Duration;
    use tau_protocol::Tier;

    fn request(id: &str) -> ApprovalQuestion {
        ApprovalQuestion {
            approval_id: ApprovalId::parse(id).unwrap(),
            tool: "run_command".into(),
            tier: Tier::Physical,
            effect: "runs a shell command".into(),
            arguments: json!({"command": "ls"}),
            call_id: "t1".into(),
            channel: TUI_CHANNEL.into(),
            deadline: None,
            card: Default::default(),
            grant: None,
        }
    }

    async fn until_open(questions: &Questions, n: usize) {
        while questions.open() < n {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test]
    async fn a_key_answers_its_own_question_as_a_person_on_the_tui() {
        let approver = TuiApprover::new();
        let questions = approver.questions();
        let first = tokio::spawn({
            let approver = approver.clone();
            async move { approver.decide(request("ap_1")).await }
        });
        until_open(&questions, 1).await;
        // An answer to another question is not an answer to this one.
        questions.answer(
            &tau_protocol::ApprovalId::parse("ap_other").unwrap(),
            Decision::Approved,
            None,
            None,
        );
        assert_eq!(questions.open(), 1);
        questions.answer(
            &tau_protocol::ApprovalId::parse("ap_1").unwrap(),
            Decision::Rejected,
            None,
            None,
        );
        assert_eq!(
            first.await.unwrap().unwrap(),
            Answer::new(Decision::Rejected, DecidedBy::person("tui"))
        );
    }

    #[tokio::test]
    async fn an_answer_keyed_before_decide_is_kept_for_that_question_only() {
        let approver = TuiApprover::new();
        let questions = approver.questions();
        questions.answer(
            &tau_protocol::ApprovalId::parse("ap_1").unwrap(),
            Decision::Approved,
            None,
            None,
        );
        assert_eq!(
            approver.decide(request("ap_1")).await.unwrap(),
            Answer::approved_by("tui")
        );
        // Used once: the same id asked again waits.
        let again =
            tokio::time::timeout(Duration::from_millis(20), approver.decide(request("ap_1"))).await;
        assert!(again.is_err());
    }

    #[tokio::test]
    async fn a_yes_to_a_question_that_takes_a_passkey_refuses_it_as_the_person_s() {
        let refused = Arc::new(Mutex::new(Vec::new()));
        let approver = TuiApprover::new()
            .for_person(Some("ana".into()))
            .with_passkeys(
                Arc::new(|question: &ApprovalQuestion| question.approval_id.as_str() == "ap_1"),
                Arc::new(|question: &ApprovalQuestion| {
                    (question.approval_id.as_str() == "ap_3")
                        .then(|| "not yours: only bob may answer it".to_owned())
                }),
                Arc::new({
                    let refused = Arc::clone(&refused);
                    move |question: &ApprovalQuestion, reason: Option<&str>| {
                        refused
                            .lock()
                            .unwrap()
                            .push(format!("{} {reason:?}", question.approval_id));
                    }
                }),
            );
        let questions = approver.questions();
        let ana = |decision| {
            Answer::new(
                decision,
                DecidedBy::Person {
                    channel: TUI_CHANNEL.into(),
                    user: None,
                    person: Some("ana".into()),
                },
            )
        };
        for id in ["ap_1", "ap_2", "ap_3"] {
            questions.answer(
                &ApprovalId::parse(id).unwrap(),
                Decision::Approved,
                None,
                None,
            );
        }
        assert_eq!(
            approver.decide(request("ap_1")).await.unwrap(),
            ana(Decision::Rejected)
        );
        assert_eq!(
            approver.decide(request("ap_2")).await.unwrap(),
            ana(Decision::Approved)
        );
        // A question only bob may answer: ana's yes refuses it too, with why.
        assert_eq!(
            approver.decide(request("ap_3")).await.unwrap(),
            ana(Decision::Rejected)
        );
        assert_eq!(
            *refused.lock().unwrap(),
            [
                "ap_1 None",
                "ap_3 Some(\"not yours: only bob may answer it\")"
            ]
        );
    }

    #[tokio::test]
    async fn ctrl_c_closes_every_question_as_cancelled() {
        let approver = TuiApprover::new();
        let questions = approver.questions();
        let waiting = tokio::spawn({
            let approver = approver.clone();
            async move { approver.decide(request("ap_1")).await }
        });
        until_open(&questions, 1).await;
        questions.close_all();
        assert_eq!(
            waiting.await.unwrap().unwrap(),
            Answer::rejected(DecidedBy::Cancelled)
        );
    }

    #[tokio::test]
    async fn a_timed_out_question_is_withdrawn_and_a_late_key_answers_nothing() {
        let approver = TuiApprover::new();
        let questions = approver.questions();
        let timed_out =
            tokio::time::timeout(Duration::from_millis(10), approver.decide(request("ap_1"))).await;
        assert!(timed_out.is_err());
        assert_eq!(questions.open(), 0);
        // The late key is kept as an early answer to that id; the next question has a new
        // id, and the finished one is forgotten when its decision arrives.
        questions.answer(
            &tau_protocol::ApprovalId::parse("ap_1").unwrap(),
            Decision::Approved,
            None,
            None,
        );
        questions.forget(&tau_protocol::ApprovalId::parse("ap_1").unwrap());
        let next =
            tokio::time::timeout(Duration::from_millis(10), approver.decide(request("ap_2"))).await;
        assert!(next.is_err());
    }
}
