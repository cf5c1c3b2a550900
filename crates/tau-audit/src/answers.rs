//! The `approval` lines of `audit.jsonl`: how stored questions were answered, recorded as
//! they were. `tau serve` confirms each approval it is about to act on at start against
//! them (`tau-state`'s cross-check), so an approval written into `state.db` while tau was
//! not running is refused.

use std::io;
use std::path::Path;

use tau_core::AuditEvent;
use tau_state::RecordedAnswer;

use crate::record::fold_events;

/// Every `approval` line of the log at `path`, in order; none when there is no log yet.
/// Lines that do not read as one are skipped (they answer nothing).
pub fn recorded_answers(path: &Path) -> io::Result<Vec<RecordedAnswer>> {
    let mut answers = Vec::new();
    fold_events(path, |_, event| {
        if let AuditEvent::Approval { .. } = event
            && let Some(answer) = event.clone().into_recorded_answer()
        {
            answers.push(answer);
        }
    })?;
    Ok(answers)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;
    use tau_protocol::{DecidedBy, Decision};

    #[test]
    fn only_approval_lines_are_answers_and_a_missing_log_has_none() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        assert_eq!(recorded_answers(&path).unwrap(), vec![]);
        let lines = [
            json!({"seq": 1, "prev": "0", "session": "web-1", "type": "turn_end",
                   "stop_reason": "end_turn", "model_calls": 1, "input_tokens": 1, "output_tokens": 1}),
            json!({"seq": 2, "prev": "a", "at": "2026-01-01T00:00:00Z", "session": "web-1",
                   "type": "approval", "approval_id": "ap_1", "tool": "lights", "tier": 2,
                   "tool_use_id": "t1", "arguments": {"room": "kitchen"}, "decision": "approved",
                   "decided_by": {"kind": "person", "channel": "web"}, "approver": "durable",
                   "channel": "web"}),
            // Names the type but is not an answer.
            json!({"seq": 3, "type": "error", "where": "tier_gate",
                   "message": "\"type\":\"approval\""}),
        ];
        let mut text = String::new();
        for line in &lines {
            text.push_str(&line.to_string());
            text.push('\n');
        }
        text.push_str("{\"type\":\"approval\", not json\n");
        std::fs::write(&path, text).unwrap();
        assert_eq!(
            recorded_answers(&path).unwrap(),
            vec![RecordedAnswer {
                approval_id: tau_protocol::ApprovalId::parse("ap_1").unwrap(),
                tool: "lights".into(),
                tool_use_id: "t1".into(),
                arguments: json!({"room": "kitchen"}),
                decision: Decision::Approved,
                decided_by: DecidedBy::person("web"),
            }]
        );
    }
}
