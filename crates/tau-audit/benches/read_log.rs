//! What reading a long log costs each consumer: a log of 20,000 lines as a busy home
//! writes them (mostly calls and turn ends, a question and its answer now and then), read
//! whole by verify, the recorded answers, TauBar's decisions, grant stats and a person's
//! approvals (their first read). `cargo bench -p tau-audit --bench read_log`.
#![allow(clippy::unwrap_used, clippy::print_stdout)]

use std::time::{Duration, Instant};
use tau_protocol::CallFate;
use tau_protocol::Ruling;

use jiff::{SignedDuration, Timestamp};
use serde_json::json;
use tau_audit::{AuditDecisions, AuditHistory, AuditLog, grant_stats, recorded_answers, verify};
use tau_core::{ApprovalHistory, AuditEvent};
use tau_protocol::{
    Approval, ApprovalId, ApprovalQuestion, CallCard, CallProvenance, CallStatus, DecidedBy,
    Decision, Tier,
};
use tau_state::StateDb;

const LINES: usize = 20_000;
const RUNS: u32 = 5;

fn call(n: usize) -> AuditEvent {
    AuditEvent::ToolCall {
        tool: "read_file".into(),
        tier: Some(Tier::Read),
        tool_use_id: format!("t{n}"),
        arguments: json!({"path": format!("notes/{n}.md")}),
        fate: CallFate {
            status: CallStatus::Success,
            approval: Approval::NotRequired,
            decided_by: DecidedBy::Policy,
        },
        approval_id: None,
        result_summary: Some("read 1200 bytes of a note about the garden".into()),
        duration_ms: Some(2),
        provenance: CallProvenance::default(),
    }
}

fn question(n: usize) -> [AuditEvent; 2] {
    let id = ApprovalId::parse(&format!("ap_{n}")).unwrap();
    let arguments = json!({"command": "make -s test"});
    [
        AuditEvent::ApprovalRequested(ApprovalQuestion {
            approval_id: id.clone(),
            call_id: format!("t{n}"),
            tool: "run_command".into(),
            tier: Tier::Physical,
            effect: "runs a command".into(),
            arguments: arguments.clone(),
            channel: "web".into(),
            deadline: None,
            card: CallCard::default(),
            grant: None,
        }),
        AuditEvent::Approval {
            approval_id: id,
            tool: "run_command".into(),
            tier: Tier::Physical,
            tool_use_id: format!("t{n}"),
            arguments,
            ruling: Ruling {
                decision: Decision::Approved,
                decided_by: DecidedBy::person("web"),
            },
            approver: "web".into(),
            channel: "web".into(),
            grant: None,
            provenance: CallProvenance::default(),
        },
    ]
}

fn time(what: &str, mut run: impl FnMut()) {
    run();
    let start = Instant::now();
    for _ in 0..RUNS {
        run();
    }
    let each: Duration = start.elapsed() / RUNS;
    println!("{what:<28} {:>8.1} ms", each.as_secs_f64() * 1000.0);
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let state = StateDb::open(&dir.path().join("state.db")).unwrap();
    let log = AuditLog::open(&path, "web-1", state.audit_anchor()).unwrap();
    let mut written = 0;
    while written < LINES {
        if written % 50 == 0 {
            for event in question(written) {
                log.append(&event).unwrap();
            }
            written += 2;
        }
        log.append(&call(written)).unwrap();
        log.append(&AuditEvent::TurnEnd {
            stop_reason: "end_turn".into(),
            model_calls: 2,
            input_tokens: 4000,
            output_tokens: 300,
        })
        .unwrap();
        written += 2;
    }
    let bytes = std::fs::metadata(&path).unwrap().len();
    println!("{written} lines, {} KiB", bytes / 1024);
    let since = Timestamp::now()
        .checked_sub(SignedDuration::from_hours(24))
        .unwrap();
    let sha = tau_state::canonical_arguments(&json!({"command": "make -s test"})).1;
    time("verify", || {
        verify(&path, Some(&state)).unwrap();
    });
    time("recorded answers", || {
        recorded_answers(&path).unwrap();
    });
    time("decisions", || {
        AuditDecisions::new(path.clone()).recent().unwrap();
    });
    time("grant stats", || {
        grant_stats(&path, Timestamp::now()).unwrap();
    });
    time("approvals (first read)", || {
        AuditHistory::new(path.clone()).approved_at("run_command", &sha, since);
    });
}
