//! The gate's durable ladder: in a hub conversation a tier-2 question is stored and the
//! turn pauses on the gate's own interrupt; when the turn resumes, the stored answer is
//! checked again before anything runs.

use std::time::Duration;

use jiff::Timestamp;
use serde_json::Value;
use tau_protocol::{
    Approval, ApprovalId, ChannelEvent, DecidedBy, Decision, GrantRequest, SessionId, Tier,
};

use super::gate::{Check, Precheck, Standing, TierGate};
use super::texts::{effect_uncertain_text, refusal_text};
use crate::audit::{AuditEvent, ErrorSite, EventBus};
use crate::ids::new_approval_id;
use tau_state::{
    Answered, ApprovalRow, ApprovalState, Approvals, CallToRun, NewApproval, Recheck, StateError,
    canonical_arguments, recheck,
};

/// The name of the gate's own interrupt; its reason and response name the stored
/// question ([`question_reason`], [`stored_question`]). Only this interrupt is durable;
/// any other is refused.
pub const APPROVAL_INTERRUPT: &str = "tau.approval";

/// The reason (and the resume's response) of the gate's interrupt for question `id`.
pub fn question_reason(id: &ApprovalId) -> Value {
    serde_json::json!({ "approval_id": id })
}

/// The stored question a reason (or response) of the gate's interrupt names; `None` for
/// anything else.
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

/// What the durable ladder decided about a call that is not being resumed.
#[derive(Debug, Clone, PartialEq)]
pub enum DurableCheck {
    /// Decided without a question (tier 0 or 1, unknown, exempt) or refused on the way.
    Decided(Check),
    /// The question is stored; the turn must pause until it is answered.
    Asked { approval_id: ApprovalId },
}

impl TierGate {
    /// Makes this gate ask durably: tier-2 questions become stored rows, not waits.
    pub fn with_durable(mut self, durable: DurableQuestions) -> Self {
        self.channel = durable.channel.clone();
        self.durable = Some(durable);
        self
    }

    pub fn is_durable(&self) -> bool {
        self.durable.is_some()
    }

    /// Where this gate stores its questions, when it asks durably.
    pub(crate) fn durable_store(&self) -> Option<&Approvals> {
        self.durable.as_ref().map(|durable| &durable.store)
    }

    /// The refusal of a call whose run stopped while its question `id` waited: whatever
    /// the question's fate, the call does not run.
    pub(crate) fn stopped_waiting(&self, tool: &str, tool_use_id: &str, id: &ApprovalId) -> Check {
        tracing::info!(tool, tool_use_id, approval_id = %id, "stopped while the question waited; the call is refused");
        let tier = match self.tiers.standing(tool) {
            Standing::Known { tier, .. } => Some(tier),
            Standing::Unknown | Standing::Invalid { .. } => None,
        };
        let mut check = Check::refuse(
            refusal_text(tool),
            Approval::Rejected,
            tier,
            DecidedBy::Cancelled,
        );
        check.approval_id = Some(id.clone());
        check
    }

    /// Steps 1 to 5 of the ladder, then (6) the question stored as a `pending` row and
    /// announced. Anything that fails on the way refuses.
    pub fn check_durable(&self, tool: &str, arguments: &Value, tool_use_id: &str) -> DurableCheck {
        let (tier, effect, notes, provenance) = match self.precheck(tool, arguments, tool_use_id) {
            Precheck::Decided(check) => return DurableCheck::Decided(check),
            Precheck::Ask {
                tier,
                effect,
                notes,
                provenance,
            } => (tier, effect, notes, provenance),
        };
        let Some(durable) = &self.durable else {
            return DurableCheck::Decided(self.refused_on_resume(
                tool,
                tool_use_id,
                Some(tier),
                "this gate cannot store questions",
            ));
        };
        let (Some(id), Ok(mut card)) = (new_approval_id(), self.card(tool, arguments, provenance))
        else {
            return DurableCheck::Decided(self.no_randomness(tool, tool_use_id, tier));
        };
        let grant_offer = self.offer_on(tool, arguments, &mut card, notes);
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
            arguments: arguments.clone(),
            channel: self.channel.clone(),
            created_at: now,
            deadline,
            card,
        }
        .into_row();
        row.grant_offer = grant_offer;
        if let Err(error) = durable.store.create_hidden_approval(&row) {
            return DurableCheck::Decided(self.refused_on_resume(
                tool,
                tool_use_id,
                Some(tier),
                &error.to_string(),
            ));
        }
        tracing::info!(tool, tool_use_id, approval_id = %id, channel = %self.channel, "approval stored; the turn pauses");
        crate::failpoint::reach(crate::failpoint::ASKED);
        // Shown to nobody yet (stored hidden: listed nowhere, answerable by nobody): the
        // turn's paused state must be saved first, so a kill in between never cancels a
        // question a person saw (`announce_stored`).
        self.unannounced
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(row.question());
        DurableCheck::Asked { approval_id: id }
    }

    /// The stored answer, checked again right before the call would run: the row is this
    /// call's and approved by a person, not consumed (consuming it now), not past its
    /// deadline, the tool still registered with the same tier, the arguments the tool
    /// would run with hash to the approved ones, and the stored card taken back by its
    /// writers (a card that showed files refuses unless the call is held to their
    /// hashes). Anything else refuses.
    pub fn resume_durable(
        &self,
        tool: &str,
        arguments: &Value,
        tool_use_id: &str,
        response: &Value,
    ) -> Check {
        let refuse = |tier, why: &str| self.refused_on_resume(tool, tool_use_id, tier, why);
        let Some(durable) = &self.durable else {
            return refuse(None, "this gate cannot resume stored questions");
        };
        let Some(id) = stored_question(response) else {
            return refuse(None, "the resume carried no approval id");
        };
        let row = match durable.store.approval(&id) {
            Ok(Some(row)) => row,
            Ok(None) => return refuse(None, &format!("no stored question '{id}'")),
            Err(error) => return refuse(None, &error.to_string()),
        };
        let tier = Some(row.tier);
        let registered_tier = match self.tiers.standing(tool) {
            Standing::Known { tier, .. } => Some(tier),
            Standing::Unknown | Standing::Invalid { .. } => None,
        };
        let (_, arguments_sha256) = canonical_arguments(arguments);
        let call = CallToRun {
            session: &durable.session,
            call_id: tool_use_id,
            tool,
            arguments_sha256: &arguments_sha256,
            channel: &durable.channel,
            registered_tier,
            now: Timestamp::now(),
        };
        let decided_by = row.decided_by.clone().unwrap_or(DecidedBy::ApproverFailed);
        let refused = |approval| {
            let mut check = Check::refuse(refusal_text(tool), approval, tier, decided_by.clone());
            check.approval_id = Some(row.id.clone());
            check.provenance = row.card.provenance.clone();
            check
        };
        // The one ladder every stored yes passes (a routine's too: `stored_gated_call`).
        match recheck(&row, &call) {
            Recheck::Approved => {}
            // Let through before and resumed again: tau stopped before the call's result
            // was stored. Whatever else changed since, it never runs a second time.
            Recheck::AlreadyUsed => return self.effect_uncertain(&durable.store, &row),
            Recheck::Refused(ApprovalState::Expired) => return refused(Approval::Timeout),
            Recheck::Refused(_) => return refused(Approval::Rejected),
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
            let mut check = Check::refuse(text, Approval::Refused, tier, DecidedBy::Policy);
            check.approval_id = Some(row.id.clone());
            return check;
        }
        tracing::info!(tool, tool_use_id, approval_id = %row.id, "stored approval checked and consumed");
        // The grant the yes asked for is made now, when the call it was asked with goes
        // through: exactly as the question offered it (a failure leaves the yes standing
        // for this one call, with an `error` line).
        let made = row
            .grant_request
            .as_ref()
            .and_then(|wanted| self.make_grant(&row.question(), wanted, &decided_by));
        let mut check = Check::refuse(String::new(), Approval::Approved, tier, decided_by);
        check.allowed = true;
        check.refusal_text = None;
        check.approval_id = Some(row.id.clone());
        check.grant = made.map(|made| made.id);
        // The call's record names the sources its card named: kept with the stored
        // question, since the conversation's trace of them lives in memory only.
        check.provenance = row.card.provenance.clone();
        check
    }

    /// Announces the questions stored since the last call (the `approval_requested` audit
    /// line, which the turn forwards to its channel and the hub to every channel). The
    /// turn calls it once the loop returned, its paused state saved; with `saved` false
    /// (the loop failed) they are dropped unannounced, and the next start cancels them.
    pub fn announce_stored(&self, saved: bool) {
        let questions = std::mem::take(
            &mut *self
                .unannounced
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        if !saved {
            return;
        }
        if !questions.is_empty() {
            crate::failpoint::reach(crate::failpoint::SAVED);
        }
        for question in questions {
            // Shown in the store before any channel hears of it, so an answer to what a
            // channel shows always finds the question answerable.
            if let Some(durable) = &self.durable {
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
    pub(crate) fn effect_uncertain(&self, store: &Approvals, row: &ApprovalRow) -> Check {
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
        let decided_by = row.decided_by.clone().unwrap_or(DecidedBy::ApproverFailed);
        let mut check = Check::refuse(
            effect_uncertain_text(&row.tool),
            Approval::Approved,
            Some(row.tier),
            decided_by,
        );
        check.approval_id = Some(row.id.clone());
        check.effect_uncertain = true;
        check
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

    /// A refusal because something about a stored question is wrong: the model reads the
    /// refusal text, the audit log an `error` event saying what.
    fn refused_on_resume(
        &self,
        tool: &str,
        tool_use_id: &str,
        tier: Option<Tier>,
        why: &str,
    ) -> Check {
        tracing::error!(tool, tool_use_id, reason = why, "stored approval refused");
        self.emit_error(
            ErrorSite::TierGate,
            format!("stored approval refused: {why}"),
            tool,
            tool_use_id,
        );
        Check::refuse(
            refusal_text(tool),
            Approval::Failed,
            tier,
            DecidedBy::ApproverFailed,
        )
    }
}

/// The audit event of a call closed as `effect_uncertain`.
pub fn effect_uncertain_event(row: &ApprovalRow) -> AuditEvent {
    AuditEvent::EffectUncertain {
        approval_id: row.id.clone(),
        tool: row.tool.clone(),
        tool_use_id: row.call_id.clone(),
        channel: row.channel.clone(),
        dispatched_at: row.consumed_at.map(|at| at.to_string()).unwrap_or_default(),
    }
}

/// A stored, still pending question as a channel shows it (again, after a restart).
pub fn requested_event(row: &ApprovalRow) -> ChannelEvent {
    ChannelEvent::ApprovalRequested(Box::new(row.question()))
}

/// Answers a stored question: the compare-and-set `pending -> to`, and when this answer
/// decided it, the `approval` audit event on `events`. Returns what the answer did and,
/// when it decided, the channel event that closes the question. A yes to a question whose
/// card asks for a second step counts only when `confirmation` passes it; otherwise
/// nothing changes ([`Answered::StepMissing`]).
pub fn answer_durable(
    store: &Approvals,
    events: &EventBus,
    id: &ApprovalId,
    to: ApprovalState,
    decided_by: &DecidedBy,
    confirmation: Option<&str>,
) -> Result<(Answered, Option<ChannelEvent>), StateError> {
    answer_durable_granting(store, events, id, to, decided_by, confirmation, None)
}

/// [`answer_durable`] with the grant a person asked for with their yes ("yes, and allow
/// this again"), kept with the question and made when its call goes through.
pub fn answer_durable_granting(
    store: &Approvals,
    events: &EventBus,
    id: &ApprovalId,
    to: ApprovalState,
    decided_by: &DecidedBy,
    confirmation: Option<&str>,
    grant: Option<&GrantRequest>,
) -> Result<(Answered, Option<ChannelEvent>), StateError> {
    // A question not shown yet has no second step to ask for: it answers nothing
    // (`decide_approval` says so), and must not be named by a "step missing" either.
    if to == ApprovalState::Approved
        && let Some(row) = store.approval(id)?
        && row.state == ApprovalState::Pending
        && store.approval_shown(id)?
        && let Some(step) = &row.card.confirm
        && !confirmation.is_some_and(|typed| step.accepts(typed))
    {
        tracing::info!(approval_id = %row.id, tool = %row.tool, "a yes without the second step; the question stays open");
        return Ok((Answered::StepMissing(row), None));
    }
    let answered = store.decide_approval_granting(id, to, decided_by, Timestamp::now(), grant)?;
    let Answered::Decided(row) = &answered else {
        return Ok((answered, None));
    };
    if decided_by.is_person() {
        crate::failpoint::reach(crate::failpoint::ANSWERED);
    }
    let decision = match row.state {
        ApprovalState::Approved => Decision::Approved,
        ApprovalState::Expired => Decision::Timeout,
        ApprovalState::Pending
        | ApprovalState::Rejected
        | ApprovalState::Superseded
        | ApprovalState::Cancelled => Decision::Rejected,
    };
    tracing::info!(approval_id = %row.id, tool = %row.tool, state = row.state.as_str(), ?decided_by, "stored approval decided");
    events.emit(&AuditEvent::Approval {
        approval_id: row.id.clone(),
        tool: row.tool.clone(),
        tier: row.tier,
        tool_use_id: row.call_id.clone(),
        arguments: row.arguments_value(),
        decision,
        decided_by: decided_by.clone(),
        approver: "durable".to_owned(),
        channel: row.channel.clone(),
        grant: None,
        provenance: row.card.provenance.clone(),
    });
    let closed = ChannelEvent::ApprovalDecided {
        approval_id: row.id.clone(),
        call_id: row.call_id.clone(),
        tool: row.tool.clone(),
        decision,
        decided_by: decided_by.clone(),
        grant: None,
    };
    Ok((answered, Some(closed)))
}
