//! The `approval` lines of `audit.jsonl`: how stored questions were answered, recorded as
//! they were. `tau serve` confirms each approval it is about to act on at start against
//! them (`tau-state`'s cross-check), so an approval written into `state.db` while tau was
//! not running is refused.

use std::io::{self, BufRead, BufReader};
use std::path::Path;

use serde_json::Value;
use tau_core::AuditEvent;
use tau_state::RecordedAnswer;

/// Every `approval` line of the log at `path`, in order; none when there is no log yet.
/// Lines that do not read as one are skipped (they answer nothing).
pub(crate) fn recorded_answers(path: &Path) -> io::Result<Vec<RecordedAnswer>> {
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(error),
    };
    let mut answers = Vec::new();
    for line in BufReader::new(file).split(b'\n') {
        let line = line?;
        // Cheap test first: most lines are not answers.
        if !line.windows(17).any(|w| w == br#""type":"approval""#) {
            continue;
        }
        let Ok(value) = serde_json::from_slice::<Value>(&line) else {
            continue;
        };
        if let Some(answer) = answer_of(value) {
            answers.push(answer);
        }
    }
    Ok(answers)
}

fn answer_of(line: Value) -> Option<RecordedAnswer> {
    serde_json::from_value::<AuditEvent>(line)
        .ok()?
        .into_recorded_answer()
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
