//! What the gate writes down: every call's `tool_call` line, and the one builder of the
//! `approval` line a decided question gets, whoever decided it (the in-memory ladder, a
//! stored answer, the start's cross-check). Channels read the same line projected
//! (`turn::from_audit`), so a decided question is built once.

use std::time::Duration;

use serde_json::Value;
use tau_protocol::{
    ApprovalId, ApprovalQuestion, CallDecision, CallFate, CallProvenance, CallStatus, GrantMade,
    Ruling, Tier,
};

use super::gate::TierGate;
use crate::audit::{AuditEvent, ErrorSite};

const SUMMARY_CHARS: usize = 200;

/// What happened to a call, for [`TierGate::record`].
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCallRecord {
    pub tool: String,
    pub tier: Option<Tier>,
    pub tool_use_id: String,
    pub arguments: Value,
    /// How it ended and how it got past the gate.
    pub fate: CallFate,
    pub approval_id: Option<ApprovalId>,
    pub result_summary: Option<String>,
    pub duration: Option<Duration>,
    pub provenance: CallProvenance,
}

impl ToolCallRecord {
    /// The record of a call the gate decided on, before anything about its run is known.
    pub fn decided(
        decision: &CallDecision,
        tool: &str,
        tool_use_id: &str,
        arguments: Value,
    ) -> Self {
        Self {
            tool: tool.to_owned(),
            tier: decision.tier,
            tool_use_id: tool_use_id.to_owned(),
            arguments,
            fate: decision.fate(),
            approval_id: decision.approval_id.clone(),
            result_summary: None,
            duration: None,
            provenance: decision.provenance.clone(),
        }
    }

    /// The record with the status the call ended with.
    #[must_use]
    pub fn with_status(mut self, status: CallStatus) -> Self {
        self.fate.status = status;
        self
    }
}

/// The `approval` line of `question`, decided by `ruling` as `approver` recorded it; the
/// grant the answer made, if it made one.
pub fn approval_event(
    question: &ApprovalQuestion,
    ruling: Ruling,
    approver: &str,
    grant: Option<GrantMade>,
) -> AuditEvent {
    AuditEvent::Approval {
        approval_id: question.approval_id.clone(),
        tool: question.tool.clone(),
        tier: question.tier,
        tool_use_id: question.call_id.clone(),
        arguments: question.arguments.clone(),
        ruling,
        approver: approver.to_owned(),
        channel: question.channel.clone(),
        grant,
        provenance: question.card.provenance.clone(),
    }
}

impl TierGate {
    /// Records a call, whatever its tier: a `tool_call` event and a log line.
    pub fn record(&self, record: ToolCallRecord) {
        let ToolCallRecord {
            tool,
            tier,
            tool_use_id,
            arguments,
            fate,
            approval_id,
            result_summary,
            duration,
            provenance,
        } = record;
        let result_summary = result_summary.map(|s| summarize(&s));
        let duration_ms = duration.map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        let (status, approval) = (fate.status, fate.approval);
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
            fate,
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

    pub(super) fn emit_approval_requested(&self, request: &ApprovalQuestion) {
        self.events
            .emit(&AuditEvent::ApprovalRequested(request.clone()));
    }

    /// The `approval` line of a question this gate asked in memory.
    pub(super) fn emit_approval(
        &self,
        request: &ApprovalQuestion,
        ruling: Ruling,
        grant: Option<GrantMade>,
    ) {
        self.events.emit(&approval_event(
            request,
            ruling,
            self.approver_name(),
            grant,
        ));
    }
}

/// At most 200 characters of a result, for logs and events.
pub(crate) fn summarize(text: &str) -> String {
    tau_protocol::ellipsized(text, SUMMARY_CHARS)
}
