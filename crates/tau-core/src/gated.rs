//! The one gated call: check -> run or refuse -> record. The MCP server and the routine
//! engine call [`gated_call`]; the agent loop runs the same steps split across `TierHook`'s
//! two callbacks, with the same [`CallRecord`] in between, so every path records a call
//! the same way.

use std::time::{Duration, Instant};

use serde_json::Value;
use tau_agent::{ToolContext, ToolResult, ToolResultStatus, run_tool};
use tau_protocol::{ApprovalId, CallDecision, CallStatus};

use crate::approval::{TierGate, ToolCallRecord, refusal_text};
use crate::catalog::ToolCatalog;

/// A call the gate has decided on, waiting for its outcome to be recorded.
#[derive(Debug, Clone)]
pub struct CallRecord {
    pub decision: CallDecision,
    record: ToolCallRecord,
}

impl CallRecord {
    pub fn new(decision: CallDecision, tool: &str, tool_use_id: &str, arguments: Value) -> Self {
        let record = ToolCallRecord::decided(&decision, tool, tool_use_id, arguments);
        Self { decision, record }
    }

    pub fn tool(&self) -> &str {
        &self.record.tool
    }

    /// The arguments the gate decided on.
    pub fn arguments(&self) -> &Value {
        &self.record.arguments
    }

    /// The text the model reads for a refused call.
    pub fn refusal_text(&self) -> String {
        self.decision
            .verdict
            .refusal_text()
            .map_or_else(|| refusal_text(&self.record.tool), str::to_owned)
    }

    /// Records that the call did not run.
    pub fn refused(mut self, gate: &TierGate, duration: Option<Duration>) {
        self.record.fate.status = self.decision.verdict.refused_status();
        self.record.result_summary = Some(self.refusal_text());
        self.record.duration = duration;
        gate.record(self.record);
    }

    /// Records that the call ran (or was stopped while running) and produced `result`.
    pub fn ran(
        mut self,
        gate: &TierGate,
        result: &ToolResult,
        cancelled: bool,
        duration: Duration,
    ) {
        self.record.fate.status = ran_status(result, cancelled);
        self.record.result_summary = Some(result.text());
        self.record.duration = Some(duration);
        let (tool, tool_use_id) = (self.record.tool.clone(), self.record.tool_use_id.clone());
        gate.record(self.record);
        gate.pin_after_run(&self.decision, &tool, &tool_use_id);
    }

    /// Records an outcome the caller established itself: a call that ran with
    /// `arguments` when it should not have run, or should have run and did not.
    pub fn finished(
        mut self,
        gate: &TierGate,
        status: CallStatus,
        arguments: Value,
        result: &ToolResult,
        duration: Duration,
    ) {
        self.record.fate.status = status;
        self.record.arguments = arguments;
        self.record.result_summary = Some(result.text());
        self.record.duration = Some(duration);
        gate.record(self.record);
    }
}

/// The status of a call whose tool ran.
fn ran_status(result: &ToolResult, cancelled: bool) -> CallStatus {
    if cancelled {
        CallStatus::Cancelled
    } else if result.status == ToolResultStatus::Success {
        CallStatus::Success
    } else {
        CallStatus::Error
    }
}

/// What a gated call produced.
#[derive(Debug, Clone, PartialEq)]
pub struct GatedOutcome {
    /// What the caller (a model, an MCP client, a routine) reads.
    pub result: ToolResult,
    pub status: CallStatus,
    pub decision: CallDecision,
}

/// Check, run or refuse, record: the gate's ladder decides, the catalog's tool runs only
/// when allowed, and every call ends in one `tool_call` event.
pub async fn gated_call(
    gate: &TierGate,
    catalog: &ToolCatalog,
    tool: &str,
    tool_use_id: &str,
    arguments: Value,
    context: ToolContext,
) -> GatedOutcome {
    let decision = gate.check(tool, &arguments, tool_use_id).await;
    let call = Checked {
        decision,
        tool,
        tool_use_id,
        arguments,
    };
    run_checked(gate, catalog, call, context, None).await
}

/// A call the gate has decided on.
pub(crate) struct Checked<'a> {
    pub decision: CallDecision,
    pub tool: &'a str,
    pub tool_use_id: &'a str,
    pub arguments: Value,
}

/// Runs or refuses a call the gate has decided on, and records it. A call let through by
/// the stored question `stored` has its outcome recorded on the question once it ran.
pub(crate) async fn run_checked(
    gate: &TierGate,
    catalog: &ToolCatalog,
    call: Checked<'_>,
    context: ToolContext,
    stored: Option<&ApprovalId>,
) -> GatedOutcome {
    let Checked {
        decision,
        tool,
        tool_use_id,
        arguments,
    } = call;
    let entry = catalog.get(tool).filter(|_| decision.allowed());
    let call = CallRecord::new(decision.clone(), tool, tool_use_id, arguments.clone());
    let Some(entry) = entry else {
        let result = ToolResult::error_text(tool_use_id, call.refusal_text());
        let status = call.decision.verdict.refused_status();
        call.refused(gate, None);
        return GatedOutcome {
            result,
            status,
            decision,
        };
    };
    if stored.is_some() {
        crate::failpoint::reach(crate::failpoint::DISPATCHED);
    }
    let started = Instant::now();
    let run = run_tool(&entry.tool, tool_use_id, arguments, context).await;
    let status = ran_status(&run.result, false);
    if stored.is_some() {
        crate::failpoint::reach(crate::failpoint::RAN);
    }
    call.ran(gate, &run.result, false, started.elapsed());
    if let Some(id) = stored {
        gate.call_finished(id);
        crate::failpoint::reach(crate::failpoint::FINISHED);
    }
    GatedOutcome {
        result: run.result,
        status,
        decision,
    }
}
