//! How the demo ends: what the audit log recorded, one line per tool call (read back
//! through tau-audit's reader), and the command to try next. The log itself is
//! in a temporary home that goes with the demo; `tau audit verify` checks a real one.

use std::fmt::Write as _;

use tau_core::{AuditEvent, display};
use tau_protocol::{Approval, CallStatus};

/// What a person tries after the demo.
const NEXT: &str = "\
Next: talk to a model of yours with the same tools and questions:
  tau chat --model ollama:llama3.2     (a model on your machine; docs/models.md has the others)
  tau tui                              the same on the whole screen
  tau serve                            TauBar, in a browser or on a phone
";

/// The end of the demo, from the audit log's text.
pub(crate) fn summary(audit: &str) -> String {
    let mut lines = 0;
    let mut calls: Vec<(String, String, String)> = Vec::new();
    for (bytes, line) in tau_audit::Lines::new(audit.as_bytes()).flatten() {
        if bytes.trim_ascii().is_empty() {
            continue;
        }
        lines += 1;
        if let Some(AuditEvent::ToolCall {
            tool,
            tier,
            fate: tau_protocol::CallFate {
                status, approval, ..
            },
            ..
        }) = line.entry().and_then(tau_audit::Entry::event)
        {
            calls.push((
                display(tool),
                tier.map_or_else(|| "tier ?".to_owned(), |t| format!("tier {}", t.number())),
                fate(*status, *approval).to_owned(),
            ));
        }
    }
    let width = calls.iter().map(|c| c.0.chars().count()).max().unwrap_or(0);
    let mut out = format!(
        "\nThe audit log recorded {} in {}, each chained to the one before by its SHA-256:\n",
        tau_core::counted(calls.len(), "tool call", "tool calls"),
        tau_core::counted(lines, "line", "lines"),
    );
    for (tool, tier, fate) in &calls {
        let _ = writeln!(out, "  {tool:<width$}  {tier}  {fate}");
    }
    out.push('\n');
    out.push_str(NEXT);
    out
}

/// What became of one call, in a person's words.
fn fate(status: CallStatus, approval: Approval) -> &'static str {
    match (status, approval) {
        (CallStatus::Success, Approval::NotRequired) => {
            "ran, no question (tier 0 and 1 run unasked)"
        }
        (CallStatus::Success, Approval::Approved) => "ran, you said yes",
        (CallStatus::Success, _) => "ran",
        (CallStatus::Error, _) => "ran and failed",
        (CallStatus::Refused, Approval::Rejected) => "not run, you said no",
        (CallStatus::Refused, _) => "not run, refused",
        (CallStatus::UnknownTool, _) => "not run, no such tool",
        (CallStatus::Invalid, _) => "not run, an invalid call",
        (CallStatus::Cancelled, _) => "cancelled",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_call_on_one_line_then_what_to_try_next() {
        let audit = [
            r#"{"type":"tool_call","seq":1,"prev":"0","tool":"read_file","tier":0,"tool_use_id":"t1","arguments":{},"status":"success","approval":"not_required","decided_by":{"kind":"policy"}}"#,
            r#"{"type":"approval_requested","seq":2}"#,
            r#"{"type":"tool_call","seq":3,"prev":"1","tool":"device_set","tier":2,"tool_use_id":"t2","arguments":{},"status":"success","approval":"approved","decided_by":{"kind":"person","channel":"terminal"}}"#,
            r#"{"type":"tool_call","seq":4,"prev":"2","tool":"run_command","tier":2,"tool_use_id":"t3","arguments":{},"status":"refused","approval":"rejected","decided_by":{"kind":"person","channel":"terminal"}}"#,
            r#"{"type":"turn_end","seq":5}"#,
        ]
        .join("\n");
        insta::assert_snapshot!(summary(&audit));
    }
}
