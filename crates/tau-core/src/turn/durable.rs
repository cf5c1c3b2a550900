//! A turn that waits on a stored question: resuming it once the question is answered,
//! and closing it when the conversation moves on.

use tau_agent::{AgentError, Input, Interrupt, InterruptResponse};
use tau_protocol::ApprovalId;

use super::{ChannelSink, TauAgent, TurnError, TurnOutcome};
use crate::approval::{APPROVAL_INTERRUPT, question_reason, stored_question};

/// The stored question an interrupt of the gate waits on; `None` for any other interrupt.
pub fn waits_on(interrupt: &Interrupt) -> Option<ApprovalId> {
    if interrupt.name != APPROVAL_INTERRUPT {
        return None;
    }
    stored_question(&interrupt.reason)
}

impl TauAgent {
    /// The approval ids of the gate's stored questions among `interrupts`.
    pub(super) fn stored_question_ids(&self, interrupts: &[Interrupt]) -> Vec<ApprovalId> {
        if !self.gate.is_durable() {
            return Vec::new();
        }
        interrupts.iter().filter_map(waits_on).collect()
    }

    /// The stored questions this conversation's turn waits on, if it waits: also those
    /// answered already when the turn was resumed and cut off before it finished (tau was
    /// killed), so the turn is resumed again and the gate finds what became of each call.
    pub fn pending_approvals(&self) -> Vec<ApprovalId> {
        self.stored_question_ids(&self.agent.interrupt_state().unfinished())
    }

    /// Resumes the turn that waits on `approval_id` once its row was decided (approved,
    /// rejected or expired): the gate checks the row again before the call can run, and
    /// the turn goes on to the model's answer.
    pub async fn resume(
        &mut self,
        approval_id: &ApprovalId,
        sink: Option<&ChannelSink>,
    ) -> Result<TurnOutcome, TurnError> {
        self.continue_stored(approval_id, sink, self.max_turns, None)
            .await
    }

    /// Ends the turn that waits on `approval_id` without asking the model again: the
    /// gate reads the row's final state (superseded, cancelled, expired), the model will
    /// read the refusal as the call's result, and the turn ends with `stop`. Used when a
    /// newer message replaces the question.
    pub async fn close(
        &mut self,
        approval_id: &ApprovalId,
        sink: Option<&ChannelSink>,
        stop: tau_protocol::TurnStop,
    ) -> Result<TurnOutcome, TurnError> {
        self.continue_stored(approval_id, sink, 0, Some(stop)).await
    }

    /// Continues the turn with an answer for every stored question it waits on, once all
    /// of them are decided: a model message with two tier-2 calls asks two questions, and
    /// the turn goes on only with both. With `closing`, it ends like [`TauAgent::close`]
    /// (no model call); without, like [`TauAgent::resume`].
    pub async fn resume_stored(
        &mut self,
        sink: Option<&ChannelSink>,
        closing: Option<tau_protocol::TurnStop>,
    ) -> Result<TurnOutcome, TurnError> {
        let turn = self.turn(sink);
        let _attached = self.forwarder.attach(sink.cloned());
        let responses: Vec<InterruptResponse> = if self.gate.is_durable() {
            self.agent
                .interrupt_state()
                .unfinished()
                .into_iter()
                .filter_map(|i| {
                    let id = waits_on(&i)?;
                    Some(InterruptResponse {
                        interrupt_id: i.id,
                        response: question_reason(&id),
                    })
                })
                .collect()
        } else {
            Vec::new()
        };
        if responses.is_empty() {
            return Err(self.fail(
                &turn,
                AgentError::NothingToResume,
                0,
                tau_agent::Usage::default(),
            ));
        }
        let budget = if closing.is_some() { 0 } else { self.max_turns };
        self.run_turn(&turn, Input::Resume(responses), budget, closing)
            .await
    }

    async fn continue_stored(
        &mut self,
        approval_id: &ApprovalId,
        sink: Option<&ChannelSink>,
        budget: u32,
        closing: Option<tau_protocol::TurnStop>,
    ) -> Result<TurnOutcome, TurnError> {
        let turn = self.turn(sink);
        let _attached = self.forwarder.attach(sink.cloned());
        let waiting = self
            .agent
            .interrupt_state()
            .unfinished()
            .into_iter()
            .find(|i| waits_on(i).as_ref() == Some(approval_id));
        let Some(interrupt) = waiting.filter(|_| self.gate.is_durable()) else {
            let source = AgentError::UnknownInterrupt {
                id: approval_id.to_string(),
            };
            return Err(self.fail(&turn, source, 0, tau_agent::Usage::default()));
        };
        let input = Input::Resume(vec![InterruptResponse {
            interrupt_id: interrupt.id,
            response: question_reason(approval_id),
        }]);
        self.run_turn(&turn, input, budget, closing).await
    }
}
