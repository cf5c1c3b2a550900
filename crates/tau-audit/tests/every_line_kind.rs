//! Every kind of line the log holds, written through the real writer, read back by the
//! one reader and folded by every consumer: what each makes of it. The table covers every
//! `AuditEvent` variant (the list is serde's own, so a new variant fails here until it has
//! a sample) and `expected` names each variant with no wildcard (so it does not compile
//! until someone says what every consumer makes of a new one). A line of a kind this build
//! does not know, and a damaged line, are read too.
#![allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]

use std::path::{Path, PathBuf};
use tau_protocol::CallFate;
use tau_protocol::Ruling;

use jiff::{SignedDuration, Timestamp};
use pretty_assertions::assert_eq;
use serde_json::json;
use tau_audit::{
    AuditDecisions, AuditGrants, AuditHistory, AuditLine, AuditLog, Broken, Entry, Event, GENESIS,
    Verdict, copy_to_head, grant_stats, line_hash, recorded_answers, verify,
};
use tau_core::{ApprovalHistory, AuditEvent, ErrorSite, RoutineOutcome};
use tau_protocol::{
    Approval, ApprovalId, ApprovalQuestion, CallCard, CallProvenance, CallStatus, DecidedBy,
    Decision, DecisionOutcome, Grant, GrantId, GrantScope, SessionId, Tier,
};
use tau_state::{StateDb, canonical_arguments};

const TOOL: &str = "run_command";
const SESSION: &str = "s1";
const NO_STATS: &str = "no tier-2 questions in the audit log yet\n";

fn arguments() -> serde_json::Value {
    json!({"command": "make -s"})
}

fn approval_id() -> ApprovalId {
    ApprovalId::parse("ap_1").unwrap()
}

fn grant_id() -> GrantId {
    GrantId::parse("gr_1").unwrap()
}

fn tool_call(tier: Tier, approval: Approval, decided_by: DecidedBy) -> AuditEvent {
    AuditEvent::ToolCall {
        tool: TOOL.into(),
        tier: Some(tier),
        tool_use_id: "t1".into(),
        arguments: arguments(),
        fate: CallFate {
            status: CallStatus::Success,
            approval,
            decided_by,
        },
        approval_id: None,
        result_summary: Some("done".into()),
        duration_ms: Some(3),
        provenance: CallProvenance::default(),
    }
}

fn answer(decision: Decision, decided_by: DecidedBy) -> AuditEvent {
    AuditEvent::Approval {
        approval_id: approval_id(),
        tool: TOOL.into(),
        tier: Tier::Physical,
        tool_use_id: "t1".into(),
        arguments: arguments(),
        ruling: Ruling {
            decision,
            decided_by,
        },
        approver: "terminal".into(),
        channel: "terminal".into(),
        grant: None,
        provenance: CallProvenance::default(),
    }
}

fn grant() -> Grant {
    Grant {
        id: grant_id(),
        tool: TOOL.into(),
        tier: Tier::Physical,
        schema_sha256: "0".repeat(64),
        arguments_sha256: canonical_arguments(&arguments()).1,
        arguments: arguments(),
        card_sha256: "1".repeat(64),
        workspace_sha256: None,
        scope: GrantScope::Conversation,
        channel: "terminal".into(),
        // Not the writer's session: the grant's own is the line's.
        session: SessionId::parse("s2").unwrap(),
        person: None,
        created_by: DecidedBy::person("terminal"),
        approval_id: Some(approval_id()),
        created_at: Timestamp::now().to_string(),
        expires_at: Timestamp::now().to_string(),
        uses: 0,
        max_uses: None,
        last_used_at: None,
        revoked_at: None,
        revoked_by: None,
    }
}

/// One line or more of every kind, and the combinations the consumers tell apart.
fn samples() -> Vec<AuditEvent> {
    vec![
        tool_call(
            Tier::Physical,
            Approval::Granted,
            DecidedBy::Grant { id: grant_id() },
        ),
        tool_call(
            Tier::Physical,
            Approval::Exempt,
            DecidedBy::Exemption {
                name: "porch".into(),
            },
        ),
        tool_call(Tier::Physical, Approval::Refused, DecidedBy::Policy),
        tool_call(Tier::Read, Approval::NotRequired, DecidedBy::Policy),
        tool_call(
            Tier::Physical,
            Approval::Approved,
            DecidedBy::person("terminal"),
        ),
        AuditEvent::ApprovalRequested(ApprovalQuestion {
            approval_id: approval_id(),
            call_id: "t1".into(),
            tool: TOOL.into(),
            tier: Tier::Physical,
            effect: "runs a command".into(),
            arguments: arguments(),
            channel: "terminal".into(),
            deadline: None,
            card: CallCard::default(),
            grant: None,
        }),
        answer(Decision::Approved, DecidedBy::person("terminal")),
        answer(Decision::Rejected, DecidedBy::person("terminal")),
        answer(Decision::Timeout, DecidedBy::Timeout),
        AuditEvent::GrantCreated(grant()),
        AuditEvent::GrantUsed {
            grant_id: grant_id(),
            tool: TOOL.into(),
            tool_use_id: "t1".into(),
            session: "s3".into(),
            channel: "telegram".into(),
            use_number: 1,
            max_uses: None,
        },
        AuditEvent::GrantPinned {
            grant_id: grant_id(),
            tool: TOOL.into(),
            tool_use_id: "t1".into(),
            workspace_sha256: "2".repeat(64),
        },
        AuditEvent::GrantRevoked {
            grant_id: grant_id(),
            tool: TOOL.into(),
            revoked_by: DecidedBy::person("terminal"),
            uses: 1,
            reason: None,
        },
        AuditEvent::error(ErrorSite::TierGate, "boom", Some(TOOL), Some("t1")),
        AuditEvent::TurnLimit { max_turns: 4 },
        AuditEvent::TurnEnd {
            stop_reason: "end_turn".into(),
            model_calls: 1,
            input_tokens: 10,
            output_tokens: 2,
        },
        AuditEvent::RoutineRun {
            routine: "porch".into(),
            trigger: "manual".into(),
            outcome: RoutineOutcome::Success,
            detail: None,
            tool_use_id: Some("t1".into()),
            duration_ms: None,
            count: None,
        },
        AuditEvent::AnswerRefused {
            channel: "telegram".into(),
            approval_id: Some("ap_1".into()),
            user: Some("666".into()),
            person: None,
            place: None,
            reason: "not an owner".into(),
            count: None,
        },
        // A person of the household whose answer was not theirs to give.
        AuditEvent::AnswerRefused {
            channel: "web".into(),
            approval_id: Some("ap_2".into()),
            user: None,
            person: Some("bob".into()),
            place: None,
            reason: "not yours: the conversation is ana's".into(),
            count: None,
        },
        AuditEvent::WebhookRefused {
            routine: "doorbell".into(),
            sender: "127.0.0.1".into(),
            reason: "wrong or missing secret".into(),
            count: None,
        },
        AuditEvent::EffectUncertain {
            approval_id: approval_id(),
            tool: TOOL.into(),
            tool_use_id: "t1".into(),
            channel: "terminal".into(),
            dispatched_at: Timestamp::now().to_string(),
        },
        AuditEvent::ChannelStopped {
            channel: "telegram".into(),
            error: "gone".into(),
        },
    ]
}

/// What every consumer makes of one line alone in a log.
#[derive(Debug, Clone, PartialEq)]
struct Folded {
    /// The session the line is read as belonging to.
    session: String,
    /// The recorded answers `tau serve` confirms stored approvals against.
    answers: usize,
    /// A person's yes to exactly this call, for the card's suggestion.
    yeses: usize,
    /// Whether `tau grants stats` has a row for it.
    in_stats: bool,
    /// The outcome of the row TauBar's history shows, if it shows one.
    decision: Option<DecisionOutcome>,
    /// The grants the log records (the gate confirms a grant against them).
    grants: usize,
}

impl Folded {
    fn nothing() -> Self {
        Self {
            session: SESSION.into(),
            answers: 0,
            yeses: 0,
            in_stats: false,
            decision: None,
            grants: 0,
        }
    }
}

/// What each consumer makes of `event`: every variant named, no wildcard.
fn expected(event: &AuditEvent) -> Folded {
    let nothing = Folded::nothing();
    match event {
        AuditEvent::ToolCall {
            tier,
            fate: CallFate { decided_by, .. },
            ..
        } => {
            let decision = match (tier, decided_by) {
                (_, DecidedBy::Grant { .. }) => Some(DecisionOutcome::Granted),
                (_, DecidedBy::Exemption { .. }) => Some(DecisionOutcome::Exempt),
                // A tier-2 call tau's rules refused is a decision; a lower tier's is none.
                (Some(Tier::Physical), DecidedBy::Policy) => Some(DecisionOutcome::Refused),
                // A person's yes is the `approval` line's: the call alone shows nothing.
                _ => None,
            };
            Folded {
                in_stats: matches!(decided_by, DecidedBy::Grant { .. }),
                decision,
                ..nothing
            }
        }
        AuditEvent::ApprovalRequested(_) => Folded {
            in_stats: true,
            ..nothing
        },
        AuditEvent::Approval {
            ruling: Ruling {
                decision,
                decided_by,
            },
            ..
        } => Folded {
            answers: 1,
            yeses: usize::from(*decision == Decision::Approved && decided_by.is_person()),
            in_stats: decided_by.is_person() && *decision != Decision::Timeout,
            decision: Some(DecisionOutcome::of(*decision, decided_by)),
            ..nothing
        },
        AuditEvent::GrantCreated(grant) => Folded {
            session: grant.session.to_string(),
            grants: 1,
            ..nothing
        },
        AuditEvent::GrantUsed { session, .. } => Folded {
            session: session.clone(),
            ..nothing
        },
        AuditEvent::GrantPinned { .. }
        | AuditEvent::GrantRevoked { .. }
        | AuditEvent::Error { .. }
        | AuditEvent::TurnLimit { .. }
        | AuditEvent::TurnEnd { .. }
        | AuditEvent::RoutineRun { .. }
        | AuditEvent::AnswerRefused { .. }
        | AuditEvent::WebhookRefused { .. }
        | AuditEvent::EffectUncertain { .. }
        | AuditEvent::ChannelStopped { .. } => nothing,
    }
}

/// Every line kind `AuditEvent` reads, as serde lists them.
fn every_kind() -> Vec<String> {
    let error = serde_json::from_value::<AuditEvent>(json!({"type": "-"}))
        .unwrap_err()
        .to_string();
    let list = error.split("expected one of ").nth(1).unwrap();
    list.split(", ")
        .map(|kind| {
            kind.trim_matches(|c: char| c == '`' || c.is_whitespace())
                .to_owned()
        })
        .filter(|kind| !kind.is_empty())
        .collect()
}

fn kind_of(event: &AuditEvent) -> String {
    serde_json::to_value(event).unwrap()["type"]
        .as_str()
        .unwrap()
        .to_owned()
}

struct Home {
    _dir: tempfile::TempDir,
    log: PathBuf,
    state: StateDb,
}

fn home() -> Home {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.jsonl");
    let state = StateDb::open(&dir.path().join("state.db")).unwrap();
    Home {
        _dir: dir,
        log,
        state,
    }
}

/// What every consumer makes of the log at `path`.
fn fold(path: &Path, state: &StateDb) -> Folded {
    let now = Timestamp::now();
    let day_ago = now.checked_sub(SignedDuration::from_hours(24)).unwrap();
    let sha = canonical_arguments(&arguments()).1;
    let decisions = AuditDecisions::new(path.to_owned()).recent().unwrap();
    assert!(decisions.len() <= 1, "{decisions:?}");
    let session = tau_audit::open_lines(path)
        .unwrap()
        .into_iter()
        .flatten()
        .find_map(|line| match line.unwrap().1 {
            AuditLine::Entry(Entry { session, .. }) => session,
            AuditLine::Damaged => None,
        })
        .unwrap_or_default();
    Folded {
        session,
        answers: recorded_answers(path).unwrap().len(),
        yeses: AuditHistory::new(path.to_owned())
            .approved_at(TOOL, &sha, day_ago)
            .len(),
        in_stats: grant_stats(path, now).unwrap() != NO_STATS,
        decision: decisions.first().map(|row| row.outcome),
        grants: AuditGrants::new(path.to_owned(), state.clone())
            .all()
            .map_or(usize::MAX, |all| all.len()),
    }
}

#[test]
fn every_line_kind_is_written_read_back_and_folded_by_every_consumer() {
    let samples = samples();
    let sampled: Vec<String> = samples.iter().map(kind_of).collect();
    let every = every_kind();
    assert!(
        every.contains(&"tool_call".to_owned()) && every.contains(&"channel_stopped".to_owned()),
        "{every:?}"
    );
    for kind in every {
        assert!(sampled.contains(&kind), "no sample of `{kind}`");
    }
    for event in &samples {
        let home = home();
        let log = AuditLog::open(&home.log, SESSION, home.state.audit_anchor()).unwrap();
        log.append(event).unwrap();

        // Read back whole, its chain's fields as the writer set them.
        let lines: Vec<_> = tau_audit::open_lines(&home.log)
            .unwrap()
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let [(bytes, AuditLine::Entry(entry))] = lines.as_slice() else {
            panic!("{event:?} reads as {lines:?}");
        };
        assert_eq!(entry.event(), Some(event));
        assert_eq!((entry.seq, entry.prev.as_deref()), (Some(1), Some(GENESIS)));
        assert!(entry.time().is_some(), "{entry:?}");

        // The chain vouches for it, and the copy up to the head holds it.
        assert_eq!(
            verify(&home.log, Some(&home.state)).unwrap(),
            Verdict::Intact { lines: 1 },
            "{event:?}"
        );
        let head = home.state.audit_anchor().audit_head().unwrap().unwrap();
        assert_eq!(head.hash, line_hash(bytes));
        let mut copy = Vec::new();
        assert_eq!(copy_to_head(&home.log, Some(&head), &mut copy).unwrap(), 1);

        assert_eq!(
            fold(&home.log, &home.state),
            expected(event),
            "{}",
            kind_of(event)
        );
    }
}

#[test]
fn a_kind_this_build_does_not_know_is_walked_past_and_taken_for_nothing() {
    let home = home();
    let line = format!(
        r#"{{"seq":1,"at":"{}","session":"s1","prev":"{GENESIS}","type":"approval_v2","approval_id":"ap_1","tool":"run_command","decision":"approved","decided_by":{{"kind":"person","channel":"terminal"}},"arguments":{{"command":"make -s"}}}}"#,
        Timestamp::now()
    );
    std::fs::write(&home.log, format!("{line}\n")).unwrap();
    let read = AuditLine::parse(line.as_bytes());
    assert_eq!(
        read.entry().map(|entry| &entry.event),
        Some(&Event::Unknown {
            kind: Some("approval_v2".into())
        })
    );
    // Chained, but nothing anchors it: tau did not write it.
    assert_eq!(
        verify(&home.log, None).unwrap(),
        Verdict::Unanchored { lines: 1 }
    );
    // Nothing counts it; and a log nothing anchors confirms no grant.
    assert_eq!(
        fold(&home.log, &home.state),
        Folded {
            grants: usize::MAX,
            ..Folded::nothing()
        }
    );
}

#[test]
fn a_damaged_line_is_reported_by_verify_and_skipped_by_the_rest() {
    let home = home();
    let log = AuditLog::open(&home.log, SESSION, home.state.audit_anchor()).unwrap();
    log.append(&answer(Decision::Approved, DecidedBy::person("terminal")))
        .unwrap();
    let mut text = std::fs::read_to_string(&home.log).unwrap();
    text.push_str("{\"seq\":2,\"type\":\"approval\"\n");
    std::fs::write(&home.log, text).unwrap();
    assert_eq!(
        AuditLine::parse(b"{\"seq\":2,\"type\":\"approval\""),
        AuditLine::Damaged
    );
    assert_eq!(
        verify(&home.log, Some(&home.state)).unwrap(),
        Verdict::Broken {
            line: 2,
            reason: Broken::NotAnObject
        }
    );
    let folded = fold(&home.log, &home.state);
    // The whole line before it still counts; a log that cannot be vouched for confirms
    // no grant.
    assert_eq!(
        folded,
        Folded {
            answers: 1,
            yeses: 1,
            in_stats: true,
            decision: Some(DecisionOutcome::Approved),
            grants: usize::MAX,
            ..Folded::nothing()
        }
    );
}
