//! The history of decisions TauBar lists (`GET /api/decisions`), read from the audit log:
//! each tier-2 call decided in the last 30 days (an `approval` line, or a `tool_call` line
//! a grant or a routine's exemption let through, or tau's rules refused), joined with the
//! `tool_call` line that says what ran. The log is read when the page asks, never written.

use std::collections::HashMap;
use std::io::{self, BufRead};
use std::path::{Path, PathBuf};
use tau_protocol::{CallFate, Ruling};

use jiff::{SignedDuration, Timestamp};
use tau_core::AuditEvent;
use tau_protocol::{
    Approval, ApprovalId, CallProvenance, DECISION_HISTORY_DAYS, DecidedBy, Decision,
    DecisionOutcome, DecisionRan, DecisionRow, Tier,
};

use crate::record::{Entry, Lines, fold_lines};

/// What the log says, gathered in one pass, oldest first.
#[derive(Default)]
struct Gathered {
    records: Vec<DecisionRow>,
    /// A record by the question's id, and by its conversation and call id.
    by_question: HashMap<ApprovalId, usize>,
    by_call: HashMap<(String, String), usize>,
    /// The channel a grant was made on, by conversation and call id.
    grant_channels: HashMap<(String, String), String>,
    /// What each question's card said about where its values came from, by its id.
    asked_provenance: HashMap<ApprovalId, CallProvenance>,
}

/// A provenance that says anything.
fn said(provenance: &CallProvenance) -> Option<CallProvenance> {
    (!provenance.is_empty()).then(|| provenance.clone())
}

impl Gathered {
    fn take(&mut self, entry: &Entry, event: &AuditEvent) {
        let (Some(at), Some(session)) = (entry.at.as_deref(), entry.session.as_deref()) else {
            return;
        };
        match event {
            // A question's line holds its whole card: its provenance waits for the decision.
            AuditEvent::ApprovalRequested(question) => {
                if let Some(provenance) = said(&question.card.provenance) {
                    self.asked_provenance
                        .insert(question.approval_id.clone(), provenance);
                }
            }
            AuditEvent::Approval {
                approval_id,
                tool,
                tool_use_id,
                arguments,
                ruling:
                    Ruling {
                        decision,
                        decided_by,
                    },
                channel,
                ..
            } => {
                let index = self.records.len();
                self.by_question.insert(approval_id.clone(), index);
                self.by_call
                    .insert((session.to_owned(), tool_use_id.clone()), index);
                self.records.push(DecisionRow {
                    at: at.to_owned(),
                    tool: tool.clone(),
                    arguments: arguments.clone(),
                    decision: *decision,
                    outcome: DecisionOutcome::of(*decision, decided_by),
                    decided_by: decided_by.clone(),
                    channel: Some(channel.clone()),
                    session: session.to_owned(),
                    tool_use_id: tool_use_id.clone(),
                    approval_id: Some(approval_id.clone()),
                    ran: None,
                    provenance: self.asked_provenance.remove(approval_id),
                });
            }
            AuditEvent::ToolCall {
                tool,
                tier,
                tool_use_id,
                arguments,
                fate:
                    CallFate {
                        status,
                        approval,
                        decided_by,
                    },
                approval_id,
                result_summary,
                duration_ms,
                provenance,
            } => {
                let ran = DecisionRan {
                    status: *status,
                    result_summary: result_summary.clone(),
                    duration_ms: *duration_ms,
                };
                let key = (session.to_owned(), tool_use_id.clone());
                let asked = approval_id
                    .as_ref()
                    .and_then(|id| self.by_question.get(id))
                    .or_else(|| self.by_call.get(&key))
                    .copied();
                if let Some(record) = asked.and_then(|i| self.records.get_mut(i))
                    && record.ran.is_none()
                {
                    record.ran = Some(ran);
                    if record.provenance.is_none() {
                        record.provenance = said(provenance);
                    }
                    return;
                }
                // A call nobody was asked about: a grant's or an exemption's yes, or a
                // tier-2 call tau's rules refused. Lower tiers decide nothing.
                let decision = match approval {
                    Approval::Granted | Approval::Exempt => Decision::Approved,
                    Approval::Refused | Approval::Failed if *tier == Some(Tier::Physical) => {
                        Decision::Rejected
                    }
                    Approval::Refused
                    | Approval::Failed
                    | Approval::NotRequired
                    | Approval::Approved
                    | Approval::Rejected
                    | Approval::Timeout => return,
                };
                self.records.push(DecisionRow {
                    at: at.to_owned(),
                    tool: tool.clone(),
                    arguments: arguments.clone(),
                    decision,
                    outcome: DecisionOutcome::of(decision, decided_by),
                    channel: match decided_by {
                        DecidedBy::Person { channel, .. } => Some(channel.clone()),
                        _ => None,
                    },
                    decided_by: decided_by.clone(),
                    session: session.to_owned(),
                    tool_use_id: tool_use_id.clone(),
                    approval_id: approval_id.clone(),
                    ran: Some(ran),
                    provenance: said(provenance),
                });
            }
            AuditEvent::GrantUsed {
                tool_use_id,
                channel,
                ..
            } => {
                self.grant_channels
                    .insert((session.to_owned(), tool_use_id.clone()), channel.clone());
            }
            AuditEvent::GrantCreated(_)
            | AuditEvent::GrantPinned { .. }
            | AuditEvent::GrantRevoked { .. }
            | AuditEvent::Error { .. }
            | AuditEvent::TurnLimit { .. }
            | AuditEvent::TurnEnd { .. }
            | AuditEvent::RoutineRun { .. }
            | AuditEvent::AnswerRefused { .. }
            | AuditEvent::WebhookRefused { .. }
            | AuditEvent::EffectUncertain { .. }
            | AuditEvent::ChannelStopped { .. } => {}
        }
    }

    /// Newest first, each grant's call with the channel its grant was made on.
    fn finish(mut self) -> Vec<DecisionRow> {
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
/// read, or has no time, is skipped: `tau audit verify` reports a damaged log.
fn read(lines: impl BufRead, since: Timestamp) -> io::Result<Vec<DecisionRow>> {
    let mut gathered = Gathered::default();
    fold_lines(Lines::new(lines), |entry, event| {
        if entry.time().is_some_and(|at| at >= since) {
            gathered.take(entry, event);
        }
    })?;
    Ok(gathered.finish())
}

fn read_file(path: &Path, since: Timestamp) -> io::Result<Vec<DecisionRow>> {
    match std::fs::File::open(path) {
        Ok(file) => read(io::BufReader::new(file), since),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(error) => Err(error),
    }
}

/// The audit log as TauBar's history of decisions.
pub struct AuditDecisions {
    path: PathBuf,
}

impl AuditDecisions {
    pub fn new(path: PathBuf) -> Self {
        Self { path }
    }

    /// Every decision of the last [`DECISION_HISTORY_DAYS`] days, newest first.
    pub fn recent(&self) -> io::Result<Vec<DecisionRow>> {
        let window = SignedDuration::from_hours(24 * DECISION_HISTORY_DAYS);
        let since = Timestamp::now()
            .checked_sub(window)
            .unwrap_or(Timestamp::MIN);
        read_file(&self.path, since)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};
    use tau_protocol::CallStatus;

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
                    r.ran.as_ref().map(|ran| ran.status),
                )
            })
            .collect();
        assert_eq!(
            summary,
            vec![
                ("t4", "granted", Some("web"), Some(CallStatus::Error)),
                ("t3", "timeout", Some("web"), None),
                ("t2", "rejected", Some("web"), Some(CallStatus::Refused)),
                ("t1", "approved", Some("web"), Some(CallStatus::Success)),
            ]
        );
        assert_eq!(
            records[3].approval_id.as_ref().map(ApprovalId::as_str),
            Some("ap_1")
        );
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
                   "call_id": "t1", "tier": 2, "effect": "runs a command",
                   "arguments": {"command": "ls"}, "channel": "web",
                   "card": {"provenance": provenance.clone()}}),
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
