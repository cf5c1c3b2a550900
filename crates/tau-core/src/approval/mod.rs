//! The tier-2 approval policy. Imports nothing from the agent loop: the hook, the MCP
//! server and `gated_call` all call [`TierGate`] directly, and read its verdict
//! ([`tau_protocol::CallDecision`]).
//!
//! - `gate.rs`: [`TierGate`] and steps 1 to 5 of its ladder; `lookup.rs`: [`Standing`],
//!   [`TierLookup`] (what the catalog tells it); `exemption.rs`: [`Exemption`]s
//! - `asking.rs`: step 6, the question, behind one trait: asked in memory of an
//!   [`Approver`] (`approver.rs`), or stored (`durable_gate.rs`, [`DurableQuestions`]:
//!   how the gate stores a question, and checks it again on resume)
//! - `record.rs`: [`ToolCallRecord`], the `tool_call` line, and the one builder of the
//!   `approval` line; `stored_answer.rs`: answers to stored questions (the
//!   compare-and-set, and the decision recorded once)
//! - `durable.rs`: durable questions (the rows `tau-state` keeps in `state.db`);
//!   `dispatch.rs`: the same rows for a yes given in memory, recorded as its call is let
//!   through
//! - `expire.rs`: the one expirer of stored questions, whoever asked them
//! - `grants.rs`: [`GateGrants`]; how the gate offers and makes grants; `grant_use.rs`:
//!   how it uses one (checked against the audit log, the workspace it pins) and pins it
//!   again after a granted call; `grant_record.rs`: [`GrantLedger`], what the audit log
//!   records of grants
//! - `texts.rs`: the fixed English texts the model reads

mod approver;
mod asking;
mod dispatch;
mod durable;
mod durable_gate;
mod exemption;
mod expire;
mod gate;
mod grant_record;
mod grant_use;
mod grants;
mod lookup;
mod record;
mod stored_answer;
mod texts;

pub use approver::{Answer, Approver, ApproverError, AutoRejectApprover, ScriptedApprover};
pub use dispatch::DispatchRecord;
pub use durable_gate::{APPROVAL_INTERRUPT, DurableQuestions, question_reason, stored_question};
pub use exemption::{Exemption, ExemptionError, ExemptionHandle};
pub use expire::{ExpiredQuestion, expire_due, next_deadline};
pub use gate::TierGate;
pub use grant_record::{GrantLedger, RecordedGrants, fold_grant_line};
pub use grant_use::refuse_untrusted_grant;
pub use grants::{ApprovalHistory, GateGrants, StepUp};
pub use lookup::{Standing, TierLookup};
pub(crate) use record::summarize;
pub use record::{ToolCallRecord, approval_event};
pub use stored_answer::{
    StoredAnswer, answer_durable, answer_durable_granting, answer_row, decided_event, decision_of,
    effect_uncertain_event, requested_event, stored_approval_event,
};
pub use texts::{effect_uncertain_text, invalid_call_text, refusal_text, unknown_tool_text};
