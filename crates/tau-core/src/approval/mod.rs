//! The tier-2 approval policy. Imports nothing from the agent loop: the hook, the MCP
//! server and `gated_call` all call [`TierGate`] directly.
//!
//! - `approver.rs`: the [`Approver`] trait, [`AutoRejectApprover`], [`ScriptedApprover`]
//! - `gate.rs`: [`TierGate`], its decision ladder, exemptions and records
//! - `texts.rs`: the fixed English texts the model reads

mod approver;
mod gate;
mod texts;

pub use approver::{
    Answer, ApprovalRequest, Approver, ApproverError, AutoRejectApprover, ScriptedApprover,
};
pub(crate) use gate::summarize;
pub use gate::{
    Check, Exemption, ExemptionError, ExemptionHandle, Standing, TierGate, TierLookup,
    ToolCallRecord,
};
pub use texts::{refusal_text, unknown_tool_text};
