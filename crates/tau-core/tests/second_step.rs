//! The second step of a lock-class call: a card that asks for one is approved only by an
//! answer that carries the device's name or the number the gate drew for that question,
//! never by a bare yes, whether the question waits in memory or is stored.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{House, asked};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tau_core::approval::{Answer, DurableQuestions, ScriptedApprover, TierGate, answer_durable};
use tau_core::{AuditEvent, ErrorSite, EventBus, RecordedEvents, ToolCatalog};
use tau_protocol::{Approval, CallCard, ConfirmStep, DecidedBy, Decision, SessionId};
use tau_state::{Answered, ApprovalState, StateDb};

/// The house, with `lights` asking for the second step of the device `garage-door`.
fn catalog() -> ToolCatalog {
    let mut catalog = House::new().catalog();
    catalog.add_card_writer(Arc::new(|tool: &str, _: &Value, card: &mut CallCard| {
        if tool == "lights" {
            card.headline = Some("OPEN · Garage door (garage) — a lock-class device".into());
            // A writer cannot choose the number: the gate draws it.
            card.confirm = Some(ConfirmStep {
                word: "garage-door".into(),
                code: "11".into(),
            });
        }
    }));
    catalog
}

fn person() -> DecidedBy {
    DecidedBy::person("scripted")
}

/// Answers with what `answer` makes of the question's second step, and keeps the step.
struct Reading {
    answer: Box<dyn Fn(&ConfirmStep) -> Answer + Send + Sync>,
    seen: Mutex<Option<ConfirmStep>>,
}

#[async_trait::async_trait]
impl tau_core::Approver for Reading {
    fn name(&self) -> &str {
        "scripted"
    }
    async fn decide(
        &self,
        request: tau_protocol::ApprovalQuestion,
    ) -> Result<Answer, tau_core::ApproverError> {
        let step = request.card.confirm.clone().unwrap();
        *self.seen.lock().unwrap() = Some(step.clone());
        Ok((self.answer)(&step))
    }
}

/// The gate's check of one call answered with `answer`, the step it asked for, and the
/// events it emitted.
async fn asked_with(
    answer: impl Fn(&ConfirmStep) -> Answer + Send + Sync + 'static,
) -> (tau_protocol::CallDecision, ConfirmStep, Vec<AuditEvent>) {
    let bus = EventBus::new();
    let events = RecordedEvents::subscribed_to(&bus);
    let approver = Arc::new(Reading {
        answer: Box::new(answer),
        seen: Mutex::new(None),
    });
    let gate = TierGate::new(Arc::new(catalog()), Arc::clone(&approver) as _, bus);
    let check = gate.check("lights", &json!({"room": "garage"}), "t1").await;
    let step = approver.seen.lock().unwrap().clone().unwrap();
    (check, step, events.events())
}

#[tokio::test(flavor = "current_thread")]
async fn the_gate_draws_a_fresh_two_digit_number_for_every_question() {
    let approver = ScriptedApprover::new([Decision::Rejected; 40]);
    let gate = TierGate::new(
        Arc::new(catalog()),
        Arc::new(approver.clone()),
        EventBus::new(),
    );
    for n in 0..40 {
        gate.check("lights", &json!({"room": "garage"}), &format!("t{n}"))
            .await;
    }
    let codes: BTreeSet<String> = approver
        .requests()
        .into_iter()
        .map(|request| request.card.confirm.unwrap().code)
        .collect();
    assert!(
        codes
            .iter()
            .all(|code| code.len() == 2 && code.bytes().all(|b| b.is_ascii_digit())),
        "{codes:?}"
    );
    assert!(codes.len() > 5, "the numbers do not vary: {codes:?}");
}

#[tokio::test(flavor = "current_thread")]
async fn the_name_or_the_drawn_number_approves() {
    for typed in [
        |step: &ConfirmStep| step.word.clone(),
        |step: &ConfirmStep| step.code.clone(),
    ] {
        let (check, _, _) =
            asked_with(move |step| Answer::approved_by("scripted").confirmed_with(typed(step)))
                .await;
        assert!(check.allowed(), "{check:?}");
        assert_eq!(
            (check.approval(), check.decided_by()),
            (Approval::Approved, person())
        );
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_yes_without_the_step_or_with_a_wrong_one_is_a_failed_approver() {
    let wrong = [
        None,
        Some("y".to_owned()),
        Some("yes".to_owned()),
        Some("11".to_owned()),
        Some("garage".to_owned()),
        Some(String::new()),
    ];
    for typed in wrong {
        let sent = typed.clone();
        let (check, step, events) = asked_with(move |_| {
            let answer = Answer::approved_by("scripted");
            match &sent {
                Some(text) => answer.confirmed_with(text.clone()),
                None => answer,
            }
        })
        .await;
        if typed.as_deref() == Some(step.code.as_str()) {
            continue; // the writer's 11 was drawn again: then it is the right number
        }
        assert!(!check.allowed(), "{typed:?} approved");
        assert_eq!(
            (check.approval(), check.decided_by()),
            (Approval::Failed, DecidedBy::ApproverFailed)
        );
        assert!(
            events.contains(&AuditEvent::error(
                ErrorSite::Approver,
                "approver 'scripted' approved without the second step the question asks for; the call was refused",
                Some("lights"),
                Some("t1"),
            )),
            "{events:?}"
        );
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_stored_question_stays_open_until_a_yes_carries_the_step() {
    let dir = tempfile::tempdir().unwrap();
    let store = StateDb::open(&dir.path().join("state.db")).unwrap();
    let bus = EventBus::new();
    let gate = TierGate::new(
        Arc::new(catalog()),
        Arc::new(ScriptedApprover::new([])),
        bus.clone(),
    )
    .with_durable(DurableQuestions {
        store: store.approvals(),
        session: SessionId::parse("web-1").unwrap(),
        channel: "web".into(),
        timeout: Duration::from_secs(60),
    });
    let approval_id = asked(&gate.check("lights", &json!({"room": "garage"}), "t1").await);
    let row = store.approvals().approval(&approval_id).unwrap().unwrap();
    let step = row.card.confirm.clone().unwrap();
    assert_eq!(step.word, "garage-door");
    assert_eq!(step.code.len(), 2);
    let web = DecidedBy::person("web");
    let answer = |confirmation: Option<&str>| {
        answer_durable(
            &store.approvals(),
            &bus,
            &approval_id,
            ApprovalState::Approved,
            &web,
            confirmation,
        )
        .unwrap()
    };
    // Not shown yet (the turn's state is not saved): neither a bare yes nor the step
    // answers it, and no "step missing" names it either.
    for early in [None, Some(step.code.as_str())] {
        assert!(
            matches!(answer(early), (Answered::NotFound, None)),
            "{early:?}"
        );
    }
    gate.announce_stored(true);
    for bare in [
        None,
        Some("y"),
        Some("yes"),
        Some("e"),
        Some("evet"),
        Some("garage"),
    ] {
        let (answered, closing) = answer(bare);
        assert!(
            matches!(answered, Answered::StepMissing(_)),
            "{bare:?}: {answered:?}"
        );
        assert_eq!(closing, None);
        assert_eq!(
            store
                .approvals()
                .approval(&approval_id)
                .unwrap()
                .unwrap()
                .state,
            ApprovalState::Pending
        );
    }
    let (answered, closing) = answer(Some(&step.code));
    let Answered::Decided(decided) = answered else {
        panic!("not decided");
    };
    assert_eq!(decided.state, ApprovalState::Approved);
    assert!(closing.is_some());
    // A rejection never needs the step.
    let second = asked(&gate.check("lights", &json!({"room": "garage"}), "t2").await);
    gate.announce_stored(true);
    let (answered, _) = answer_durable(
        &store.approvals(),
        &bus,
        &second,
        ApprovalState::Rejected,
        &web,
        None,
    )
    .unwrap();
    assert!(matches!(answered, Answered::Decided(row) if row.state == ApprovalState::Rejected));
}
