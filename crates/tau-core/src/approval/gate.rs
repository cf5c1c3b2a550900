//! `TierGate`: the one place that decides whether a tool call may run. This file holds
//! the gate and steps 1 to 5 of its ladder (everything decided without asking anyone);
//! step 6, the question, is its [`Asking`] mode's (`asking.rs`, `durable_gate.rs`).

use std::panic::AssertUnwindSafe;
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use futures::FutureExt;
use serde_json::Value;

use tau_protocol::{
    ApprovalQuestion, CallCard, CallDecision, CallProvenance, CardNote, Refusal, Tier, Verdict,
};

use super::approver::Approver;
use super::asking::{Asking, InMemory, ToAsk};
use super::exemption::Exemptions;
use super::grants::GateGrants;
use super::lookup::{Standing, TierLookup};
use super::texts::{invalid_call_text, refusal_text, unknown_tool_text};
use crate::audit::{ErrorSite, EventBus};
use crate::provenance::{CallTrace, Provenance};

/// Steps 1 to 5 of the ladder decided, or a person must be asked.
pub(super) enum Precheck {
    Decided(CallDecision),
    Ask(ToAsk),
}

/// The policy: tier 0 and 1 run, tier 2 runs only on a person's yes, and nothing that
/// fails ever approves.
pub struct TierGate {
    pub(super) tiers: Arc<dyn TierLookup>,
    /// Who answers a question asked in memory; its name is the channel's by default.
    pub(super) approver: Arc<dyn Approver>,
    pub(super) timeout: Option<Duration>,
    pub(super) channel: String,
    pub(super) events: EventBus,
    /// How questions are put: waited for in memory, or stored for a hub conversation.
    pub(super) asking: Box<dyn Asking>,
    pub(super) exemptions: Exemptions,
    /// Set where a person's grants apply: checked before asking, offered on questions.
    pub(super) grants: Option<GateGrants>,
    /// Stored questions not shown to anyone yet: announced once the turn's paused state
    /// is saved ([`TierGate::announce_stored`]).
    pub(super) unannounced: std::sync::Mutex<Vec<ApprovalQuestion>>,
    /// Put first on every card this gate shows: whose question it is, when that is not
    /// the person's own conversation (a routine's).
    card_note: Option<CardNote>,
    /// What the conversation read and from where: set for a conversation's gate, so a
    /// write steered by outside text is asked and every card says where values came from.
    pub(super) provenance: Option<Arc<Provenance>>,
}

impl TierGate {
    pub fn new(tiers: Arc<dyn TierLookup>, approver: Arc<dyn Approver>, events: EventBus) -> Self {
        let channel = approver.name().to_owned();
        Self {
            tiers,
            approver,
            timeout: None,
            channel,
            events,
            asking: Box::new(InMemory::default()),
            exemptions: Exemptions::default(),
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
    pub fn with_card_note(mut self, note: CardNote) -> Self {
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

    /// The tier `tool` is registered with now; `None` when it is unknown or invalid.
    pub(super) fn registered_tier(&self, tool: &str) -> Option<Tier> {
        match self.tiers.standing(tool) {
            Standing::Known { tier, .. } => Some(tier),
            Standing::Unknown | Standing::Invalid { .. } => None,
        }
    }

    /// Decides whether `tool` may run with `arguments`. A durable gate stores a tier-2
    /// question and answers [`Verdict::Asked`]; one that asks in memory waits for the
    /// answer. A bug inside the gate refuses.
    pub async fn check(&self, tool: &str, arguments: &Value, tool_use_id: &str) -> CallDecision {
        let ladder = async {
            match self.precheck(tool, arguments, tool_use_id) {
                Precheck::Decided(decision) => decision,
                // 6. ask, as this gate asks; anything that fails on the way -> refuse
                Precheck::Ask(call) => self.asking.ask(self, call).await,
            }
        };
        match AssertUnwindSafe(ladder).catch_unwind().await {
            Ok(decision) => decision,
            Err(_) => self.failed(tool, tool_use_id),
        }
    }

    /// The refusal of a call the gate itself failed on, with its `error` line.
    pub(crate) fn failed(&self, tool: &str, tool_use_id: &str) -> CallDecision {
        tracing::error!(tool, tool_use_id, "the tier gate failed; refusing the call");
        self.emit_error(
            ErrorSite::TierGate,
            "the tier gate failed; the call was refused",
            tool,
            tool_use_id,
        );
        CallDecision::new(Verdict::refused(Refusal::Failed, refusal_text(tool)), None)
    }

    /// Steps 1 to 5 of the ladder: everything decided without asking anyone.
    pub(super) fn precheck(&self, tool: &str, arguments: &Value, tool_use_id: &str) -> Precheck {
        let refused = |why, text, tier| {
            Precheck::Decided(CallDecision::new(Verdict::refused(why, text), tier))
        };
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
                return refused(Refusal::UnknownTool, unknown_tool_text(tool), None);
            }
            Standing::Invalid { reason } => {
                tracing::error!(tool, tool_use_id, %reason, "tool with an invalid tier refused");
                self.emit_error(ErrorSite::TierGate, reason, tool, tool_use_id);
                return refused(Refusal::Policy, refusal_text(tool), None);
            }
            Standing::Known { tier, effect } => (tier, effect),
        };
        // 3. arguments the tool itself refuses -> refuse as invalid, nobody asked
        if let Err(reason) = self.tiers.check_input(tool, arguments) {
            tracing::info!(tool, tool_use_id, %reason, "call refused by its tool before asking");
            let text = invalid_call_text(tool, &reason);
            return refused(Refusal::InvalidCall, text, Some(tier));
        }
        // Where the arguments came from: read once, carried on the record and the card.
        let CallTrace {
            provenance,
            escalation,
        } = match &self.provenance {
            Some(traced) => traced.trace_call(self.tiers.provenance_rule(tool), tier, arguments),
            None => CallTrace::default(),
        };
        let decided = |verdict| {
            Precheck::Decided(CallDecision::new(verdict, Some(tier)).traced(provenance.clone()))
        };
        // 4. tier 0 or 1 -> allow, unless outside text steered a write that sends
        //    something out (or a read that reaches out): then asked like tier 2
        if tier != Tier::Physical && escalation.is_none() {
            return decided(Verdict::Runs);
        }
        // 5. exempt (exactly Ok(true)) -> allow, recorded "exempt"; never for a call whose
        //    arguments came from outside text, nor one asked only because of it
        if escalation.is_none()
            && !provenance.steered()
            && let Some(name) = self.exempting(tool, arguments, tool_use_id)
        {
            return decided(Verdict::Exempt { name });
        }
        // 5b. a live grant covers exactly this call, its row is the audit log's and what
        //     the call runs is what it pinned -> allow, recorded "granted"
        match self.granted(tool, tier, arguments, tool_use_id) {
            Ok(grant) => decided(Verdict::Granted { grant }),
            Err(notes) => Precheck::Ask(ToAsk {
                tool: tool.to_owned(),
                tool_use_id: tool_use_id.to_owned(),
                arguments: arguments.clone(),
                tier,
                effect,
                notes,
                provenance,
            }),
        }
    }

    /// Refuses a call no question could be asked about, for want of an id.
    pub(super) fn no_randomness(&self, tool: &str, tool_use_id: &str, tier: Tier) -> CallDecision {
        self.emit_error(
            ErrorSite::TierGate,
            "no randomness for an approval id; the call was refused",
            tool,
            tool_use_id,
        );
        CallDecision::new(
            Verdict::refused(Refusal::Failed, refusal_text(tool)),
            Some(tier),
        )
    }

    /// The card the catalog's writers fill for this call, with the number of its second
    /// step (if it has one) drawn for this question alone.
    pub(super) fn card(
        &self,
        tool: &str,
        arguments: &Value,
        provenance: CallProvenance,
    ) -> Result<CallCard, crate::ids::NoRandomness> {
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

    /// Questions stored and not announced yet.
    pub(super) fn unannounced(&self) -> std::sync::MutexGuard<'_, Vec<ApprovalQuestion>> {
        self.unannounced
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}
