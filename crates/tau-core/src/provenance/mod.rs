//! Where a conversation's texts came from, and what a call's arguments owe to them.
//!
//! The [`Ledger`] holds every text a conversation read with its source (the person, a
//! trusted tool, or outside); [`trace`] finds where each argument value of a call first
//! appeared; a tool's [`ProvenanceRule`] says whether a call is asked once the
//! conversation has read outside text; [`FramedView`] shows the model outside text as
//! quoted data. The gate puts it together ([`crate::TierGate`]).

mod fold;
mod ledger;
mod rule;
mod texts;
mod trace;
mod view;

#[cfg(test)]
mod tests;

pub use ledger::Ledger;
pub use rule::{AfterUntrusted, Escalation, ProvenanceRule, Reach, RuleOverride};
pub use texts::{
    SOURCE_LABEL, SYSTEM_PARAGRAPH_EN, SYSTEM_PARAGRAPH_TR, card_notes, framed, system_paragraph,
};
pub use trace::{MAX_RUNS, MIN_RUN_CHARS, Traced, trace};
pub use view::FramedView;

use std::sync::{Mutex, PoisonError};

use tau_agent::Message;
use tau_protocol::{CallProvenance, Source, Tier};

/// One conversation's provenance, as its gate keeps it: the ledger of what it read, and
/// who a user message is from when it names nobody else.
#[derive(Debug)]
pub struct Provenance {
    ledger: Mutex<Ledger>,
    person: Source,
}

/// What the gate learns about one call from the conversation's provenance.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallTrace {
    pub provenance: CallProvenance,
    /// Why a call below tier 2 is asked, if it is.
    pub escalation: Option<Escalation>,
}

impl Provenance {
    /// A conversation whose own prompts are `person`'s (the person on a channel, or a
    /// routine's prompt).
    pub fn new(person: Source) -> Self {
        Self {
            ledger: Mutex::new(Ledger::default()),
            person,
        }
    }

    /// Takes in a message the conversation now holds.
    pub fn observe(&self, message: &Message) {
        self.ledger
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .observe(message, &self.person);
    }

    /// Where a call's arguments came from, and whether the call is asked because of it.
    pub fn trace_call(
        &self,
        rule: ProvenanceRule,
        tier: Tier,
        arguments: &serde_json::Value,
    ) -> CallTrace {
        let ledger = self.ledger.lock().unwrap_or_else(PoisonError::into_inner);
        if !ledger.read_untrusted() {
            return CallTrace::default();
        }
        let traced = trace(&ledger, arguments);
        let escalation = rule.escalation(tier, true, !traced.flagged.is_empty());
        CallTrace {
            provenance: CallProvenance {
                escalated: escalation.is_some(),
                read: ledger.read().to_vec(),
                flagged: traced.flagged,
                typed: traced.typed,
            },
            escalation,
        }
    }
}
