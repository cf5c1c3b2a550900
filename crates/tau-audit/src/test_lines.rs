//! Audit lines as the writer writes them (without the chain's fields): a question, its
//! answer, a person's yes, a grant's call.

use serde_json::{Value, json};
use tau_core::AuditEvent;
use tau_protocol::CallFate;
use tau_protocol::Ruling;
use tau_protocol::{
    Approval, ApprovalId, ApprovalQuestion, CallCard, CallProvenance, CallStatus, DecidedBy,
    Decision, GrantId, Tier,
};

/// `event` as a line written at `at`.
pub(crate) fn line_at(event: &AuditEvent, at: &str) -> Value {
    let mut line = serde_json::to_value(event).unwrap();
    line["at"] = json!(at);
    line["session"] = json!("s1");
    line
}

fn decided_by(kind: &str) -> DecidedBy {
    match kind {
        "person" => DecidedBy::person("terminal"),
        "grant" => DecidedBy::Grant {
            id: GrantId::parse("gr_1").unwrap(),
        },
        "timeout" => DecidedBy::Timeout,
        other => panic!("no such kind in these tests: {other}"),
    }
}

/// The `approval_requested` line of question `id` about `tool` (with `npm run test` as
/// its command), asked at `at`.
pub(crate) fn asked(id: &str, tool: &str, at: &str) -> Value {
    let question = ApprovalQuestion {
        approval_id: ApprovalId::parse(id).unwrap(),
        call_id: format!("t_{id}"),
        tool: tool.into(),
        tier: Tier::Physical,
        effect: "runs a command".into(),
        arguments: json!({"command": "npm run test"}),
        channel: "terminal".into(),
        deadline: None,
        card: CallCard::default(),
        grant: None,
    };
    line_at(&AuditEvent::ApprovalRequested(question), at)
}

/// The `approval` line of question `id` about `tool` (with `npm run test` as its command),
/// decided `decision` by a `kind` (`person`, `grant`, `timeout`) on the terminal at `at`.
pub(crate) fn answered(id: &str, tool: &str, at: &str, decision: &str, kind: &str) -> Value {
    let decision = match decision {
        "approved" => Decision::Approved,
        "rejected" => Decision::Rejected,
        _ => Decision::Timeout,
    };
    let event = AuditEvent::Approval {
        approval_id: ApprovalId::parse(id).unwrap(),
        tool: tool.into(),
        tier: Tier::Physical,
        tool_use_id: format!("t_{id}"),
        arguments: json!({"command": "npm run test"}),
        ruling: Ruling {
            decision,
            decided_by: decided_by(kind),
        },
        approver: "terminal".into(),
        channel: "terminal".into(),
        grant: None,
        provenance: CallProvenance::default(),
    };
    line_at(&event, at)
}

/// A person's yes to `run_command`.
pub(crate) fn approved(id: &str, at: &str) -> Value {
    answered(id, "run_command", at, "approved", "person")
}

/// A call of `tool` a grant let through, at `at`.
pub(crate) fn by_grant(tool: &str, at: &str) -> Value {
    let event = AuditEvent::ToolCall {
        tool: tool.into(),
        tier: Some(Tier::Physical),
        tool_use_id: "t_grant".into(),
        arguments: json!({"command": "npm run test"}),
        fate: CallFate {
            status: CallStatus::Success,
            approval: Approval::Granted,
            decided_by: decided_by("grant"),
        },
        approval_id: None,
        result_summary: None,
        duration_ms: None,
        provenance: CallProvenance::default(),
    };
    line_at(&event, at)
}
