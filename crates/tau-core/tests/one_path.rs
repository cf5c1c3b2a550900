//! One durable path: a paused turn's stored question (the conversation gate resuming it)
//! and a routine's (`stored_gated_call`, whose run waits instead of pausing) reach the
//! same verdict on every case of the re-check ladder, and only a yes that still holds
//! runs anything, once.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use common::{House, asked};
use pretty_assertions::assert_eq;
use serde_json::json;
use tau_agent::ToolContext;
use tau_core::approval::{DurableQuestions, answer_durable};
use tau_core::{
    AuditEvent, EventBus, RecordedEvents, ScriptedApprover, StoredAnswers, TierGate, ToolCatalog,
    stored_gated_call,
};
use tau_protocol::{Approval, ApprovalId, DecidedBy, SessionId};
use tau_state::{ApprovalRow, ApprovalState, StateDb};

/// One case: how the question is answered, then what is changed in `state.db` behind
/// tau's back before the call would run.
struct Case {
    name: &'static str,
    answer: (ApprovalState, DecidedBy),
    tamper: Option<&'static str>,
}

fn yes() -> (ApprovalState, DecidedBy) {
    (ApprovalState::Approved, DecidedBy::person("web"))
}

fn cases() -> Vec<Case> {
    let case = |name, answer, tamper| Case {
        name,
        answer,
        tamper,
    };
    vec![
        case("a yes in time", yes(), None),
        case(
            "a no",
            (ApprovalState::Rejected, DecidedBy::person("web")),
            None,
        ),
        case(
            "expired",
            (ApprovalState::Expired, DecidedBy::Timeout),
            None,
        ),
        case(
            "withdrawn",
            (ApprovalState::Cancelled, DecidedBy::Cancelled),
            None,
        ),
        case(
            "superseded",
            (ApprovalState::Superseded, DecidedBy::Superseded),
            None,
        ),
        case("another call", yes(), Some("call_id = 't9'")),
        case("another session", yes(), Some("session = 'web-2'")),
        case("another tool", yes(), Some("tool = 'notes'")),
        case(
            "used before",
            yes(),
            Some("consumed_at = '2026-12-03T12:00:00Z'"),
        ),
        case("asked on telegram", yes(), Some("channel = 'telegram'")),
        case("asked as tier 1", yes(), Some("tier = 1")),
        case(
            "a yes nobody gave",
            yes(),
            Some(r#"decided_by = '{"kind":"policy"}'"#),
        ),
        case(
            "a yes given on telegram",
            yes(),
            Some(r#"decided_by = '{"kind":"person","channel":"telegram"}'"#),
        ),
        case(
            "past its deadline",
            yes(),
            Some("deadline = '1970-01-01T00:00:00Z'"),
        ),
        case(
            "other arguments",
            yes(),
            Some(
                "arguments_sha256 = '0000000000000000000000000000000000000000000000000000000000000000'",
            ),
        ),
    ]
}

/// A home's `state.db` and audit log, and a durable gate over them.
struct Home {
    dir: tempfile::TempDir,
    store: StateDb,
    house: House,
    audit: EventBus,
    recorded: RecordedEvents,
}

impl Home {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let store = StateDb::open(&dir.path().join("state.db")).unwrap();
        let audit = EventBus::new();
        Self {
            recorded: RecordedEvents::subscribed_to(&audit),
            dir,
            store,
            house: House::new(),
            audit,
        }
    }

    fn gate(&self) -> TierGate {
        let catalog = Arc::new(self.house.catalog());
        TierGate::new(
            catalog,
            Arc::new(ScriptedApprover::new([])),
            self.audit.clone(),
        )
        .with_durable(DurableQuestions {
            store: self.store.approvals(),
            session: SessionId::parse("web-1").unwrap(),
            channel: "web".into(),
            timeout: Duration::from_secs(1800),
        })
    }

    /// Answers question `id` as `case` says, then changes its row as `case` says.
    fn answer(&self, case: &Case, id: &ApprovalId) {
        let (to, by) = &case.answer;
        answer_durable(&self.store.approvals(), &self.audit, id, *to, by, None).unwrap();
        if let Some(set) = case.tamper {
            tau_test_support::tamper_approval(&self.dir.path().join("state.db"), id.as_str(), set);
        }
    }

    /// What the audit log says went wrong.
    fn errors(&self) -> Vec<String> {
        self.recorded
            .events()
            .into_iter()
            .filter_map(|e| match e {
                AuditEvent::Error { message, .. } => Some(message),
                _ => None,
            })
            .collect()
    }
}

/// What a path decided: let through or not, the approval and who decided, the text the
/// caller reads, whether the tool ran, and what the audit log says went wrong.
#[derive(Debug, PartialEq)]
struct Verdict {
    allowed: bool,
    approval: Approval,
    decided_by: DecidedBy,
    text: Option<String>,
    runs: usize,
    errors: Vec<String>,
}

/// The conversation's path: the turn pauses on the stored question and the gate checks
/// the stored answer when the turn resumes.
async fn as_a_turn(case: &Case) -> Verdict {
    let home = Home::new();
    let gate = home.gate();
    let arguments = json!({"room": "porch"});
    let approval_id = asked(&gate.check("lights", &arguments, "t1").await);
    gate.announce_stored(true);
    home.answer(case, &approval_id);
    let check = gate.resume_durable("lights", &arguments, "t1", &approval_id);
    let catalog = home.house.catalog();
    if check.allowed() {
        let entry = catalog.get("lights").unwrap();
        tau_agent::run_tool(
            &entry.tool,
            "t1",
            arguments,
            ToolContext::new("t1", "lights", None),
        )
        .await;
    }
    Verdict {
        allowed: check.allowed(),
        approval: check.approval(),
        decided_by: check.decided_by(),
        text: check.verdict.refusal_text().map(str::to_owned),
        runs: home.house.lights.runs(),
        errors: home.errors(),
    }
}

/// A channel that answers a routine's question as the case says once it is shown.
struct Answering<'a> {
    home: &'a Home,
    case: &'a Case,
    shown: Mutex<Vec<ApprovalRow>>,
}

#[async_trait]
impl StoredAnswers for Answering<'_> {
    fn show_question(&self, row: &ApprovalRow) {
        self.shown.lock().unwrap().push(row.clone());
        if row.state == ApprovalState::Pending {
            self.home.answer(self.case, &row.id);
        }
    }

    async fn changed(&self, _id: &ApprovalId) {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }

    fn settled(&self, _id: &ApprovalId) {}
}

/// A routine's path: its run waits for the stored answer, then the same gate checks it.
async fn as_a_routine(case: &Case) -> Verdict {
    let home = Home::new();
    let gate = home.gate();
    let catalog: ToolCatalog = home.house.catalog();
    let answers = Answering {
        home: &home,
        case,
        shown: Mutex::default(),
    };
    let done = stored_gated_call(
        &gate,
        &catalog,
        "lights",
        "t1",
        json!({"room": "porch"}),
        ToolContext::new("t1", "lights", None),
        &answers,
    )
    .await;
    assert_eq!(answers.shown.lock().unwrap().len(), 1, "{}", case.name);
    Verdict {
        allowed: done.decision.allowed(),
        approval: done.decision.approval(),
        decided_by: done.decision.decided_by(),
        text: done.decision.verdict.refusal_text().map(str::to_owned),
        runs: home.house.lights.runs(),
        errors: home.errors(),
    }
}

/// What each case decides, and what the audit log says went wrong.
fn expected(name: &str) -> (Approval, Option<&'static str>) {
    match name {
        "a yes in time" | "used before" => (Approval::Approved, None),
        "a no" | "withdrawn" | "superseded" => (Approval::Rejected, None),
        "expired" => (Approval::Timeout, None),
        "another call" | "another session" | "another tool" => {
            (Approval::Failed, Some("the answer belongs to another call"))
        }
        "asked on telegram" => (
            Approval::Failed,
            Some("the question was asked on another channel"),
        ),
        "asked as tier 1" => (
            Approval::Failed,
            Some("the tool is no longer registered with the approved tier"),
        ),
        "a yes nobody gave" => (
            Approval::Failed,
            Some("the stored approval was not given by a person"),
        ),
        "a yes given on telegram" => (
            Approval::Failed,
            Some("the stored approval was given on another channel"),
        ),
        "past its deadline" => (Approval::Failed, Some("the approval's deadline has passed")),
        "other arguments" => (
            Approval::Failed,
            Some("the arguments differ from the approved ones"),
        ),
        other => panic!("no verdict for {other}"),
    }
}

#[tokio::test]
async fn a_turn_and_a_routine_reach_the_same_verdict_on_every_case_of_the_ladder() {
    let mut allowed = Vec::new();
    for case in cases() {
        let turn = as_a_turn(&case).await;
        let routine = as_a_routine(&case).await;
        assert_eq!(turn, routine, "{}", case.name);
        let (approval, error) = expected(case.name);
        let errors: Vec<String> = error
            .map(|why| format!("stored approval refused: {why}"))
            .into_iter()
            .collect();
        assert_eq!(
            (turn.approval, turn.errors),
            (approval, errors),
            "{}",
            case.name
        );
        if turn.allowed {
            allowed.push(case.name);
        }
        assert_eq!(turn.runs, usize::from(turn.allowed), "{}", case.name);
    }
    // A yes used before is let through no second time: its call may have run already.
    assert_eq!(allowed, vec!["a yes in time"], "only a yes that holds runs");
}
