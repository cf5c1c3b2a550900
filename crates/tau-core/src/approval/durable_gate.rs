//! The gate's durable mode: in a hub conversation a tier-2 question is stored and the
//! turn pauses on the gate's own interrupt; when the turn resumes, the stored answer is
//! checked again before anything runs.

use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use jiff::Timestamp;
use serde_json::Value;
use tau_protocol::{ApprovalId, CallDecision, DecidedBy, Refusal, SessionId, Tier, Verdict};

use super::asking::{Asking, ToAsk};
use super::gate::TierGate;
use super::stored_answer::effect_uncertain_event;
use super::texts::{effect_uncertain_text, refusal_text};
use crate::audit::{AuditEvent, ErrorSite};
use crate::ids::new_approval_id;
use tau_state::{
    ApprovalRow, ApprovalState, Approvals, CallToRun, NewApproval, Recheck, canonical_arguments,
    recheck,
};

/// The name of the gate's own interrupt; its reason and response name the stored
/// question ([`question_reason`], [`stored_question`]). Only this interrupt is durable;
/// any other is refused.
pub const APPROVAL_INTERRUPT: &str = "tau.approval";

/// The reason (and the resume's response) of the gate's interrupt for question `id`: the
/// agent keeps it with the turn's paused state, as JSON.
pub fn question_reason(id: &ApprovalId) -> Value {
    serde_json::json!({ "approval_id": id })
}

/// The stored question a reason (or response) of the gate's interrupt names; `None` for
/// anything else. Read once, where the agent hands it back.
pub fn stored_question(reason: &Value) -> Option<ApprovalId> {
    ApprovalId::parse(reason.get("approval_id")?.as_str()?).ok()
}

/// How a hub conversation's gate asks: it stores the question for `session`, to be
/// answered on `channel` only, and lets it wait up to `timeout`
/// (`[approval] remote_timeout_seconds`).
#[derive(Clone)]
pub struct DurableQuestions {
    pub store: Approvals,
    pub session: SessionId,
    pub channel: String,
    pub timeout: Duration,
}

impl Asking for DurableQuestions {
    fn ask<'a>(&'a self, gate: &'a TierGate, call: ToAsk) -> BoxFuture<'a, CallDecision> {
        std::future::ready(gate.store_question(self, call)).boxed()
    }

    fn stored(&self) -> Option<&DurableQuestions> {
        Some(self)
    }

    fn call_store(&self) -> Option<(&Approvals, &SessionId)> {
        Some((&self.store, &self.session))
    }
}

impl TierGate {
    /// Makes this gate ask durably: tier-2 questions become stored rows, not waits.
    pub fn with_durable(mut self, durable: DurableQuestions) -> Self {
        self.channel = durable.channel.clone();
        self.asking = Box::new(durable);
        self
    }

    pub fn is_durable(&self) -> bool {
        self.asking.stored().is_some()
    }

    /// Where this gate stores its questions, when it asks durably.
    pub(crate) fn durable_store(&self) -> Option<&Approvals> {
        self.asking.stored().map(|durable| &durable.store)
    }

    /// The refusal of a call whose run stopped while its question `id` waited: whatever
    /// the question's fate, the call does not run.
    pub(crate) fn stopped_waiting(
        &self,
        tool: &str,
        tool_use_id: &str,
        id: &ApprovalId,
    ) -> CallDecision {
        tracing::info!(tool, tool_use_id, approval_id = %id, "stopped while the question waited; the call is refused");
        let why = Refusal::Rejected {
            by: DecidedBy::Cancelled,
        };
        CallDecision::new(
            Verdict::refused(why, refusal_text(tool)),
            self.registered_tier(tool),
        )
        .asked(id)
    }

    /// (6) The question stored as a `pending` row, hidden until announced. Anything that
    /// fails on the way refuses.
    fn store_question(&self, durable: &DurableQuestions, call: ToAsk) -> CallDecision {
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
        let (Some(id), Ok(mut card)) = (new_approval_id(), self.card(tool, &arguments, provenance))
        else {
            return self.no_randomness(tool, tool_use_id, tier);
        };
        let grant_offer = self.offer_on(tool, &arguments, &mut card, notes);
        let now = Timestamp::now();
        let deadline = jiff::SignedDuration::try_from(durable.timeout)
            .ok()
            .and_then(|span| now.checked_add(span).ok())
            .unwrap_or(now);
        let mut row = NewApproval {
            id: id.clone(),
            session: durable.session.clone(),
            call_id: tool_use_id.to_owned(),
            tool: tool.to_owned(),
            tier,
            effect,
            arguments,
            channel: self.channel.clone(),
            created_at: now,
            deadline,
            card,
        }
        .into_row();
        row.grant_offer = grant_offer;
        if let Err(error) = durable.store.create_hidden_approval(&row) {
            return self.refused_on_resume(tool, tool_use_id, Some(tier), &error.to_string());
        }
        tracing::info!(tool, tool_use_id, approval_id = %id, channel = %self.channel, "approval stored; the turn pauses");
        crate::failpoint::reach(crate::failpoint::ASKED);
        // Shown to nobody yet (stored hidden: listed nowhere, answerable by nobody): the
        // turn's paused state must be saved first, so a kill in between never cancels a
        // question a person saw (`announce_stored`).
        self.unannounced().push(row.question());
        CallDecision::new(Verdict::Asked, Some(tier)).asked(&id)
    }

    /// The stored answer to question `id`, checked again right before the call would
    /// run: the row is this call's and approved by a person, not consumed (consuming it
    /// now), not past its deadline, the tool still registered with the same tier, the
    /// arguments the tool would run with hash to the approved ones, and the stored card
    /// taken back by its writers (a card that showed files refuses unless the call is held
    /// to their hashes). Anything else refuses.
    pub fn resume_durable(
        &self,
        tool: &str,
        arguments: &Value,
        tool_use_id: &str,
        id: &ApprovalId,
    ) -> CallDecision {
        let refuse = |tier, why: &str| self.refused_on_resume(tool, tool_use_id, tier, why);
        let Some(durable) = self.asking.stored() else {
            return refuse(None, "this gate cannot resume stored questions");
        };
        let row = match durable.store.approval(id) {
            Ok(Some(row)) => row,
            Ok(None) => return refuse(None, &format!("no stored question '{id}'")),
            Err(error) => return refuse(None, &error.to_string()),
        };
        let tier = Some(row.tier);
        let (_, arguments_sha256) = canonical_arguments(arguments);
        let call = CallToRun {
            session: &durable.session,
            call_id: tool_use_id,
            tool,
            arguments_sha256: &arguments_sha256,
            channel: &durable.channel,
            registered_tier: self.registered_tier(tool),
            now: Timestamp::now(),
        };
        let by = row.decided_by.clone().unwrap_or(DecidedBy::ApproverFailed);
        let decided = |verdict| {
            CallDecision::new(verdict, tier)
                .asked(&row.id)
                .traced(row.card.provenance.clone())
        };
        let refused = |why| decided(Verdict::refused(why, refusal_text(tool)));
        // The one ladder every stored yes passes (a routine's too: `stored_gated_call`).
        match recheck(&row, &call) {
            Recheck::Approved => {}
            // Let through before and resumed again: tau stopped before the call's result
            // was stored. Whatever else changed since, it never runs a second time.
            Recheck::AlreadyUsed => return self.effect_uncertain(&durable.store, &row),
            Recheck::Refused(ApprovalState::Expired) => {
                return refused(Refusal::Timeout { by });
            }
            Recheck::Refused(_) => return refused(Refusal::Rejected { by }),
            failed => return refuse(tier, failed.reason()),
        }
        if let Err(reason) = self.tiers.check_input(tool, arguments) {
            return refuse(
                tier,
                &format!("the tool now refuses the arguments: {reason}"),
            );
        }
        match durable.store.consume_approval(&row.id, Timestamp::now()) {
            Ok(true) => {}
            Ok(false) => return refuse(tier, "the approval was already used"),
            Err(error) => return refuse(tier, &error.to_string()),
        }
        // What the card promised (the hashes of the files it showed) comes back from the
        // stored row, not from this process's memory, which a restart emptied.
        if let Err(text) = self.tiers.resume_card(tool, arguments, &row.card) {
            tracing::error!(tool, tool_use_id, approval_id = %row.id, reason = %text, "stored approval refused");
            self.emit_error(
                ErrorSite::TierGate,
                format!("stored approval refused: {text}"),
                tool,
                tool_use_id,
            );
            return CallDecision::new(Verdict::refused(Refusal::Policy, text), tier).asked(&row.id);
        }
        tracing::info!(tool, tool_use_id, approval_id = %row.id, "stored approval checked and consumed");
        // The grant the yes asked for is made now, when the call it was asked with goes
        // through: exactly as the question offered it (a failure leaves the yes standing
        // for this one call, with an `error` line).
        let made = row
            .grant_request
            .as_ref()
            .and_then(|wanted| self.make_grant(&row.question(), wanted, &by));
        // The call's record names the sources its card named: kept with the stored
        // question, since the conversation's trace of them lives in memory only.
        decided(Verdict::Approved {
            by,
            grant: made.map(|made| made.id),
        })
    }

    /// Announces the questions stored since the last call (the `approval_requested` audit
    /// line, which the turn forwards to its channel and the hub to every channel). The
    /// turn calls it once the loop returned, its paused state saved; with `saved` false
    /// (the loop failed) they are dropped unannounced, and the next start cancels them.
    pub fn announce_stored(&self, saved: bool) {
        let questions = std::mem::take(&mut *self.unannounced());
        if !saved {
            return;
        }
        if !questions.is_empty() {
            crate::failpoint::reach(crate::failpoint::SAVED);
        }
        for question in questions {
            // Shown in the store before any channel hears of it, so an answer to what a
            // channel shows always finds the question answerable.
            if let Some(durable) = self.asking.stored() {
                let shown = durable
                    .store
                    .show_approval(&question.approval_id)
                    .map_err(|e| e.to_string());
                if let Err(error) = shown {
                    // Never shown, never answerable: its deadline ends it, and its turn
                    // goes on with the timeout.
                    tracing::error!(approval_id = %question.approval_id, %error, "cannot show a stored question");
                    self.emit_error(
                        ErrorSite::TierGate,
                        format!("cannot show the stored question: {error}"),
                        &question.tool,
                        &question.call_id,
                    );
                    continue;
                }
            }
            self.events.emit(&AuditEvent::ApprovalRequested(question));
        }
    }

    /// The call of `row` was dispatched and its result never stored: closes the row as
    /// `effect_uncertain` (the audit log and the channel hear of it once), and the model
    /// reads that it may or may not have run.
    pub(crate) fn effect_uncertain(&self, store: &Approvals, row: &ApprovalRow) -> CallDecision {
        match store.close_effect_uncertain(&row.id, Timestamp::now()) {
            Ok(Some(closed)) => {
                tracing::warn!(tool = %row.tool, tool_use_id = %row.call_id, approval_id = %row.id, "an approved call was running when tau stopped; its effect is uncertain");
                self.events.emit(&effect_uncertain_event(&closed));
            }
            // Closed already (at the start, or its outcome was recorded): said once.
            Ok(None) => {}
            Err(error) => {
                self.emit_error(
                    ErrorSite::TierGate,
                    format!("cannot close a call whose effect is uncertain: {error}"),
                    &row.tool,
                    &row.call_id,
                );
            }
        }
        let by = row.decided_by.clone().unwrap_or(DecidedBy::ApproverFailed);
        let why = Refusal::EffectUncertain { by };
        CallDecision::new(
            Verdict::refused(why, effect_uncertain_text(&row.tool)),
            Some(row.tier),
        )
        .asked(&row.id)
    }

    /// Records that the call let through on question `id` (a stored one, or a yes given
    /// in memory and recorded as let through) returned and its result is about to be
    /// stored with the turn.
    pub fn call_finished(&self, id: &ApprovalId) {
        let Some((store, _)) = self.call_store() else {
            return;
        };
        if let Err(error) = store.finish_approval(id, Timestamp::now()) {
            tracing::error!(approval_id = %id, %error, "cannot record that an approved call finished");
        }
    }

    /// The refusal of a resumed call whose resume named no stored question.
    pub(crate) fn resume_unnamed(&self, tool: &str, tool_use_id: &str) -> CallDecision {
        self.refused_on_resume(tool, tool_use_id, None, "the resume carried no approval id")
    }

    /// A refusal because something about a stored question is wrong: the model reads the
    /// refusal text, the audit log an `error` event saying what.
    fn refused_on_resume(
        &self,
        tool: &str,
        tool_use_id: &str,
        tier: Option<Tier>,
        why: &str,
    ) -> CallDecision {
        tracing::error!(tool, tool_use_id, reason = why, "stored approval refused");
        self.emit_error(
            ErrorSite::TierGate,
            format!("stored approval refused: {why}"),
            tool,
            tool_use_id,
        );
        CallDecision::new(Verdict::refused(Refusal::Failed, refusal_text(tool)), tier)
    }
}
