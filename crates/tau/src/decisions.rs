//! The history of decisions TauBar lists (`GET /api/decisions`), read from the audit log:
//! each tier-2 call decided in the last 30 days (an `approval` line, or a `tool_call` line
//! a grant or a routine's exemption let through, or tau's rules refused), joined with the
//! `tool_call` line that says what ran. The log is read when the page asks, never written.

use std::collections::HashMap;
use std::io::{self, BufRead, BufReader};
use std::path::{Path, PathBuf};

use jiff::{SignedDuration, Timestamp};
use serde_json::Value;
use tau_protocol::CallProvenance;
use tau_web::{DecisionRecord, DecisionsError, HISTORY_DAYS, OUTCOMES, Ran};

/// The lines that take part, as the audit log writes their type.
const TAGS: [&[u8]; 4] = [
    br#""type":"approval""#,
    br#""type":"approval_requested""#,
    br#""type":"tool_call""#,
    br#""type":"grant_used""#,
];

fn text<'a>(line: &'a Value, key: &str) -> Option<&'a str> {
    line.get(key).and_then(Value::as_str)
}

/// The decision in one word: who decided matters as much as what (a timeout is no
/// person's no, a grant's yes is not asked again).
fn outcome(decision: &str, decided_by: &Value) -> String {
    let word = match text(decided_by, "kind").unwrap_or_default() {
        "grant" => "granted",
        "exemption" => "exempt",
        "timeout" => "timeout",
        "cancelled" | "superseded" | "end_of_input" => "cancelled",
        "approver_failed" | "policy" => "refused",
        _ if OUTCOMES.contains(&decision) => decision,
        _ => "refused",
    };
    word.to_owned()
}

fn ran(line: &Value) -> Option<Ran> {
    Some(Ran {
        status: text(line, "status")?.to_owned(),
        result_summary: text(line, "result_summary").map(str::to_owned),
        duration_ms: line.get("duration_ms").and_then(Value::as_u64),
    })
}

/// What the log says, gathered in one pass, oldest first.
#[derive(Default)]
struct Gathered {
    records: Vec<DecisionRecord>,
    /// A record by the question's id, and by its conversation and call id.
    by_question: HashMap<String, usize>,
    by_call: HashMap<(String, String), usize>,
    /// The channel a grant was made on, by conversation and call id.
    grant_channels: HashMap<(String, String), String>,
    /// What each question's card said about where its values came from, by its id.
    asked_provenance: HashMap<String, CallProvenance>,
}

/// The provenance a line holds at `pointer`, when it holds one that says anything.
fn provenance_at(line: &Value, pointer: &str) -> Option<CallProvenance> {
    let value = line.pointer(pointer)?;
    serde_json::from_value::<CallProvenance>(value.clone())
        .ok()
        .filter(|p| !p.is_empty())
}

impl Gathered {
    fn take(&mut self, line: &Value) {
        // A question's line holds its whole card: its provenance waits for the decision.
        if text(line, "type") == Some("approval_requested") {
            if let (Some(id), Some(provenance)) = (
                text(line, "approval_id"),
                provenance_at(line, "/card/provenance"),
            ) {
                self.asked_provenance.insert(id.to_owned(), provenance);
            }
            return;
        }
        let (Some(at), Some(session), Some(tool), Some(call)) = (
            text(line, "at"),
            text(line, "session"),
            text(line, "tool"),
            text(line, "tool_use_id"),
        ) else {
            return;
        };
        let key = (session.to_owned(), call.to_owned());
        let decided_by = line.get("decided_by").cloned().unwrap_or(Value::Null);
        let approval_id = text(line, "approval_id").map(str::to_owned);
        match text(line, "type") {
            Some("approval") => {
                let decision = text(line, "decision").unwrap_or("rejected").to_owned();
                let index = self.records.len();
                if let Some(id) = &approval_id {
                    self.by_question.insert(id.clone(), index);
                }
                self.by_call.insert(key, index);
                self.records.push(DecisionRecord {
                    at: at.to_owned(),
                    tool: tool.to_owned(),
                    arguments: line.get("arguments").cloned().unwrap_or(Value::Null),
                    outcome: outcome(&decision, &decided_by),
                    decision,
                    channel: text(line, "channel")
                        .or_else(|| text(&decided_by, "channel"))
                        .map(str::to_owned),
                    decided_by,
                    session: session.to_owned(),
                    tool_use_id: call.to_owned(),
                    provenance: approval_id
                        .as_ref()
                        .and_then(|id| self.asked_provenance.remove(id)),
                    approval_id,
                    ran: None,
                });
            }
            Some("tool_call") => {
                let asked = approval_id
                    .as_ref()
                    .and_then(|id| self.by_question.get(id))
                    .or_else(|| self.by_call.get(&key))
                    .copied();
                if let Some(record) = asked.and_then(|i| self.records.get_mut(i))
                    && record.ran.is_none()
                {
                    record.ran = ran(line);
                    if record.provenance.is_none() {
                        record.provenance = provenance_at(line, "/provenance");
                    }
                    return;
                }
                // A call nobody was asked about: a grant's or an exemption's yes, or a
                // tier-2 call tau's rules refused. Lower tiers decide nothing.
                let decision = match text(line, "approval") {
                    Some("granted" | "exempt") => "approved",
                    Some("refused" | "failed")
                        if line.get("tier").and_then(Value::as_u64) == Some(2) =>
                    {
                        "rejected"
                    }
                    _ => return,
                };
                self.records.push(DecisionRecord {
                    at: at.to_owned(),
                    tool: tool.to_owned(),
                    arguments: line.get("arguments").cloned().unwrap_or(Value::Null),
                    outcome: outcome(decision, &decided_by),
                    decision: decision.to_owned(),
                    channel: text(&decided_by, "channel").map(str::to_owned),
                    decided_by,
                    session: session.to_owned(),
                    tool_use_id: call.to_owned(),
                    approval_id,
                    ran: ran(line),
                    provenance: provenance_at(line, "/provenance"),
                });
            }
            Some("grant_used") => {
                if let Some(channel) = text(line, "channel") {
                    self.grant_channels.insert(key, channel.to_owned());
                }
            }
            _ => {}
        }
    }

    /// Newest first, each grant's call with the channel its grant was made on.
    fn finish(mut self) -> Vec<DecisionRecord> {
        for record in &mut self.records {
            if record.channel.is_none() {
                let key = (record.session.clone(), record.tool_use_id.clone());
                record.channel = self.grant_channels.get(&key).cloned();
            }
        }
        self.records.reverse();
        self.records
    }
}

/// The decisions in `lines` made at `since` or later, newest first. A line that does not
/// read as JSON, or has no time, is skipped: `tau audit verify` reports a damaged log.
fn read(lines: impl BufRead, since: Timestamp) -> io::Result<Vec<DecisionRecord>> {
    let mut gathered = Gathered::default();
    for line in lines.split(b'\n') {
        let line = line?;
        // Most lines take no part: skipped before parsing.
        if !TAGS
            .iter()
            .any(|tag| line.windows(tag.len()).any(|w| w == *tag))
        {
            continue;
        }
        let Ok(value) = serde_json::from_slice::<Value>(&line) else {
            continue;
        };
        let recent = text(&value, "at")
            .and_then(|at| at.parse::<Timestamp>().ok())
            .is_some_and(|at| at >= since);
        if recent {
            gathered.take(&value);
        }
    }
    Ok(gathered.finish())
}

fn read_file(path: &Path, since: Timestamp) -> io::Result<Vec<DecisionRecord>> {
    match std::fs::File::open(path) {
        Ok(file) => read(BufReader::new(file), since),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(error) => Err(error),
    }
}

/// The audit log as TauBar's history of decisions.
pub(crate) struct AuditDecisions {
    path: PathBuf,
}

impl AuditDecisions {
    pub(crate) fn new(path: PathBuf) -> Self {
        Self { path }
    }
}

impl tau_web::Decisions for AuditDecisions {
    fn recent(&self) -> Result<Vec<DecisionRecord>, DecisionsError> {
        let window = SignedDuration::from_hours(24 * HISTORY_DAYS);
        let since = Timestamp::now()
            .checked_sub(window)
            .unwrap_or(Timestamp::MIN);
        read_file(&self.path, since).map_err(DecisionsError::Read)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn log(lines: &[Value]) -> String {
        lines.iter().map(|l| format!("{l}\n")).collect()
    }

    fn approval(id: &str, call: &str, at: &str, decision: &str, by: &Value) -> Value {
        json!({"seq": 1, "at": at, "session": "web-1", "prev": "0", "type": "approval",
               "approval_id": id, "tool": "run_command", "tier": 2, "tool_use_id": call,
               "arguments": {"command": "ls"}, "decision": decision, "decided_by": by,
               "approver": "web", "channel": "web"})
    }

    fn call(call: &str, at: &str, approval: &str, status: &str, by: &Value) -> Value {
        json!({"seq": 2, "at": at, "session": "web-1", "prev": "0", "type": "tool_call",
               "tool": "run_command", "tier": 2, "tool_use_id": call,
               "arguments": {"command": "ls"}, "status": status, "approval": approval,
               "decided_by": by, "result_summary": "done", "duration_ms": 7})
    }

    #[test]
    fn each_decision_is_joined_with_what_ran_newest_first() {
        let since: Timestamp = "2026-11-01T00:00:00Z".parse().unwrap();
        let person = json!({"kind": "person", "channel": "web"});
        let grant = json!({"kind": "grant", "id": "gr_1"});
        let mut old = approval("ap_0", "t0", "2026-10-01T00:00:00Z", "approved", &person);
        old["tool"] = json!("old_tool");
        let lines = [
            old,
            json!({"seq": 3, "at": "2026-11-02T00:00:00Z", "session": "web-1",
                   "type": "approval_requested", "approval_id": "ap_1", "tool": "run_command"}),
            approval("ap_1", "t1", "2026-11-02T00:00:01Z", "approved", &person),
            call("t1", "2026-11-02T00:00:02Z", "approved", "success", &person),
            approval("ap_2", "t2", "2026-11-03T00:00:00Z", "rejected", &person),
            call("t2", "2026-11-03T00:00:01Z", "rejected", "refused", &person),
            approval(
                "ap_3",
                "t3",
                "2026-11-04T00:00:00Z",
                "timeout",
                &json!({"kind": "timeout"}),
            ),
            json!({"seq": 4, "at": "2026-11-05T00:00:00Z", "session": "web-1",
                   "type": "grant_used", "grant_id": "gr_1", "tool": "run_command",
                   "tool_use_id": "t4", "channel": "web", "use_number": 1}),
            call("t4", "2026-11-05T00:00:01Z", "granted", "error", &grant),
            call(
                "t5",
                "2026-11-06T00:00:00Z",
                "not_required",
                "success",
                &json!({"kind": "policy"}),
            ),
        ];
        let mut text = log(&lines);
        text.push_str("not json \"type\":\"tool_call\"\n");
        let records = read(text.as_bytes(), since).unwrap();
        let summary: Vec<_> = records
            .iter()
            .map(|r| {
                (
                    r.tool_use_id.as_str(),
                    r.outcome.as_str(),
                    r.channel.as_deref(),
                    r.ran.as_ref().map(|ran| ran.status.as_str()),
                )
            })
            .collect();
        assert_eq!(
            summary,
            vec![
                ("t4", "granted", Some("web"), Some("error")),
                ("t3", "timeout", Some("web"), None),
                ("t2", "rejected", Some("web"), Some("refused")),
                ("t1", "approved", Some("web"), Some("success")),
            ]
        );
        assert_eq!(records[3].approval_id.as_deref(), Some("ap_1"));
        assert_eq!(records[3].ran.as_ref().unwrap().duration_ms, Some(7));
    }

    #[test]
    fn a_decision_carries_the_provenance_its_question_or_its_call_recorded() {
        let since: Timestamp = "2026-11-01T00:00:00Z".parse().unwrap();
        let person = json!({"kind": "person", "channel": "web"});
        let provenance = json!({"escalated": true,
            "read": [{"type": "tool_result", "tool": "office__read_inbox", "call_id": "r1"}],
            "flagged": [{"argument": "/to", "value": "mark@evil.example",
                         "source": {"type": "tool_result", "tool": "office__read_inbox", "call_id": "r1"}}]});
        let mut called = call("t2", "2026-11-03T00:00:01Z", "rejected", "refused", &person);
        called["provenance"] = provenance.clone();
        let lines = [
            json!({"seq": 3, "at": "2026-11-02T00:00:00Z", "session": "web-1",
                   "type": "approval_requested", "approval_id": "ap_1", "tool": "run_command",
                   "call_id": "t1", "card": {"provenance": provenance.clone()}}),
            approval("ap_1", "t1", "2026-11-02T00:00:01Z", "approved", &person),
            call("t1", "2026-11-02T00:00:02Z", "approved", "success", &person),
            approval("ap_2", "t2", "2026-11-03T00:00:00Z", "rejected", &person),
            called,
            approval("ap_3", "t3", "2026-11-04T00:00:00Z", "rejected", &person),
        ];
        let records = read(log(&lines).as_bytes(), since).unwrap();
        let expected: CallProvenance = serde_json::from_value(provenance).unwrap();
        let found: Vec<_> = records
            .iter()
            .map(|r| (r.tool_use_id.as_str(), r.provenance.as_ref()))
            .collect();
        assert_eq!(
            found,
            vec![
                ("t3", None),
                ("t2", Some(&expected)),
                ("t1", Some(&expected))
            ]
        );
    }

    #[test]
    fn a_missing_log_has_no_decisions() {
        let dir = tempfile::tempdir().unwrap();
        let read = read_file(&dir.path().join("audit.jsonl"), Timestamp::now()).unwrap();
        assert!(read.is_empty());
    }
}
