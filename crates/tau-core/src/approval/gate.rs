//! `TierGate`: the one place that decides whether a tool call may run.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use futures::FutureExt;
use serde_json::Value;

use tau_protocol::{
    Approval, ApprovalId, ApprovalQuestion, CallCard, CallProvenance, CallStatus, CardNote,
    DecidedBy, Decision, GrantId, GrantMade, Tier,
};

use super::approver::{Answer, Approver};
use super::texts::{invalid_call_text, refusal_text, unknown_tool_text};
use crate::audit::{AuditEvent, ErrorSite, EventBus};
use crate::ids::new_approval_id;
use crate::provenance::{CallTrace, Provenance};

use super::durable_gate::DurableQuestions;
use super::grants::GateGrants;

/// What the gate knows about a tool name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Standing {
    Unknown,
    Known {
        tier: Tier,
        effect: String,
    },
    /// Registered, but its tier can no longer be trusted.
    Invalid {
        reason: String,
    },
}

/// Where the gate looks tools up; the catalog implements it.
pub trait TierLookup: Send + Sync {
    fn standing(&self, tool: &str) -> Standing;

    /// The tool's provenance rule: whether what it returns is trusted, and whether a call
    /// is asked once the conversation read outside text. The default: a local tool whose
    /// results are outside text.
    fn provenance_rule(&self, _tool: &str) -> crate::provenance::ProvenanceRule {
        crate::provenance::ProvenanceRule::default()
    }

    /// SHA-256 of the tool's input schema as it is now; `None` (the default) means no
    /// grant can ever cover a call to it.
    fn schema_sha256(&self, _tool: &str) -> Option<String> {
        None
    }

    /// For a tool that runs the workspace's files, the workspace's tree now; `None` (the
    /// default) for any other tool.
    fn workspace_tree(
        &self,
        _tool: &str,
    ) -> Option<Result<tau_protocol::WorkspaceTree, tau_protocol::TreeError>> {
        None
    }

    /// What tau says about a tier-2 call on its question's card.
    fn card(&self, _tool: &str, _arguments: &Value) -> CallCard {
        CallCard::default()
    }

    /// The reason the tool would refuse `arguments`, said before anyone is asked.
    fn check_input(&self, _tool: &str, _arguments: &Value) -> Result<(), String> {
        Ok(())
    }

    /// A stored question's card, right before its approved call runs; `Err` is the text
    /// the model reads instead, and the call does not run. A card that showed files
    /// refuses unless something holds the call to them.
    fn resume_card(&self, _tool: &str, _arguments: &Value, card: &CallCard) -> Result<(), String> {
        if card.shown_files.is_empty() {
            Ok(())
        } else {
            Err(crate::card::SHOWN_FILES_UNCHECKED_TEXT.to_owned())
        }
    }
}

/// Why an approver gave no answer, and what the model reads then (the refusal text when
/// `None`).
struct AskFailed {
    message: String,
    model_text: Option<String>,
}

/// The gate's answer: `(allowed, refusal_text, approval)`, the tier it used, and who or
/// what decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    pub allowed: bool,
    /// The text the model reads instead of a result; set exactly when not allowed.
    pub refusal_text: Option<String>,
    pub approval: Approval,
    pub tier: Option<Tier>,
    pub decided_by: DecidedBy,
    /// The question asked about this call, if one was.
    pub approval_id: Option<ApprovalId>,
    /// No tool of that name is registered.
    pub unknown_tool: bool,
    /// The tool refused the arguments before anyone was asked.
    pub invalid: bool,
    /// The call was approved and let through before, and tau stopped before its result
    /// was stored: it is not run again, and may or may not have run.
    pub effect_uncertain: bool,
    /// The grant that let this call through, or that the yes to it made: once the call
    /// ran, the grant is pinned to the workspace as the call left it.
    pub grant: Option<GrantId>,
    /// What the call's arguments owe to text from outside, and whether it was asked
    /// because of it; empty when the conversation read nothing from outside.
    pub provenance: CallProvenance,
}

impl Check {
    fn allow(tier: Tier, approval: Approval, decided_by: DecidedBy) -> Self {
        Self {
            allowed: true,
            refusal_text: None,
            approval,
            tier: Some(tier),
            decided_by,
            approval_id: None,
            unknown_tool: false,
            invalid: false,
            effect_uncertain: false,
            grant: None,
            provenance: CallProvenance::default(),
        }
    }

    /// A refusal decided by `decided_by`.
    pub fn refuse(
        text: String,
        approval: Approval,
        tier: Option<Tier>,
        decided_by: DecidedBy,
    ) -> Self {
        Self {
            allowed: false,
            refusal_text: Some(text),
            approval,
            tier,
            decided_by,
            approval_id: None,
            unknown_tool: false,
            invalid: false,
            effect_uncertain: false,
            grant: None,
            provenance: CallProvenance::default(),
        }
    }

    fn asked(mut self, approval_id: &ApprovalId) -> Self {
        self.approval_id = Some(approval_id.clone());
        self
    }

    /// The status a refused call is recorded with.
    pub fn refused_status(&self) -> CallStatus {
        if self.effect_uncertain {
            // It may have run; "refused" would say it did not.
            CallStatus::Error
        } else if self.unknown_tool {
            CallStatus::UnknownTool
        } else if self.invalid {
            CallStatus::Invalid
        } else {
            CallStatus::Refused
        }
    }
}

/// An exemption that could not decide; it counts as "not exempt".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ExemptionError {
    pub message: String,
}

/// Lets a registered routine skip the per-call question for calls it owns. Consulted only
/// for tier-2 calls to known tools; exempts only on `Ok(true)`.
pub trait Exemption: Send + Sync {
    fn exempts(&self, tool: &str, arguments: &Value) -> Result<bool, ExemptionError>;
}

impl<F: Fn(&str, &Value) -> bool + Send + Sync> Exemption for F {
    fn exempts(&self, tool: &str, arguments: &Value) -> Result<bool, ExemptionError> {
        Ok(self(tool, arguments))
    }
}

type Exemptions = Mutex<Vec<(u64, String, Arc<dyn Exemption>)>>;

/// Removes its exemption again with [`ExemptionHandle::undo`]. Dropping it keeps the
/// exemption in place.
#[derive(Debug)]
pub struct ExemptionHandle {
    id: u64,
    exemptions: Weak<Exemptions>,
}

impl ExemptionHandle {
    pub fn undo(self) {
        if let Some(exemptions) = self.exemptions.upgrade() {
            exemptions
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .retain(|(id, _, _)| *id != self.id);
        }
    }
}

/// Steps 1 to 5 of the ladder decided, or a person must be asked.
pub(super) enum Precheck {
    Decided(Check),
    /// `notes` go on the question's card: why a grant did not cover the call.
    Ask {
        tier: Tier,
        effect: String,
        notes: Vec<CardNote>,
        provenance: CallProvenance,
    },
}

/// What happened to a call, for [`TierGate::record`].
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCallRecord {
    pub tool: String,
    pub tier: Option<Tier>,
    pub tool_use_id: String,
    pub arguments: Value,
    pub status: CallStatus,
    pub approval: Approval,
    pub decided_by: DecidedBy,
    pub approval_id: Option<ApprovalId>,
    pub result_summary: Option<String>,
    pub duration: Option<Duration>,
    pub provenance: CallProvenance,
}

impl ToolCallRecord {
    /// The record of a call the gate decided on, before anything about its run is known.
    pub fn decided(check: &Check, tool: &str, tool_use_id: &str, arguments: Value) -> Self {
        Self {
            tool: tool.to_owned(),
            tier: check.tier,
            tool_use_id: tool_use_id.to_owned(),
            arguments,
            status: if check.allowed {
                CallStatus::Success
            } else {
                check.refused_status()
            },
            approval: check.approval,
            decided_by: check.decided_by.clone(),
            approval_id: check.approval_id.clone(),
            result_summary: None,
            duration: None,
            provenance: check.provenance.clone(),
        }
    }
}

/// The policy: tier 0 and 1 run, tier 2 runs only on a person's yes, and nothing that
/// fails ever approves.
pub struct TierGate {
    pub(super) tiers: Arc<dyn TierLookup>,
    approver: Arc<dyn Approver>,
    timeout: Option<Duration>,
    pub(super) channel: String,
    pub(super) events: EventBus,
    /// Set in a hub conversation: questions are stored, not waited for.
    pub(super) durable: Option<DurableQuestions>,
    /// Set where questions are asked in memory and the calls a yes lets through are
    /// recorded (`tau chat`, `tau tui`), so a crash while one runs is reported.
    pub(super) dispatches: Option<super::dispatch::DispatchRecord>,
    exemptions: Arc<Exemptions>,
    next_exemption: AtomicU64,
    /// One question at a time per gate: parallel calls queue here.
    prompt_lock: tokio::sync::Mutex<()>,
    /// Set where a person's grants apply: checked before asking, offered on questions.
    pub(super) grants: Option<GateGrants>,
    /// Stored questions not shown to anyone yet: announced once the turn's paused state
    /// is saved ([`TierGate::announce_stored`]).
    pub(super) unannounced: std::sync::Mutex<Vec<ApprovalQuestion>>,
    /// Put first on every card this gate shows: whose question it is, when that is not
    /// the person's own conversation (a routine's).
    card_note: Option<tau_protocol::CardNote>,
    /// What the conversation read and from where: set for a conversation's gate, so a
    /// write steered by outside text is asked and every card says where values came from.
    pub(super) provenance: Option<Arc<Provenance>>,
}

const SUMMARY_CHARS: usize = 200;

impl TierGate {
    pub fn new(tiers: Arc<dyn TierLookup>, approver: Arc<dyn Approver>, events: EventBus) -> Self {
        let channel = approver.name().to_owned();
        Self {
            tiers,
            approver,
            timeout: None,
            channel,
            events,
            durable: None,
            dispatches: None,
            exemptions: Arc::default(),
            next_exemption: AtomicU64::new(0),
            prompt_lock: tokio::sync::Mutex::new(()),
            grants: None,
            unannounced: std::sync::Mutex::default(),
            card_note: None,
            provenance: None,
        }
    }

    /// Traces every call's arguments through `provenance`, which the conversation feeds.
    pub fn with_provenance(mut self, provenance: Arc<Provenance>) -> Self {
        self.provenance = Some(provenance);
        self
    }

    pub fn provenance(&self) -> Option<&Arc<Provenance>> {
        self.provenance.as_ref()
    }

    /// Puts `note` first on every card this gate shows.
    pub fn with_card_note(mut self, note: tau_protocol::CardNote) -> Self {
        self.card_note = Some(note);
        self
    }

    /// Bounds every question; wins over the approver's own timeout.
    pub fn with_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.timeout = timeout;
        self
    }

    /// The channel named in approval requests (the approver's name by default).
    pub fn with_channel(mut self, channel: impl Into<String>) -> Self {
        self.channel = channel.into();
        self
    }

    pub fn events(&self) -> &EventBus {
        &self.events
    }

    pub fn approver_name(&self) -> &str {
        self.approver.name()
    }

    /// The wait that applies to a question: the gate's, else the approver's, else none.
    pub fn effective_timeout(&self) -> Option<Duration> {
        self.timeout.or_else(|| self.approver.timeout())
    }

    pub fn standing(&self, tool: &str) -> Standing {
        self.tiers.standing(tool)
    }

    /// Adds an exemption under `name` (what the audit log says decided an exempt call);
    /// the handle takes it away again.
    pub fn add_exemption(
        &self,
        name: impl Into<String>,
        exemption: Arc<dyn Exemption>,
    ) -> ExemptionHandle {
        let id = self.next_exemption.fetch_add(1, Ordering::Relaxed);
        self.exemptions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((id, name.into(), exemption));
        ExemptionHandle {
            id,
            exemptions: Arc::downgrade(&self.exemptions),
        }
    }

    /// Decides whether `tool` may run with `arguments`. A bug inside the gate refuses.
    pub async fn check(&self, tool: &str, arguments: &Value, tool_use_id: &str) -> Check {
        match AssertUnwindSafe(async { self.ladder(tool, arguments, tool_use_id).await })
            .catch_unwind()
            .await
        {
            Ok(check) => check,
            Err(_) => {
                tracing::error!(tool, tool_use_id, "the tier gate failed; refusing the call");
                self.emit_error(
                    ErrorSite::TierGate,
                    "the tier gate failed; the call was refused",
                    tool,
                    tool_use_id,
                );
                Check::refuse(
                    refusal_text(tool),
                    Approval::Failed,
                    None,
                    DecidedBy::ApproverFailed,
                )
            }
        }
    }

    /// Steps 1 to 5 of the ladder: everything decided without asking anyone.
    pub(super) fn precheck(&self, tool: &str, arguments: &Value, tool_use_id: &str) -> Precheck {
        // 1. unknown tool -> refuse
        // 2. invalid tier -> refuse
        let (tier, effect) = match self.tiers.standing(tool) {
            Standing::Unknown => {
                tracing::warn!(tool, tool_use_id, "call to an unknown tool refused");
                self.emit_error(
                    ErrorSite::TierGate,
                    format!("unknown tool '{tool}' refused"),
                    tool,
                    tool_use_id,
                );
                let mut check = Check::refuse(
                    unknown_tool_text(tool),
                    Approval::Refused,
                    None,
                    DecidedBy::Policy,
                );
                check.unknown_tool = true;
                return Precheck::Decided(check);
            }
            Standing::Invalid { reason } => {
                tracing::error!(tool, tool_use_id, %reason, "tool with an invalid tier refused");
                self.emit_error(ErrorSite::TierGate, reason, tool, tool_use_id);
                return Precheck::Decided(Check::refuse(
                    refusal_text(tool),
                    Approval::Refused,
                    None,
                    DecidedBy::Policy,
                ));
            }
            Standing::Known { tier, effect } => (tier, effect),
        };
        // 3. arguments the tool itself refuses -> refuse as invalid, nobody asked
        if let Err(reason) = self.tiers.check_input(tool, arguments) {
            tracing::info!(tool, tool_use_id, %reason, "call refused by its tool before asking");
            let mut check = Check::refuse(
                invalid_call_text(tool, &reason),
                Approval::Refused,
                Some(tier),
                DecidedBy::Policy,
            );
            check.invalid = true;
            return Precheck::Decided(check);
        }
        // Where the arguments came from: read once, carried on the record and the card.
        let CallTrace {
            provenance,
            escalation,
        } = match &self.provenance {
            Some(traced) => traced.trace_call(self.tiers.provenance_rule(tool), tier, arguments),
            None => CallTrace::default(),
        };
        let decided = |mut check: Check| {
            check.provenance = provenance.clone();
            Precheck::Decided(check)
        };
        // 4. tier 0 or 1 -> allow, unless outside text steered a write that sends
        //    something out (or a read that reaches out): then asked like tier 2
        if tier != Tier::Physical && escalation.is_none() {
            return decided(Check::allow(tier, Approval::NotRequired, DecidedBy::Policy));
        }
        // 5. exempt (exactly Ok(true)) -> allow, recorded "exempt"; never for a call whose
        //    arguments came from outside text, nor one asked only because of it
        if escalation.is_none()
            && !provenance.steered()
            && let Some(name) = self.exempting(tool, arguments, tool_use_id)
        {
            return decided(Check::allow(
                tier,
                Approval::Exempt,
                DecidedBy::Exemption { name },
            ));
        }
        // 5b. a live grant covers exactly this call, its row is the audit log's and what
        //     the call runs is what it pinned -> allow, recorded "granted"
        match self.granted(tool, tier, arguments, tool_use_id) {
            Ok(id) => {
                let mut check =
                    Check::allow(tier, Approval::Granted, DecidedBy::Grant { id: id.clone() });
                check.grant = Some(id);
                decided(check)
            }
            Err(notes) => Precheck::Ask {
                tier,
                effect,
                notes,
                provenance,
            },
        }
    }

    /// Refuses a call no question could be asked about, for want of an id.
    pub(super) fn no_randomness(&self, tool: &str, tool_use_id: &str, tier: Tier) -> Check {
        self.emit_error(
            ErrorSite::TierGate,
            "no randomness for an approval id; the call was refused",
            tool,
            tool_use_id,
        );
        Check::refuse(
            refusal_text(tool),
            Approval::Failed,
            Some(tier),
            DecidedBy::ApproverFailed,
        )
    }

    async fn ladder(&self, tool: &str, arguments: &Value, tool_use_id: &str) -> Check {
        let (tier, effect, notes, provenance) = match self.precheck(tool, arguments, tool_use_id) {
            Precheck::Decided(check) => return check,
            Precheck::Ask {
                tier,
                effect,
                notes,
                provenance,
            } => (tier, effect, notes, provenance),
        };
        // 6. ask the approver, one question at a time, bounded by the timeout
        // anything that fails on the way -> refuse
        let _turn = self.prompt_lock.lock().await;
        let Some(approval_id) = new_approval_id() else {
            return self.no_randomness(tool, tool_use_id, tier);
        };
        let Ok(mut card) = self.card(tool, arguments, provenance.clone()) else {
            return self.no_randomness(tool, tool_use_id, tier);
        };
        let grant = self.offer_on(tool, arguments, &mut card, notes);
        let timeout = self.effective_timeout();
        let request = ApprovalQuestion {
            approval_id: approval_id.clone(),
            tool: tool.to_owned(),
            tier,
            effect,
            arguments: arguments.clone(),
            call_id: tool_use_id.to_owned(),
            channel: self.channel.clone(),
            deadline: timeout.and_then(deadline_after),
            grant,
            card,
        };
        self.emit_approval_requested(&request);
        let answer = self.ask(request.clone(), timeout).await;
        let refuse = |approval, decided_by| {
            let mut check = Check::refuse(refusal_text(tool), approval, Some(tier), decided_by)
                .asked(&approval_id);
            check.provenance = provenance.clone();
            check
        };
        match answer {
            Ok(Answer {
                decision: Decision::Approved,
                decided_by: decided_by @ DecidedBy::Person { .. },
                confirmation,
                grant,
            }) if passes_step(&request, confirmation.as_deref()) => {
                // Recorded before anything else of the yes: a call that cannot be recorded
                // as let through does not run (a crash would leave no trace of it).
                if self.record_dispatch(&request, &decided_by).is_err() {
                    self.emit_approval(&request, Decision::Rejected, DecidedBy::ApproverFailed);
                    return refuse(Approval::Failed, DecidedBy::ApproverFailed);
                }
                let made = grant.and_then(|wanted| self.make_grant(&request, &wanted, &decided_by));
                let mut check = Check::allow(tier, Approval::Approved, decided_by.clone());
                check.grant = made.as_ref().map(|made| made.id.clone());
                check.provenance = provenance.clone();
                self.emit_approval_with(&request, Decision::Approved, decided_by, made);
                check.asked(&approval_id)
            }
            Ok(Answer {
                decision: Decision::Approved,
                decided_by: DecidedBy::Person { .. },
                ..
            }) => {
                // The channel let a yes through without the second step the card asks for.
                let message = format!(
                    "approver '{}' approved without the second step the question asks for; the call was refused",
                    self.approver.name()
                );
                tracing::error!(tool, tool_use_id, "{message}");
                self.emit_error(ErrorSite::Approver, message, tool, tool_use_id);
                self.emit_approval(&request, Decision::Rejected, DecidedBy::ApproverFailed);
                refuse(Approval::Failed, DecidedBy::ApproverFailed)
            }
            Ok(Answer {
                decision: Decision::Approved,
                decided_by,
                ..
            }) => {
                // A yes that no person gave is a broken approver, never an approval.
                let message = format!(
                    "approver '{}' answered approved without a person ({decided_by:?}); the call was refused",
                    self.approver.name()
                );
                tracing::error!(tool, tool_use_id, "{message}");
                self.emit_error(ErrorSite::Approver, message, tool, tool_use_id);
                self.emit_approval(&request, Decision::Rejected, DecidedBy::ApproverFailed);
                refuse(Approval::Failed, DecidedBy::ApproverFailed)
            }
            Ok(Answer {
                decision: Decision::Rejected,
                decided_by,
                ..
            }) => {
                self.emit_approval(&request, Decision::Rejected, decided_by.clone());
                refuse(Approval::Rejected, decided_by)
            }
            Ok(Answer {
                decision: Decision::Timeout,
                ..
            }) => {
                self.emit_approval(&request, Decision::Timeout, DecidedBy::Timeout);
                self.emit_error(
                    ErrorSite::Approver,
                    "no answer before the approval timeout",
                    tool,
                    tool_use_id,
                );
                refuse(Approval::Timeout, DecidedBy::Timeout)
            }
            Err(AskFailed {
                message,
                model_text,
            }) => {
                tracing::error!(tool, tool_use_id, approver = self.approver.name(), reason = %message, "approver failed; call refused");
                self.emit_error(ErrorSite::Approver, message, tool, tool_use_id);
                self.emit_approval(&request, Decision::Rejected, DecidedBy::ApproverFailed);
                let mut check = refuse(Approval::Failed, DecidedBy::ApproverFailed);
                if let Some(text) = model_text {
                    check.refusal_text = Some(text);
                }
                check
            }
        }
    }

    /// The card the catalog's writers fill for this call, with the number of its second
    /// step (if it has one) drawn for this question alone.
    pub(super) fn card(
        &self,
        tool: &str,
        arguments: &Value,
        provenance: CallProvenance,
    ) -> Result<tau_protocol::CallCard, crate::ids::NoRandomness> {
        let mut card = self.tiers.card(tool, arguments);
        // Where the values came from goes first: it is what a person is least likely to
        // see from the arguments alone.
        let mut first = crate::provenance::card_notes(&provenance);
        if let Some(note) = &self.card_note {
            first.insert(0, note.clone());
        }
        card.notes.splice(0..0, first);
        card.provenance = provenance;
        if let Some(step) = &mut card.confirm {
            step.code = crate::ids::random_code()?;
        }
        Ok(card)
    }

    /// The name of the first exemption that returns exactly `Ok(true)`.
    fn exempting(&self, tool: &str, arguments: &Value, tool_use_id: &str) -> Option<String> {
        let exemptions: Vec<_> = self
            .exemptions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(_, name, e)| (name.clone(), Arc::clone(e)))
            .collect();
        for (name, exemption) in exemptions {
            // Each exemption sees its own copy, so none can change what another one, the
            // approver or the tool sees.
            let copy = arguments.clone();
            match std::panic::catch_unwind(AssertUnwindSafe(|| exemption.exempts(tool, &copy))) {
                Ok(Ok(true)) => return Some(name),
                Ok(Ok(false)) => {}
                Ok(Err(error)) => {
                    tracing::warn!(tool, exemption = %name, %error, "exemption failed; counted as not exempt");
                    self.emit_error(ErrorSite::Exemption, error.message, tool, tool_use_id);
                }
                Err(_) => {
                    tracing::warn!(tool, exemption = %name, "exemption panicked; counted as not exempt");
                    self.emit_error(
                        ErrorSite::Exemption,
                        "an exemption panicked",
                        tool,
                        tool_use_id,
                    );
                }
            }
        }
        None
    }

    /// The approver's answer (a gate timeout answers `Timeout`), or the reason there is
    /// none. The caller holds the prompt lock.
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
                    tracing::info!(tool = %tool, tool_use_id = %id, decision = ?answer.decision, decided_by = ?answer.decided_by, approver = self.approver.name(), "approval decided");
                }
                Ok(answer)
            }
            Ok(Err(error)) => Err(AskFailed {
                message: format!(
                    "approver '{}' failed: {}",
                    self.approver.name(),
                    error.message
                ),
                model_text: error.model_text,
            }),
            Err(_) => Err(AskFailed {
                message: format!("approver '{}' panicked", self.approver.name()),
                model_text: None,
            }),
        }
    }

    /// Records a call, whatever its tier: a `tool_call` event and a log line.
    pub fn record(&self, record: ToolCallRecord) {
        let ToolCallRecord {
            tool,
            tier,
            tool_use_id,
            arguments,
            status,
            approval,
            decided_by,
            approval_id,
            result_summary,
            duration,
            provenance,
        } = record;
        let result_summary = result_summary.map(|s| summarize(&s));
        let duration_ms = duration.map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        match tier {
            None => {
                tracing::warn!(%tool, %tool_use_id, %arguments, ?status, ?approval, "tool_call to an unknown tool");
            }
            Some(Tier::Read) => {
                tracing::debug!(%tool, %tool_use_id, %arguments, ?status, ?approval, summary = ?result_summary, "tool_call");
            }
            Some(Tier::Write | Tier::Physical) => {
                tracing::info!(%tool, tier = tier.map(Tier::number), %tool_use_id, %arguments, ?status, ?approval, summary = ?result_summary, "tool_call");
            }
        }
        self.events.emit(&AuditEvent::ToolCall {
            tool,
            tier,
            tool_use_id,
            arguments,
            status,
            approval,
            decided_by,
            approval_id,
            result_summary,
            duration_ms,
            provenance,
        });
    }

    pub(crate) fn emit_error(
        &self,
        site: ErrorSite,
        message: impl Into<String>,
        tool: &str,
        tool_use_id: &str,
    ) {
        self.events.emit(&AuditEvent::error(
            site,
            message,
            Some(tool),
            Some(tool_use_id),
        ));
    }

    fn emit_approval_requested(&self, request: &ApprovalQuestion) {
        self.events
            .emit(&AuditEvent::ApprovalRequested(request.clone()));
    }

    fn emit_approval(&self, request: &ApprovalQuestion, decision: Decision, decided_by: DecidedBy) {
        self.emit_approval_with(request, decision, decided_by, None);
    }

    fn emit_approval_with(
        &self,
        request: &ApprovalQuestion,
        decision: Decision,
        decided_by: DecidedBy,
        grant: Option<GrantMade>,
    ) {
        self.events.emit(&AuditEvent::Approval {
            approval_id: request.approval_id.clone(),
            tool: request.tool.clone(),
            tier: request.tier,
            tool_use_id: request.call_id.clone(),
            arguments: request.arguments.clone(),
            decision,
            decided_by,
            approver: self.approver.name().to_owned(),
            channel: request.channel.clone(),
            grant,
            provenance: request.card.provenance.clone(),
        });
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

/// At most 200 characters of a result, for logs and events.
pub(crate) fn summarize(text: &str) -> String {
    match text.char_indices().nth(SUMMARY_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}
