//! Step 6 of the ladder, the question, behind one trait: a gate asks in memory (the
//! approver is asked and waited for, one question at a time, bounded by the timeout) or
//! durably (`durable_gate.rs`: the question is stored and the turn pauses). Whatever fails
//! on the way refuses.

use std::panic::AssertUnwindSafe;
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::Value;
use tau_protocol::{
    ApprovalQuestion, CallDecision, CallProvenance, CardNote, DecidedBy, Decision, Refusal, Ruling,
    SessionId, Tier, Verdict,
};

use super::approver::Answer;
use super::dispatch::DispatchRecord;
use super::durable_gate::DurableQuestions;
use super::gate::TierGate;
use super::texts::refusal_text;
use crate::audit::ErrorSite;
use crate::ids::new_approval_id;
use tau_state::Approvals;

/// A call steps 1 to 5 did not decide: a person must be asked.
pub(crate) struct ToAsk {
    pub tool: String,
    pub tool_use_id: String,
    pub arguments: Value,
    pub tier: Tier,
    pub effect: String,
    /// What goes on the card: why a grant did not cover the call.
    pub notes: Vec<CardNote>,
    pub provenance: CallProvenance,
}

/// How a gate puts a question to a person.
pub(crate) trait Asking: Send + Sync {
    /// Asks about `call` and returns the verdict ([`Verdict::Asked`] when the question is
    /// stored for later).
    fn ask<'a>(&'a self, gate: &'a TierGate, call: ToAsk) -> BoxFuture<'a, CallDecision>;

    /// Where questions are stored, when this mode stores them.
    fn stored(&self) -> Option<&DurableQuestions> {
        None
    }

    /// Where the calls a person's yes lets through are recorded, and for which session.
    fn call_store(&self) -> Option<(&Approvals, &SessionId)>;
}

/// Asks the gate's approver and waits; records the calls a yes lets through when it has
/// a [`DispatchRecord`] (`tau chat`, `tau tui`), so a crash while one runs is reported.
#[derive(Default)]
pub(crate) struct InMemory {
    /// One question at a time per gate: parallel calls queue here.
    prompt_lock: tokio::sync::Mutex<()>,
    pub(super) dispatches: Option<DispatchRecord>,
}

impl InMemory {
    pub(super) fn recording(dispatches: DispatchRecord) -> Self {
        Self {
            prompt_lock: tokio::sync::Mutex::default(),
            dispatches: Some(dispatches),
        }
    }
}

impl Asking for InMemory {
    fn ask<'a>(&'a self, gate: &'a TierGate, call: ToAsk) -> BoxFuture<'a, CallDecision> {
        async move {
            let _turn = self.prompt_lock.lock().await;
            gate.ask_in_memory(self.dispatches.as_ref(), call).await
        }
        .boxed()
    }

    fn call_store(&self) -> Option<(&Approvals, &SessionId)> {
        self.dispatches
            .as_ref()
            .map(|record| (&record.store, &record.session))
    }
}

/// Why an approver gave no answer, and what the model reads then (the refusal text when
/// `None`).
struct AskFailed {
    message: String,
    model_text: Option<String>,
}

impl TierGate {
    /// The question asked in memory and its answer, as a verdict. The caller holds the
    /// prompt lock.
    async fn ask_in_memory(
        &self,
        dispatches: Option<&DispatchRecord>,
        call: ToAsk,
    ) -> CallDecision {
        let ToAsk {
            tool,
            tool_use_id,
            arguments,
            tier,
            effect,
            notes,
            provenance,
        } = call;
        let (tool, tool_use_id) = (tool.as_str(), tool_use_id.as_str());
        let Some(approval_id) = new_approval_id() else {
            return self.no_randomness(tool, tool_use_id, tier);
        };
        let Ok(mut card) = self.card(tool, &arguments, provenance.clone()) else {
            return self.no_randomness(tool, tool_use_id, tier);
        };
        let grant = self.offer_on(tool, &arguments, &mut card, notes);
        let timeout = self.effective_timeout();
        let request = ApprovalQuestion {
            approval_id: approval_id.clone(),
            tool: tool.to_owned(),
            tier,
            effect,
            arguments,
            call_id: tool_use_id.to_owned(),
            channel: self.channel.clone(),
            deadline: timeout.and_then(deadline_after),
            grant,
            card,
        };
        self.emit_approval_requested(&request);
        let answer = self.ask(request.clone(), timeout).await;
        let decided = |verdict| {
            CallDecision::new(verdict, Some(tier))
                .asked(&approval_id)
                .traced(provenance.clone())
        };
        let refused = |why| decided(Verdict::refused(why, refusal_text(tool)));
        // Every answer but a person's yes that passes the card's second step refuses; an
        // approver that says yes for nobody has failed.
        let failed = |message: String| {
            tracing::error!(tool, tool_use_id, "{message}");
            self.emit_error(ErrorSite::Approver, message, tool, tool_use_id);
            self.emit_approval(
                &request,
                Ruling::new(Decision::Rejected, DecidedBy::ApproverFailed),
                None,
            );
            refused(Refusal::Failed)
        };
        match answer {
            Ok(Answer {
                decision: Decision::Approved,
                decided_by: by @ DecidedBy::Person { .. },
                confirmation,
                grant,
            }) if passes_step(&request, confirmation.as_deref()) => {
                // Recorded before anything else of the yes: a call that cannot be recorded
                // as let through does not run (a crash would leave no trace of it).
                if let Some(record) = dispatches
                    && self.record_dispatch(record, &request, &by).is_err()
                {
                    self.emit_approval(
                        &request,
                        Ruling::new(Decision::Rejected, DecidedBy::ApproverFailed),
                        None,
                    );
                    return refused(Refusal::Failed);
                }
                let made = grant.and_then(|wanted| self.make_grant(&request, &wanted, &by));
                let verdict = Verdict::Approved {
                    by: by.clone(),
                    grant: made.as_ref().map(|made| made.id.clone()),
                };
                self.emit_approval(&request, Ruling::new(Decision::Approved, by), made);
                decided(verdict)
            }
            // The channel let a yes through without the second step the card asks for.
            Ok(Answer {
                decision: Decision::Approved,
                decided_by: DecidedBy::Person { .. },
                ..
            }) => failed(format!(
                "approver '{}' approved without the second step the question asks for; the call was refused",
                self.approver_name()
            )),
            // A yes that no person gave is a broken approver, never an approval.
            Ok(Answer {
                decision: Decision::Approved,
                decided_by,
                ..
            }) => failed(format!(
                "approver '{}' answered approved without a person ({decided_by:?}); the call was refused",
                self.approver_name()
            )),
            Ok(Answer {
                decision: Decision::Rejected,
                decided_by,
                ..
            }) => {
                self.emit_approval(
                    &request,
                    Ruling::new(Decision::Rejected, decided_by.clone()),
                    None,
                );
                refused(Refusal::Rejected { by: decided_by })
            }
            Ok(Answer {
                decision: Decision::Timeout,
                ..
            }) => {
                self.emit_approval(
                    &request,
                    Ruling::new(Decision::Timeout, DecidedBy::Timeout),
                    None,
                );
                self.emit_error(
                    ErrorSite::Approver,
                    "no answer before the approval timeout",
                    tool,
                    tool_use_id,
                );
                refused(Refusal::Timeout {
                    by: DecidedBy::Timeout,
                })
            }
            Err(AskFailed {
                message,
                model_text,
            }) => {
                tracing::error!(tool, tool_use_id, approver = self.approver_name(), reason = %message, "approver failed; call refused");
                self.emit_error(ErrorSite::Approver, message, tool, tool_use_id);
                self.emit_approval(
                    &request,
                    Ruling::new(Decision::Rejected, DecidedBy::ApproverFailed),
                    None,
                );
                let text = model_text.unwrap_or_else(|| refusal_text(tool));
                decided(Verdict::refused(Refusal::Failed, text))
            }
        }
    }

    /// The approver's answer (a gate timeout answers `Timeout`), or the reason there is
    /// none.
    async fn ask(
        &self,
        request: ApprovalQuestion,
        timeout: Option<Duration>,
    ) -> Result<Answer, AskFailed> {
        let (tool, id) = (request.tool.clone(), request.call_id.clone());
        let decide = AssertUnwindSafe(async { self.approver.decide(request).await }).catch_unwind();
        let answered = match timeout {
            Some(limit) => match tokio::time::timeout(limit, decide).await {
                Ok(answered) => answered,
                Err(_elapsed) => {
                    tracing::warn!(tool = %tool, tool_use_id = %id, seconds = limit.as_secs_f64(), "approval timed out");
                    return Ok(Answer::new(Decision::Timeout, DecidedBy::Timeout));
                }
            },
            None => decide.await,
        };
        match answered {
            Ok(Ok(answer)) => {
                if answer.decision == Decision::Timeout {
                    tracing::warn!(tool = %tool, tool_use_id = %id, "approval timed out");
                } else {
                    tracing::info!(tool = %tool, tool_use_id = %id, decision = ?answer.decision, decided_by = ?answer.decided_by, approver = self.approver_name(), "approval decided");
                }
                Ok(answer)
            }
            Ok(Err(error)) => Err(AskFailed {
                message: format!(
                    "approver '{}' failed: {}",
                    self.approver_name(),
                    error.message
                ),
                model_text: error.model_text,
            }),
            Err(_) => Err(AskFailed {
                message: format!("approver '{}' panicked", self.approver_name()),
                model_text: None,
            }),
        }
    }
}

/// True when the question asks for no second step, or `confirmation` passes it.
fn passes_step(question: &ApprovalQuestion, confirmation: Option<&str>) -> bool {
    match &question.card.confirm {
        None => true,
        Some(step) => confirmation.is_some_and(|typed| step.accepts(typed)),
    }
}

/// `timeout` from now, in RFC 3339.
fn deadline_after(timeout: Duration) -> Option<String> {
    let span = jiff::SignedDuration::try_from(timeout).ok()?;
    jiff::Timestamp::now()
        .checked_add(span)
        .ok()
        .map(|t| t.to_string())
}
