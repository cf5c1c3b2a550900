//! The tier-2 approval policy. Imports nothing from the agent loop: the hook, the MCP
//! server and `gated_call` all call [`TierGate`] directly.
//!
//! - `approver.rs`: the [`Approver`] trait, [`AutoRejectApprover`], [`ScriptedApprover`]
//! - `gate.rs`: [`TierGate`], its decision ladder, exemptions and records
//! - `durable.rs`: durable questions (the rows `tau-state` keeps in `state.db`);
//!   `durable_gate.rs`: how the gate stores a question, and checks it again on resume;
//!   `dispatch.rs`: the same rows for a yes given in memory, recorded as its call is let
//!   through
//! - `expire.rs`: the one expirer of stored questions, whoever asked them
//! - `grants.rs`: [`GateGrants`]; how the gate offers and makes grants; `grant_use.rs`:
//!   how it uses one (checked against the audit log, the workspace it pins) and pins it
//!   again after a granted call; `grant_record.rs`: [`GrantLedger`], what the audit log
//!   records of grants
//! - `texts.rs`: the fixed English texts the model reads

mod approver;
mod dispatch;
mod durable;
mod durable_gate;
mod expire;
mod gate;
mod grant_record;
mod grant_use;
mod grants;
mod texts;

pub use approver::{Answer, Approver, ApproverError, AutoRejectApprover, ScriptedApprover};
pub use dispatch::DispatchRecord;
pub use durable_gate::{
    APPROVAL_INTERRUPT, DurableCheck, DurableQuestions, answer_durable, answer_durable_granting,
    effect_uncertain_event, question_reason, requested_event, stored_question,
};
pub use expire::{ExpiredQuestion, expire_due, next_deadline};
pub(crate) use gate::summarize;
pub use gate::{
    Check, Exemption, ExemptionError, ExemptionHandle, Standing, TierGate, TierLookup,
    ToolCallRecord,
};
pub use grant_record::{GrantLedger, RecordedGrants, fold_grant_line};
pub use grant_use::refuse_untrusted_grant;
pub use grants::{ApprovalHistory, GateGrants};
pub use texts::{effect_uncertain_text, invalid_call_text, refusal_text, unknown_tool_text};
