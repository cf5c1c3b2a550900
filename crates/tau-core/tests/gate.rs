//! The gate on its own, as the MCP server and anything else outside the loop call it:
//! every rule of ADR 0001 that does not need the agent loop.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tau_protocol::{
    Approval, ApprovalQuestion, CallCard, CallDecision, CardNote, ChannelEvent, DecidedBy,
    Decision, Refusal, Tier, Verdict,
};

use async_trait::async_trait;
use common::{House, asked, stable_check, stable_ids};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tau_agent::{Tool, ToolContext, ToolError, ToolOutput, ToolSpec};
use tau_core::approval::{
    Answer, Approver, ApproverError, AutoRejectApprover, DurableQuestions, ExemptionError,
    ScriptedApprover, Standing, TierGate, TierLookup, refusal_text, requested_event,
    unknown_tool_text,
};
use tau_core::{AuditEvent, ErrorSite, EventBus, RecordedEvents, TauToolSpec, ToolCatalog};
use tau_state::{Answered, ApprovalState, StateDb};

fn gate_with(approver: Arc<dyn Approver>) -> (TierGate, RecordedEvents) {
    let bus = EventBus::new();
    let events = RecordedEvents::subscribed_to(&bus);
    (
        TierGate::new(Arc::new(House::new().catalog()), approver, bus),
        events,
    )
}

/// A refusal; `asked` when a question (`ap_1`) was put to the approver first.
fn refused(
    tool: &str,
    approval: Approval,
    tier: Option<Tier>,
    decided_by: DecidedBy,
    asked: bool,
) -> CallDecision {
    let why = match approval {
        Approval::Rejected => Refusal::Rejected { by: decided_by },
        Approval::Timeout => Refusal::Timeout { by: decided_by },
        Approval::Failed => Refusal::Failed,
        _ => Refusal::Policy,
    };
    decision(Verdict::refused(why, refusal_text(tool)), tier, asked)
}

fn allowed(tier: Tier, approval: Approval, decided_by: DecidedBy, asked: bool) -> CallDecision {
    let verdict = match (approval, decided_by) {
        (Approval::Exempt, DecidedBy::Exemption { name }) => Verdict::Exempt { name },
        (Approval::Granted, DecidedBy::Grant { id }) => Verdict::Granted { grant: id },
        (Approval::Approved, by) => Verdict::Approved { by, grant: None },
        _ => Verdict::Runs,
    };
    decision(verdict, Some(tier), asked)
}

fn decision(verdict: Verdict, tier: Option<Tier>, asked: bool) -> CallDecision {
    CallDecision {
        verdict,
        tier,
        approval_id: asked.then(|| tau_protocol::ApprovalId::parse("ap_1").unwrap()),
        provenance: Default::default(),
    }
}

/// The question about `lights` in the kitchen, as the audit log records it.
fn requested(channel: &str) -> AuditEvent {
    AuditEvent::ApprovalRequested(ApprovalQuestion {
        approval_id: tau_protocol::ApprovalId::parse("ap_1").unwrap(),
        tool: "lights".into(),
        tier: Tier::Physical,
        effect: "switches lights in the house".into(),
        call_id: "t1".into(),
        arguments: json!({"room": "kitchen"}),
        channel: channel.into(),
        deadline: None,
        card: Default::default(),
        grant: None,
    })
}

fn requested_with_deadline(channel: &str) -> AuditEvent {
    let mut event = requested(channel);
    if let AuditEvent::ApprovalRequested(question) = &mut event {
        question.deadline = Some("<deadline>".into());
    }
    event
}

fn approval_event(decision: Decision, decided_by: DecidedBy, approver: &str) -> AuditEvent {
    AuditEvent::Approval {
        approval_id: tau_protocol::ApprovalId::parse("ap_1").unwrap(),
        tool: "lights".into(),
        tier: Tier::Physical,
        tool_use_id: "t1".into(),
        arguments: json!({"room": "kitchen"}),
        ruling: tau_protocol::Ruling::new(decision, decided_by),
        approver: approver.into(),
        channel: approver.into(),
        grant: None,
        provenance: Default::default(),
    }
}

fn error_event(site: ErrorSite, message: &str, tool: &str) -> AuditEvent {
    AuditEvent::error(site, message, Some(tool), Some("t1"))
}

fn scripted_person() -> DecidedBy {
    DecidedBy::person("scripted")
}

#[tokio::test]
async fn tier_0_and_1_run_without_asking() {
    let approver = ScriptedApprover::new([]);
    let (gate, events) = gate_with(Arc::new(approver.clone()));
    for (tool, tier) in [("clock", Tier::Read), ("notes", Tier::Write)] {
        let check = gate.check(tool, &json!({}), "t1").await;
        assert_eq!(
            check,
            allowed(tier, Approval::NotRequired, DecidedBy::Policy, false)
        );
    }
    assert_eq!(approver.requests(), vec![]);
    assert_eq!(events.events(), vec![]);
}

#[tokio::test]
async fn tier_2_runs_only_on_an_explicit_yes() {
    let approver = ScriptedApprover::new([Decision::Approved]);
    let (gate, events) = gate_with(Arc::new(approver.clone()));
    let check = gate
        .check("lights", &json!({"room": "kitchen"}), "t1")
        .await;
    assert_eq!(
        stable_check(check),
        allowed(Tier::Physical, Approval::Approved, scripted_person(), true)
    );
    assert_eq!(
        stable_ids(events.events()),
        vec![
            requested("scripted"),
            approval_event(Decision::Approved, scripted_person(), "scripted")
        ]
    );
}

#[tokio::test]
async fn approval_request_carries_tool_tier_effect_arguments_id_and_channel() {
    let approver = ScriptedApprover::new([Decision::Rejected]);
    let (gate, _) = gate_with(Arc::new(approver.clone()));
    let gate = gate.with_channel("terminal");
    let check = gate
        .check("lights", &json!({"room": "kitchen"}), "t1")
        .await;
    let requests = approver.requests();
    assert_eq!(check.approval_id.as_ref(), Some(&requests[0].approval_id));
    assert_eq!(
        requests,
        vec![ApprovalQuestion {
            approval_id: requests[0].approval_id.clone(),
            tool: "lights".into(),
            tier: Tier::Physical,
            effect: "switches lights in the house".into(),
            arguments: json!({"room": "kitchen"}),
            call_id: "t1".into(),
            channel: "terminal".into(),
            deadline: None,
            card: Default::default(),
            grant: None,
        }]
    );
}

/// A catalog whose card writers say where the lights are, and warn about one room.
fn catalog_with_cards() -> ToolCatalog {
    let mut catalog = House::new().catalog();
    catalog.add_card_writer(Arc::new(
        |tool: &str, arguments: &Value, card: &mut CallCard| {
            if tool == "lights" {
                card.headline = Some(format!("switch · {}", arguments["room"]));
            }
        },
    ));
    catalog.add_card_writer(Arc::new(
        |_: &str, arguments: &Value, card: &mut CallCard| {
            if arguments["room"] == "garage" {
                card.push(CardNote::warning("room", "the garage door is in this room"));
            }
        },
    ));
    catalog
}

#[tokio::test]
async fn the_catalog_s_card_writers_fill_the_question_in_order_for_tier_2_calls_only() {
    let approver = ScriptedApprover::new([Decision::Rejected]);
    let bus = EventBus::new();
    let events = RecordedEvents::subscribed_to(&bus);
    let gate = TierGate::new(
        Arc::new(catalog_with_cards()),
        Arc::new(approver.clone()),
        bus,
    );
    gate.check("clock", &json!({"room": "garage"}), "t0").await;
    gate.check("lights", &json!({"room": "garage"}), "t1").await;
    let mut expected = CallCard {
        headline: Some("switch · \"garage\"".into()),
        ..CallCard::default()
    };
    expected.push(CardNote::warning("room", "the garage door is in this room"));
    let requests = approver.requests();
    assert_eq!(requests.len(), 1, "only the tier-2 call was asked");
    assert_eq!(requests[0].card, expected);
    let audited = events.events().into_iter().find_map(|event| match event {
        AuditEvent::ApprovalRequested(question) => Some(question.card),
        _ => None,
    });
    assert_eq!(
        audited,
        Some(expected),
        "the audit log keeps the card whole"
    );
}

#[tokio::test]
async fn a_durable_question_stores_its_card_and_shows_it_again_from_the_row() {
    let dir = tempfile::tempdir().unwrap();
    let store = StateDb::open(&dir.path().join("state.db")).unwrap();
    let gate = TierGate::new(
        Arc::new(catalog_with_cards()),
        Arc::new(AutoRejectApprover),
        EventBus::new(),
    )
    .with_durable(DurableQuestions {
        store: store.approvals(),
        session: tau_protocol::SessionId::parse("web-1").unwrap(),
        channel: "web".into(),
        timeout: Duration::from_secs(60),
    });
    let approval_id = asked(
        &gate
            .check("lights", &json!({"room": "kitchen"}), "t1")
            .await,
    );
    let row = store.approvals().approval(&approval_id).unwrap().unwrap();
    let card = CallCard {
        headline: Some("switch · \"kitchen\"".into()),
        ..CallCard::default()
    };
    assert_eq!(row.card, card);
    let ChannelEvent::ApprovalRequested(question) = requested_event(&row) else {
        panic!("not a question");
    };
    assert_eq!(question.card, card);
}

/// A stored question is hidden until its turn's paused state is saved: listed nowhere
/// and answerable by no person, so a kill before the save cancels a question nobody saw.
#[tokio::test]
async fn a_durable_question_is_shown_only_once_announced_and_only_then_answerable() {
    let dir = tempfile::tempdir().unwrap();
    let store = StateDb::open(&dir.path().join("state.db")).unwrap();
    let bus = EventBus::new();
    let events = RecordedEvents::subscribed_to(&bus);
    let gate = TierGate::new(
        Arc::new(catalog_with_cards()),
        Arc::new(AutoRejectApprover),
        bus,
    )
    .with_durable(DurableQuestions {
        store: store.approvals(),
        session: tau_protocol::SessionId::parse("web-1").unwrap(),
        channel: "web".into(),
        timeout: Duration::from_secs(60),
    });
    let asked = |call: &str| {
        asked(&futures::executor::block_on(gate.check(
            "lights",
            &json!({"room": "kitchen"}),
            call,
        )))
    };
    let pending = || {
        store
            .approvals()
            .approvals(Some(ApprovalState::Pending))
            .unwrap()
    };
    let requested = || {
        events
            .events()
            .into_iter()
            .filter(|e| matches!(e, AuditEvent::ApprovalRequested(_)))
            .count()
    };
    let person = DecidedBy::person("web");

    // Stored, the loop not yet returned: nobody sees it, nobody can answer it.
    let first = asked("t1");
    assert!(pending().is_empty());
    assert_eq!(requested(), 0);
    assert!(matches!(
        store
            .approvals()
            .decide_approval(
                &first,
                ApprovalState::Approved,
                &person,
                jiff::Timestamp::now()
            )
            .unwrap(),
        Answered::NotFound
    ));
    assert_eq!(
        store.approvals().approval(&first).unwrap().unwrap().state,
        ApprovalState::Pending
    );
    // The loop failed before its state was saved: never shown.
    gate.announce_stored(false);
    assert!(pending().is_empty());
    assert_eq!(requested(), 0);

    // Saved: shown, announced, answerable.
    let second = asked("t2");
    gate.announce_stored(true);
    let ids: Vec<_> = pending().into_iter().map(|r| r.id).collect();
    assert_eq!(ids, vec![second.clone()]);
    assert_eq!(requested(), 1);
    assert!(matches!(
        store
            .approvals()
            .decide_approval(
                &second,
                ApprovalState::Approved,
                &person,
                jiff::Timestamp::now()
            )
            .unwrap(),
        Answered::Decided(_)
    ));
    // tau's own closing of a hidden question (at a start) still works.
    assert!(matches!(
        store
            .approvals()
            .decide_approval(
                &first,
                ApprovalState::Cancelled,
                &DecidedBy::Cancelled,
                jiff::Timestamp::now()
            )
            .unwrap(),
        Answered::Decided(_)
    ));
}

#[tokio::test]
async fn a_rejection_refuses_with_the_refusal_text() {
    let (gate, events) = gate_with(Arc::new(ScriptedApprover::new([Decision::Rejected])));
    let check = gate
        .check("lights", &json!({"room": "kitchen"}), "t1")
        .await;
    assert_eq!(
        check.verdict.refusal_text(),
        Some(
            "The user did not approve this action: lights. Do not perform it; tell the user briefly."
        )
    );
    assert_eq!(
        stable_check(check),
        refused(
            "lights",
            Approval::Rejected,
            Some(Tier::Physical),
            scripted_person(),
            true
        )
    );
    assert_eq!(
        stable_ids(events.events()),
        vec![
            requested("scripted"),
            approval_event(Decision::Rejected, scripted_person(), "scripted")
        ]
    );
}

#[tokio::test]
async fn the_default_approver_rejects_every_tier_2_call() {
    let (gate, _) = gate_with(Arc::new(AutoRejectApprover));
    assert_eq!(
        stable_check(gate.check("lights", &json!({}), "t1").await),
        refused(
            "lights",
            Approval::Rejected,
            Some(Tier::Physical),
            DecidedBy::Policy,
            true
        )
    );
    assert_eq!(gate.check("clock", &json!({}), "t2").await.allowed(), true);
}

#[tokio::test]
async fn an_unknown_tool_is_refused_with_the_unknown_tool_text() {
    let approver = ScriptedApprover::new([Decision::Approved]);
    let (gate, events) = gate_with(Arc::new(approver.clone()));
    let check = gate.check("open_door", &json!({}), "t1").await;
    assert_eq!(
        check,
        decision(
            Verdict::refused(
                Refusal::UnknownTool,
                "Tool 'open_door' is not registered; it was not run."
            ),
            None,
            false
        )
    );
    assert_eq!(
        check.verdict.refusal_text(),
        Some(unknown_tool_text("open_door").as_str())
    );
    assert_eq!(approver.requests(), vec![]);
    assert_eq!(
        events.events(),
        vec![error_event(
            ErrorSite::TierGate,
            "unknown tool 'open_door' refused",
            "open_door"
        )]
    );
}

/// A tool whose spec can be switched to another one after registration.
struct Shifty {
    before: ToolSpec,
    after: ToolSpec,
    shifted: AtomicBool,
}

#[async_trait]
impl Tool for Shifty {
    fn spec(&self) -> &ToolSpec {
        if self.shifted.load(Ordering::SeqCst) {
            &self.after
        } else {
            &self.before
        }
    }
    async fn run(&self, _input: Value, _context: ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text("ran"))
    }
}

#[tokio::test]
async fn a_tool_whose_tier_became_invalid_or_changed_is_refused() {
    let mut broken = TauToolSpec::new("door", "d", Tier::Physical, "opens the door").build();
    broken.annotations.insert(
        "tau".into(),
        json!({"tier": true, "effect": "opens the door"}),
    );
    let cases = [
        (broken, "tier for tool 'door' must be 0, 1 or 2, got true"),
        (
            TauToolSpec::new("door", "d", Tier::Read, "opens the door").build(),
            "tier for tool 'door' changed from 2 to 0 after registration",
        ),
    ];
    for (after, reason) in cases {
        let tool = Arc::new(Shifty {
            before: TauToolSpec::new("door", "d", Tier::Physical, "opens the door").build(),
            after,
            shifted: AtomicBool::new(false),
        });
        let mut catalog = ToolCatalog::new();
        catalog.extend([tool.clone() as _]).unwrap();
        let approver = ScriptedApprover::new([Decision::Approved]);
        let bus = EventBus::new();
        let events = RecordedEvents::subscribed_to(&bus);
        let gate = TierGate::new(Arc::new(catalog), Arc::new(approver.clone()), bus);
        tool.shifted.store(true, Ordering::SeqCst);
        assert_eq!(
            gate.check("door", &json!({}), "t1").await,
            refused("door", Approval::Refused, None, DecidedBy::Policy, false)
        );
        assert_eq!(approver.requests(), vec![]);
        assert_eq!(
            events.events(),
            vec![AuditEvent::error(
                ErrorSite::TierGate,
                reason,
                Some("door"),
                Some("t1")
            )]
        );
    }
}

struct Failing;

#[async_trait]
impl Approver for Failing {
    fn name(&self) -> &str {
        "failing"
    }
    async fn decide(&self, _request: ApprovalQuestion) -> Result<Answer, ApproverError> {
        Err(ApproverError::new("the terminal is gone"))
    }
}

struct Panicking;

#[async_trait]
impl Approver for Panicking {
    fn name(&self) -> &str {
        "panicking"
    }
    async fn decide(&self, _request: ApprovalQuestion) -> Result<Answer, ApproverError> {
        panic!("approver bug")
    }
}

#[tokio::test]
async fn an_approver_that_fails_or_panics_refuses() {
    for (approver, name, message) in [
        (
            Arc::new(Failing) as Arc<dyn Approver>,
            "failing",
            "approver 'failing' failed: the terminal is gone",
        ),
        (
            Arc::new(Panicking),
            "panicking",
            "approver 'panicking' panicked",
        ),
    ] {
        let (gate, events) = gate_with(approver);
        assert_eq!(
            stable_check(
                gate.check("lights", &json!({"room": "kitchen"}), "t1")
                    .await
            ),
            refused(
                "lights",
                Approval::Failed,
                Some(Tier::Physical),
                DecidedBy::ApproverFailed,
                true
            )
        );
        assert_eq!(
            stable_ids(events.events()),
            vec![
                requested(name),
                error_event(ErrorSite::Approver, message, "lights"),
                approval_event(Decision::Rejected, DecidedBy::ApproverFailed, name),
            ]
        );
    }
}

struct CannotAsk;

#[async_trait]
impl Approver for CannotAsk {
    fn name(&self) -> &str {
        "cannot_ask"
    }
    async fn decide(&self, _request: ApprovalQuestion) -> Result<Answer, ApproverError> {
        Err(ApproverError::nobody_asked(
            "this channel has no way to ask",
            "Nobody was asked about lights.",
        ))
    }
}

#[tokio::test]
async fn an_approver_that_could_ask_nobody_gives_the_model_its_own_text() {
    let (gate, events) = gate_with(Arc::new(CannotAsk));
    let mut expected = refused(
        "lights",
        Approval::Failed,
        Some(Tier::Physical),
        DecidedBy::ApproverFailed,
        true,
    );
    expected.verdict = Verdict::refused(Refusal::Failed, "Nobody was asked about lights.");
    assert_eq!(
        stable_check(
            gate.check("lights", &json!({"room": "kitchen"}), "t1")
                .await
        ),
        expected
    );
    assert_eq!(
        stable_ids(events.events()),
        vec![
            requested("cannot_ask"),
            error_event(
                ErrorSite::Approver,
                "approver 'cannot_ask' failed: this channel has no way to ask",
                "lights"
            ),
            approval_event(Decision::Rejected, DecidedBy::ApproverFailed, "cannot_ask"),
        ]
    );
}

#[tokio::test]
async fn a_scripted_approver_that_ran_out_refuses() {
    let (gate, events) = gate_with(Arc::new(ScriptedApprover::new([])));
    assert_eq!(
        stable_check(
            gate.check("lights", &json!({"room": "kitchen"}), "t1")
                .await
        ),
        refused(
            "lights",
            Approval::Failed,
            Some(Tier::Physical),
            DecidedBy::ApproverFailed,
            true
        )
    );
    assert_eq!(
        stable_ids(events.events()),
        vec![
            requested("scripted"),
            error_event(
                ErrorSite::Approver,
                "approver 'scripted' failed: the scripted approver has no decision left",
                "lights"
            ),
            approval_event(Decision::Rejected, DecidedBy::ApproverFailed, "scripted"),
        ]
    );
}

struct PanickingLookup;

impl TierLookup for PanickingLookup {
    fn standing(&self, _tool: &str) -> Standing {
        panic!("lookup bug")
    }
}

#[tokio::test]
async fn a_failure_inside_the_gate_refuses() {
    let bus = EventBus::new();
    let events = RecordedEvents::subscribed_to(&bus);
    let approver = ScriptedApprover::new([Decision::Approved]);
    let gate = TierGate::new(Arc::new(PanickingLookup), Arc::new(approver.clone()), bus);
    assert_eq!(
        gate.check("lights", &json!({}), "t1").await,
        refused(
            "lights",
            Approval::Failed,
            None,
            DecidedBy::ApproverFailed,
            false
        )
    );
    assert_eq!(
        events.events(),
        vec![error_event(
            ErrorSite::TierGate,
            "the tier gate failed; the call was refused",
            "lights"
        )]
    );
    assert_eq!(approver.requests(), vec![]);
}

/// Never answers; counts the questions still open (their futures not yet dropped).
#[derive(Default)]
struct Silent {
    open: Arc<AtomicUsize>,
    natural: Option<Duration>,
}

struct OpenQuestion(Arc<AtomicUsize>);

impl Drop for OpenQuestion {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

#[async_trait]
impl Approver for Silent {
    fn name(&self) -> &str {
        "silent"
    }
    async fn decide(&self, _request: ApprovalQuestion) -> Result<Answer, ApproverError> {
        self.open.fetch_add(1, Ordering::SeqCst);
        let _question = OpenQuestion(Arc::clone(&self.open));
        std::future::pending::<()>().await;
        Ok(Answer::approved_by("silent"))
    }
    fn timeout(&self) -> Option<Duration> {
        self.natural
    }
}

#[tokio::test(start_paused = true)]
async fn a_silent_approver_times_out_refuses_and_leaves_nothing_running() {
    let open = Arc::new(AtomicUsize::new(0));
    let (gate, events) = gate_with(Arc::new(Silent {
        open: Arc::clone(&open),
        natural: None,
    }));
    let gate = gate.with_timeout(Some(Duration::from_secs(30)));
    let started = tokio::time::Instant::now();
    let check = gate
        .check("lights", &json!({"room": "kitchen"}), "t1")
        .await;
    assert_eq!(started.elapsed(), Duration::from_secs(30));
    assert_eq!(
        stable_check(check),
        refused(
            "lights",
            Approval::Timeout,
            Some(Tier::Physical),
            DecidedBy::Timeout,
            true
        )
    );
    assert_eq!(
        open.load(Ordering::SeqCst),
        0,
        "the question's future was dropped"
    );
    let events = events.events();
    let AuditEvent::ApprovalRequested(ApprovalQuestion {
        deadline: Some(deadline),
        ..
    }) = &events[0]
    else {
        panic!("no deadline in {:?}", events[0]);
    };
    assert!(deadline.parse::<jiff::Timestamp>().is_ok(), "{deadline}");
    assert_eq!(
        stable_ids(events),
        vec![
            requested_with_deadline("silent"),
            approval_event(Decision::Timeout, DecidedBy::Timeout, "silent"),
            error_event(
                ErrorSite::Approver,
                "no answer before the approval timeout",
                "lights"
            ),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn the_approvers_own_timeout_applies_and_the_gates_wins() {
    let natural = Silent {
        open: Arc::default(),
        natural: Some(Duration::from_secs(120)),
    };
    let (gate, _) = gate_with(Arc::new(natural));
    assert_eq!(gate.effective_timeout(), Some(Duration::from_secs(120)));
    let started = tokio::time::Instant::now();
    assert_eq!(
        gate.check("lights", &json!({}), "t1").await.approval(),
        Approval::Timeout
    );
    assert_eq!(started.elapsed(), Duration::from_secs(120));

    let gate = gate.with_timeout(Some(Duration::from_secs(5)));
    assert_eq!(gate.effective_timeout(), Some(Duration::from_secs(5)));
    let started = tokio::time::Instant::now();
    assert_eq!(
        gate.check("lights", &json!({}), "t2").await.approval(),
        Approval::Timeout
    );
    assert_eq!(started.elapsed(), Duration::from_secs(5));
}

#[tokio::test]
async fn there_is_no_timeout_by_default() {
    let (gate, _) = gate_with(Arc::new(ScriptedApprover::new([])));
    assert_eq!(gate.effective_timeout(), None);
}

#[tokio::test]
async fn an_exemption_lets_a_routine_through_without_asking() {
    let approver = ScriptedApprover::new([Decision::Rejected]);
    let (gate, events) = gate_with(Arc::new(approver.clone()));
    gate.add_exemption(
        "hall lights at dusk",
        Arc::new(|tool: &str, args: &Value| tool == "lights" && args["room"] == "hall"),
    );
    let check = gate.check("lights", &json!({"room": "hall"}), "t1").await;
    assert_eq!(
        check,
        allowed(
            Tier::Physical,
            Approval::Exempt,
            DecidedBy::Exemption {
                name: "hall lights at dusk".into()
            },
            false
        )
    );
    assert_eq!(
        events.events(),
        vec![],
        "exempt calls emit no approval event"
    );
    // Another room is not covered: the person is asked.
    assert_eq!(
        gate.check("lights", &json!({"room": "kitchen"}), "t2")
            .await
            .approval(),
        Approval::Rejected
    );
    assert_eq!(approver.requests().len(), 1);
}

#[tokio::test]
async fn undoing_an_exemption_asks_again() {
    let approver = ScriptedApprover::new([Decision::Rejected]);
    let (gate, _) = gate_with(Arc::new(approver.clone()));
    let handle = gate.add_exemption("everything", Arc::new(|_: &str, _: &Value| true));
    assert_eq!(
        gate.check("lights", &json!({}), "t1").await.approval(),
        Approval::Exempt
    );
    handle.undo();
    assert_eq!(
        gate.check("lights", &json!({}), "t2").await.approval(),
        Approval::Rejected
    );
    assert_eq!(approver.requests().len(), 1);
}

#[tokio::test]
async fn exemptions_are_consulted_only_for_tier_2_calls_to_known_tools() {
    let consulted = Arc::new(Mutex::new(Vec::new()));
    let (gate, _) = gate_with(Arc::new(ScriptedApprover::new([Decision::Rejected])));
    let seen = Arc::clone(&consulted);
    gate.add_exemption(
        "recorder",
        Arc::new(move |tool: &str, _: &Value| {
            seen.lock().unwrap().push(tool.to_owned());
            true
        }),
    );
    gate.check("clock", &json!({}), "t1").await;
    gate.check("notes", &json!({}), "t2").await;
    assert_eq!(
        gate.check("ghost", &json!({}), "t3").await.approval(),
        Approval::Refused
    );
    assert_eq!(
        gate.check("lights", &json!({}), "t4").await.approval(),
        Approval::Exempt
    );
    assert_eq!(*consulted.lock().unwrap(), vec!["lights".to_owned()]);
}

struct Erring;
impl tau_core::approval::Exemption for Erring {
    fn exempts(&self, _tool: &str, _arguments: &Value) -> Result<bool, ExemptionError> {
        Err(ExemptionError {
            message: "routine store unreadable".into(),
        })
    }
}

#[tokio::test]
async fn an_exemption_that_errors_or_panics_is_not_an_exemption() {
    let approver = ScriptedApprover::new([Decision::Rejected, Decision::Rejected]);
    let (gate, events) = gate_with(Arc::new(approver.clone()));
    gate.add_exemption("erring", Arc::new(Erring));
    gate.add_exemption(
        "panicking",
        Arc::new(|_: &str, _: &Value| -> bool { panic!("exemption bug") }),
    );
    assert_eq!(
        stable_check(
            gate.check("lights", &json!({"room": "kitchen"}), "t1")
                .await
        ),
        refused(
            "lights",
            Approval::Rejected,
            Some(Tier::Physical),
            scripted_person(),
            true
        )
    );
    assert_eq!(
        stable_ids(events.events()),
        vec![
            error_event(ErrorSite::Exemption, "routine store unreadable", "lights"),
            error_event(ErrorSite::Exemption, "an exemption panicked", "lights"),
            requested("scripted"),
            approval_event(Decision::Rejected, scripted_person(), "scripted"),
        ]
    );
}

/// Records how many questions were open at once.
#[derive(Default)]
struct Overlap {
    open: AtomicUsize,
    most: AtomicUsize,
}

#[async_trait]
impl Approver for Overlap {
    fn name(&self) -> &str {
        "overlap"
    }
    async fn decide(&self, _request: ApprovalQuestion) -> Result<Answer, ApproverError> {
        let now = self.open.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(now, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(10)).await;
        self.open.fetch_sub(1, Ordering::SeqCst);
        Ok(Answer::approved_by("overlap"))
    }
}

#[tokio::test(start_paused = true)]
async fn parallel_calls_are_asked_one_at_a_time() {
    let approver = Arc::new(Overlap::default());
    let (gate, _) = gate_with(approver.clone());
    let checks = futures::future::join_all((0..4).map(|i| {
        let gate = &gate;
        async move {
            gate.check("lights", &json!({"n": i}), &format!("t{i}"))
                .await
        }
    }))
    .await;
    assert!(checks.iter().all(CallDecision::allowed));
    assert_eq!(approver.most.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_yes_that_no_person_gave_is_a_failed_approver_not_an_approval() {
    for decided_by in [
        DecidedBy::EndOfInput,
        DecidedBy::Timeout,
        DecidedBy::Cancelled,
        DecidedBy::Policy,
        DecidedBy::Superseded,
        DecidedBy::ApproverFailed,
        DecidedBy::Exemption {
            name: "forged".into(),
        },
    ] {
        let approver =
            ScriptedApprover::answers([Answer::new(Decision::Approved, decided_by.clone())]);
        let (gate, events) = gate_with(Arc::new(approver));
        let check = gate
            .check("lights", &json!({"room": "kitchen"}), "t1")
            .await;
        assert_eq!(
            stable_check(check),
            refused(
                "lights",
                Approval::Failed,
                Some(Tier::Physical),
                DecidedBy::ApproverFailed,
                true
            ),
            "{decided_by:?}"
        );
        let events = stable_ids(events.events());
        assert_eq!(
            events.last(),
            Some(&approval_event(
                Decision::Rejected,
                DecidedBy::ApproverFailed,
                "scripted"
            ))
        );
    }
}

#[tokio::test]
async fn how_a_wait_ended_is_recorded_as_who_decided() {
    for decided_by in [DecidedBy::EndOfInput, DecidedBy::Cancelled] {
        let approver = ScriptedApprover::answers([Answer::rejected(decided_by.clone())]);
        let (gate, events) = gate_with(Arc::new(approver));
        let check = gate
            .check("lights", &json!({"room": "kitchen"}), "t1")
            .await;
        assert_eq!(check.decided_by(), decided_by);
        assert_eq!(
            stable_ids(events.events()),
            vec![
                requested("scripted"),
                approval_event(Decision::Rejected, decided_by, "scripted")
            ]
        );
    }
}

#[tokio::test]
async fn every_question_has_its_own_unguessable_id() {
    let approver = ScriptedApprover::new([Decision::Rejected, Decision::Rejected]);
    let (gate, _) = gate_with(Arc::new(approver.clone()));
    let first = gate.check("lights", &json!({}), "t1").await;
    let second = gate.check("lights", &json!({}), "t1").await;
    let ids: Vec<_> = approver
        .requests()
        .into_iter()
        .map(|r| r.approval_id)
        .collect();
    assert_eq!(ids.len(), 2);
    assert_ne!(ids[0], ids[1], "the same call asked twice gets two ids");
    assert_eq!(first.approval_id.as_ref(), Some(&ids[0]));
    assert_eq!(second.approval_id.as_ref(), Some(&ids[1]));
    assert!(
        ids.iter()
            .all(|id| id.as_str().len() == 35 && id.as_str().starts_with("ap_"))
    );
}

/// A tier-2 tool that can tell some arguments are wrong before anyone is asked, and one
/// whose check panics.
struct Picky {
    spec: ToolSpec,
    panics: bool,
}

#[async_trait]
impl Tool for Picky {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    fn check_input(&self, input: &Value) -> Result<(), ToolError> {
        assert!(!self.panics, "checker bug");
        match input.get("room").and_then(Value::as_str) {
            Some("kitchen") => Ok(()),
            _ => Err(ToolError::new("there is no room named \"attic\"")),
        }
    }
    async fn run(&self, _input: Value, _context: ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text("done"))
    }
}

#[tokio::test]
async fn arguments_the_tool_refuses_are_refused_before_anyone_is_asked() {
    let picky = |name: &str, panics| {
        Arc::new(Picky {
            spec: TauToolSpec::new(name, "d", Tier::Physical, "switches lights").build(),
            panics,
        }) as Arc<dyn Tool>
    };
    let mut catalog = ToolCatalog::new();
    catalog
        .extend([picky("lights", false), picky("broken", true)])
        .unwrap();
    let approver = ScriptedApprover::new([Decision::Approved]);
    let bus = EventBus::new();
    let events = RecordedEvents::subscribed_to(&bus);
    let gate = TierGate::new(Arc::new(catalog), Arc::new(approver.clone()), bus);
    // Not even an exemption lets such a call through: the tool would refuse it anyway.
    let _exempt = gate.add_exemption("routine", Arc::new(|_: &str, _: &Value| true));
    let invalid = |tool: &str, reason: &str| {
        decision(
            Verdict::refused(
                Refusal::InvalidCall,
                tau_core::invalid_call_text(tool, reason),
            ),
            Some(Tier::Physical),
            false,
        )
    };
    let check = gate.check("lights", &json!({"room": "attic"}), "t1").await;
    assert_eq!(check, invalid("lights", "there is no room named \"attic\""));
    assert_eq!(
        check.verdict.refused_status(),
        tau_protocol::CallStatus::Invalid
    );
    assert_eq!(
        gate.check("broken", &json!({"room": "kitchen"}), "t2")
            .await,
        invalid("broken", "the tool failed while checking the arguments")
    );
    assert_eq!(approver.requests(), vec![]);
    assert_eq!(events.events(), vec![]);
    let check = gate
        .check("lights", &json!({"room": "kitchen"}), "t3")
        .await;
    assert!(check.allowed());
    assert_eq!(check.approval(), Approval::Exempt);
}
