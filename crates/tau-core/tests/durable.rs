//! Durable approvals: in a hub conversation a tier-2 question is stored, the turn pauses,
//! and only a person's stored answer — checked again right before the call — lets the
//! call run, exactly once, with exactly the approved arguments, across restarts.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{House, Setup, calls, last_results, text, tool_use};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tau_agent::{AgentStop, Message, SessionRepository};
use tau_core::approval::{DurableQuestions, answer_durable};
use tau_core::{
    CardWriter, ChannelSink, EventBus, Resumed, SHOWN_FILES_UNCHECKED_TEXT, ScriptedApprover,
    ToolCatalog, refusal_text,
};
use tau_protocol::{ApprovalId, CallCard, ChannelEvent, DecidedBy, SessionId, ShownFile};
use tau_state::{Answered, ApprovalRow, ApprovalState, StateDb};

struct Hub {
    house: House,
    /// `state.db` in a folder of the test's own: the questions and the sessions.
    dir: tempfile::TempDir,
    store: StateDb,
    bus: EventBus,
    audit: tau_core::RecordedEvents,
}

impl Hub {
    fn new() -> Self {
        let bus = EventBus::new();
        let audit = tau_core::RecordedEvents::subscribed_to(&bus);
        let dir = tempfile::tempdir().unwrap();
        let store = StateDb::open(&dir.path().join("state.db")).unwrap();
        Self {
            house: House::new(),
            dir,
            store,
            bus,
            audit,
        }
    }

    /// Changes a stored row behind the gate's back, as someone with the database could.
    fn tamper(&self, id: &ApprovalId, set: &str) {
        tau_test_support::tamper_approval(&self.dir.path().join("state.db"), id.as_str(), set);
    }

    /// A conversation's agent over the shared store and sessions, as `tau serve` (re)builds
    /// it; `script` is what the model says from here on.
    async fn agent(&self, script: Vec<Message>) -> tau_core::TauAgent {
        self.agent_on(self.house.catalog(), script).await
    }

    /// [`Hub::agent`] over `catalog` (the house's tools and card writers of the test's).
    async fn agent_on(&self, catalog: ToolCatalog, script: Vec<Message>) -> tau_core::TauAgent {
        let mut setup = Setup::new(
            catalog,
            // Never asked: a durable gate stores questions instead.
            Arc::new(ScriptedApprover::new([])),
        );
        setup.session = Some((
            Arc::new(tau_core::StoredSessions::new(self.store.sessions()))
                as Arc<dyn SessionRepository>,
            SessionId::parse("web-1").unwrap(),
        ));
        setup.durable = Some(DurableQuestions {
            store: self.store.approvals(),
            session: SessionId::parse("web-1").unwrap(),
            channel: "web".into(),
            timeout: Duration::from_secs(1800),
        });
        let built = setup.build(script).await;
        // The audit log hears every conversation.
        built.agent.events().subscribe(Arc::new(self.bus.clone()));
        built.agent
    }

    fn answer(&self, id: &ApprovalId, to: ApprovalState, by: DecidedBy) -> Answered {
        #![allow(clippy::needless_pass_by_value)]
        answer_durable(&self.store.approvals(), &self.bus, id, to, &by, None)
            .unwrap()
            .0
    }

    fn row(&self, id: &ApprovalId) -> ApprovalRow {
        self.store.approvals().approval(id).unwrap().unwrap()
    }
}

fn lights_then(reply: &str) -> Vec<Message> {
    vec![
        calls(vec![tool_use("t1", "lights", json!({"room": "kitchen"}))]),
        text(reply),
    ]
}

fn events_of(receiver: &mut tokio::sync::mpsc::UnboundedReceiver<ChannelEvent>) -> Vec<Value> {
    let mut events = Vec::new();
    while let Ok(event) = receiver.try_recv() {
        events.push(serde_json::to_value(event).unwrap());
    }
    events
}

/// Asks, and returns the stored question's id.
async fn ask(agent: &mut tau_core::TauAgent) -> ApprovalId {
    let outcome = agent.stream("lights on", None).await.unwrap();
    assert_eq!(outcome.stop_reason, AgentStop::Interrupt);
    assert_eq!(outcome.pending_approvals.len(), 1);
    outcome.pending_approvals[0].clone()
}

#[tokio::test]
async fn a_tier_2_call_stores_its_question_and_the_turn_pauses() {
    let hub = Hub::new();
    let mut agent = hub.agent(lights_then("On.")).await;
    let (sink, mut receiver) = ChannelSink::channel();
    let outcome = agent.stream("lights on", Some(&sink)).await.unwrap();
    assert_eq!(outcome.stop_reason, AgentStop::Interrupt);
    let id = outcome.pending_approvals[0].clone();
    assert_eq!(agent.pending_approvals(), vec![id.clone()]);
    assert_eq!(hub.house.lights.runs(), 0, "nothing runs before an answer");
    let row = hub.row(&id);
    assert_eq!(
        (
            row.session.as_str(),
            row.call_id.as_str(),
            row.tool.as_str(),
            row.arguments.as_str(),
            row.state,
            row.channel.as_str()
        ),
        (
            "web-1",
            "t1",
            "lights",
            r#"{"room":"kitchen"}"#,
            ApprovalState::Pending,
            "web"
        )
    );
    assert_eq!(row.arguments_sha256.len(), 64);
    assert!(id.as_str().starts_with("ap_") && id.as_str().len() == 35);
    let events = events_of(&mut receiver);
    let asked: Vec<_> = events
        .iter()
        .filter(|e| e["type"] == "approval_requested")
        .collect();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0]["approval_id"], json!(id));
    assert_eq!(asked[0]["deadline"], json!(row.deadline.to_string()));
    assert_eq!(
        events.last().unwrap()["stop_reason"],
        json!("interrupt"),
        "{events:?}"
    );
    // A new prompt cannot go past a waiting question.
    let error = agent.stream("and now?", None).await.unwrap_err();
    assert!(error.to_string().contains(id.as_str()), "{error}");
}

#[tokio::test]
async fn an_approved_question_runs_the_call_once_and_the_turn_goes_on() {
    let hub = Hub::new();
    let mut agent = hub.agent(lights_then("The kitchen light is on.")).await;
    let id = ask(&mut agent).await;
    let person = DecidedBy::Person {
        channel: "web".into(),
        user: Some("owner".into()),
        person: None,
    };
    assert!(matches!(
        hub.answer(&id, ApprovalState::Approved, person.clone()),
        Answered::Decided(_)
    ));
    let (sink, mut receiver) = ChannelSink::channel();
    let outcome = agent.resume(&id, Some(&sink)).await.unwrap();
    assert_eq!(outcome.stop_reason, AgentStop::EndTurn);
    assert_eq!(hub.house.lights.inputs(), vec![json!({"room": "kitchen"})]);
    assert!(hub.row(&id).consumed_at.is_some());
    let finished: Vec<_> = events_of(&mut receiver)
        .into_iter()
        .filter(|e| e["type"] == "tool_call_finished")
        .collect();
    assert_eq!(finished.len(), 1);
    assert_eq!(
        (
            &finished[0]["status"],
            &finished[0]["approval"],
            &finished[0]["decided_by"]
        ),
        (
            &json!("success"),
            &json!("approved"),
            &json!({"kind": "person", "channel": "web", "user": "owner"})
        )
    );
    let audit: Vec<Value> = hub
        .audit
        .events()
        .into_iter()
        .map(|e| serde_json::to_value(e).unwrap())
        .filter(|e| e["type"] == "approval" || e["type"] == "tool_call")
        .collect();
    assert_eq!(
        audit[0]["decided_by"],
        json!({"kind": "person", "channel": "web", "user": "owner"})
    );
    assert_eq!(audit[1]["approval_id"], json!(id));
    assert_eq!(audit[1]["status"], json!("success"));
    // The same answer again changes nothing and resumes nothing.
    assert!(matches!(
        hub.answer(&id, ApprovalState::Approved, person),
        Answered::AlreadyDecided(_)
    ));
    assert!(agent.resume(&id, None).await.is_err());
    assert_eq!(hub.house.lights.runs(), 1);
}

#[tokio::test]
async fn a_rejected_question_refuses_with_the_refusal_text() {
    let hub = Hub::new();
    let mut agent = hub.agent(lights_then("I left it off.")).await;
    let id = ask(&mut agent).await;
    hub.answer(&id, ApprovalState::Rejected, DecidedBy::person("web"));
    let later = hub.answer(&id, ApprovalState::Approved, DecidedBy::person("web"));
    let Answered::AlreadyDecided(row) = later else {
        panic!("the first answer wins");
    };
    assert_eq!(row.state, ApprovalState::Rejected);
    agent.resume(&id, None).await.unwrap();
    assert_eq!(hub.house.lights.runs(), 0);
    assert_eq!(
        last_results(agent.messages()),
        vec![("t1".into(), "error".into(), refusal_text("lights"))]
    );
}

/// Each way a stored answer can be wrong when the call is about to run; none may run.
#[tokio::test]
async fn a_stored_answer_that_does_not_hold_any_more_refuses() {
    let zeros = format!("arguments_sha256 = '{}'", "0".repeat(64));
    let cases: Vec<(&str, &str)> = vec![
        ("the arguments differ from the approved ones", &zeros),
        (
            "the approval's deadline has passed",
            "deadline = '1970-01-01T00:00:00Z'",
        ),
        (
            "the stored approval was not given by a person",
            r#"decided_by = '{"kind":"policy"}'"#,
        ),
        ("the answer belongs to another call", "call_id = 't9'"),
        ("the answer belongs to another call", "session = 'web-2'"),
        (
            "the tool is no longer registered with the approved tier",
            "tier = 1",
        ),
        // The question's channel, and a yes given on it.
        (
            "the question was asked on another channel",
            "channel = 'telegram'",
        ),
        (
            "the stored approval was given on another channel",
            r#"decided_by = '{"kind":"person","channel":"telegram"}'"#,
        ),
    ];
    for (why, tamper) in cases {
        let hub = Hub::new();
        let mut agent = hub.agent(lights_then("Not done.")).await;
        let id = ask(&mut agent).await;
        hub.answer(&id, ApprovalState::Approved, DecidedBy::person("web"));
        hub.tamper(&id, tamper);
        agent.resume(&id, None).await.unwrap();
        assert_eq!(hub.house.lights.runs(), 0, "{why}");
        assert_eq!(
            last_results(agent.messages())[0].2,
            refusal_text("lights"),
            "{why}"
        );
        let errors: Vec<String> = hub
            .audit
            .events()
            .into_iter()
            .filter_map(|e| match e {
                tau_core::AuditEvent::Error { message, .. } => Some(message),
                _ => None,
            })
            .collect();
        assert_eq!(errors, vec![format!("stored approval refused: {why}")]);
    }
}

/// The call was let through (its row consumed) and tau stopped before the result was
/// stored: the turn, resumed by a fresh agent as after a restart, never runs it again;
/// the model reads that it may or may not have run, the channel sees a notice, the audit
/// log has one `effect_uncertain` line, and the row is closed for good.
#[tokio::test]
async fn a_call_cut_off_after_it_was_let_through_is_never_run_again() {
    let hub = Hub::new();
    let mut agent = hub.agent(lights_then("Unsure.")).await;
    let id = ask(&mut agent).await;
    hub.answer(&id, ApprovalState::Approved, DecidedBy::person("web"));
    // What `resume` does right before the tool starts, and then tau dies.
    assert!(
        hub.store
            .approvals()
            .consume_approval(&id, jiff::Timestamp::now())
            .unwrap()
    );
    drop(agent);

    let mut agent = hub.agent(vec![text("It may have run.")]).await;
    let (sink, mut receiver) = ChannelSink::channel();
    let outcome = agent.resume_stored(Some(&sink), None).await.unwrap();
    assert_eq!(outcome.stop_reason, AgentStop::EndTurn);
    assert_eq!(hub.house.lights.runs(), 0, "never run a second time");
    let uncertain = tau_core::approval::effect_uncertain_text("lights");
    assert_eq!(
        last_results(agent.messages()),
        vec![("t1".into(), "error".into(), uncertain.clone())]
    );
    let events = events_of(&mut receiver);
    let notices: Vec<_> = events.iter().filter(|e| e["type"] == "notice").collect();
    assert_eq!(
        notices,
        vec![&json!({
            "type": "notice", "kind": "effect_uncertain",
            "text": "tau stopped while lights was running: it may or may not have run. It was not run again."
        })]
    );
    let finished: Vec<_> = events
        .iter()
        .filter(|e| e["type"] == "tool_call_finished")
        .collect();
    assert_eq!(
        (&finished[0]["status"], &finished[0]["approval"]),
        (&json!("error"), &json!("approved")),
        "it may have run: never shown as refused"
    );
    let audit: Vec<Value> = hub
        .audit
        .events()
        .into_iter()
        .map(|e| serde_json::to_value(e).unwrap())
        .filter(|e| e["type"] == "effect_uncertain" || e["type"] == "tool_call")
        .collect();
    assert_eq!(audit.len(), 2, "{audit:#?}");
    assert_eq!(
        (
            &audit[0]["type"],
            &audit[0]["approval_id"],
            &audit[0]["tool"]
        ),
        (&json!("effect_uncertain"), &json!(id), &json!("lights"))
    );
    assert_eq!(
        (&audit[1]["status"], &audit[1]["result_summary"]),
        (&json!("error"), &json!(uncertain))
    );
    let row = hub.row(&id);
    assert_eq!(row.outcome, Some(tau_state::CallOutcome::EffectUncertain));
    assert!(
        hub.store
            .approvals()
            .dispatched_without_outcome()
            .unwrap()
            .is_empty()
    );
}

/// What a subscriber found in the store at the moment each question was announced.
struct SavedWhenAnnounced {
    store: StateDb,
    seen: std::sync::Mutex<Vec<(ApprovalId, bool, bool)>>,
}

impl tau_core::EventSubscriber for SavedWhenAnnounced {
    fn on_event(&self, event: &tau_core::AuditEvent) {
        let tau_core::AuditEvent::ApprovalRequested(question) = event else {
            return;
        };
        let id = question.approval_id.clone();
        let waits =
            tau_core::load_agent_state(&self.store.sessions(), &SessionId::parse("web-1").unwrap())
                .unwrap()
                .is_some_and(|state| {
                    state
                        .interrupt_state
                        .pending()
                        .iter()
                        .any(|i| tau_core::waits_on(i).as_ref() == Some(&id))
                });
        let stored = self.store.approvals().approval(&id).unwrap().is_some();
        self.seen.lock().unwrap().push((id, stored, waits));
    }
}

/// The turn's paused state is saved before its question is shown to anyone: a kill
/// between the two can never cancel a question a person saw.
#[tokio::test]
async fn a_question_is_announced_only_after_the_paused_turn_is_saved() {
    let hub = Hub::new();
    let watcher = Arc::new(SavedWhenAnnounced {
        store: hub.store.clone(),
        seen: std::sync::Mutex::default(),
    });
    hub.bus.subscribe(Arc::clone(&watcher) as _);
    let mut agent = hub.agent(lights_then("On.")).await;
    let (sink, mut receiver) = ChannelSink::channel();
    let outcome = agent.stream("lights on", Some(&sink)).await.unwrap();
    let id = outcome.pending_approvals[0].clone();
    assert_eq!(
        *watcher.seen.lock().unwrap(),
        vec![(id, true, true)],
        "(question, row stored, turn saved waiting on it) when it was announced"
    );
    let types: Vec<Value> = events_of(&mut receiver)
        .into_iter()
        .map(|e| e["type"].clone())
        .collect();
    assert_eq!(
        types[types.len() - 2..],
        [json!("approval_requested"), json!("turn_ended")],
        "announced before the turn says it paused: {types:?}"
    );
}

#[tokio::test]
async fn a_call_that_ran_is_recorded_as_finished() {
    let hub = Hub::new();
    let mut agent = hub.agent(lights_then("On.")).await;
    let id = ask(&mut agent).await;
    hub.answer(&id, ApprovalState::Approved, DecidedBy::person("web"));
    agent.resume(&id, None).await.unwrap();
    assert_eq!(hub.house.lights.runs(), 1);
    let row = hub.row(&id);
    assert_eq!(
        (row.consumed_at.is_some(), row.outcome),
        (true, Some(tau_state::CallOutcome::Finished))
    );
    assert!(
        hub.store
            .approvals()
            .dispatched_without_outcome()
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn an_expired_question_refuses_as_a_timeout() {
    let hub = Hub::new();
    let mut agent = hub.agent(lights_then("It expired.")).await;
    let id = ask(&mut agent).await;
    hub.answer(&id, ApprovalState::Expired, DecidedBy::Timeout);
    assert!(matches!(
        hub.answer(&id, ApprovalState::Approved, DecidedBy::person("web")),
        Answered::AlreadyDecided(_)
    ));
    let (sink, mut receiver) = ChannelSink::channel();
    agent.resume(&id, Some(&sink)).await.unwrap();
    assert_eq!(hub.house.lights.runs(), 0);
    let finished: Vec<_> = events_of(&mut receiver)
        .into_iter()
        .filter(|e| e["type"] == "tool_call_finished")
        .collect();
    assert_eq!(
        (&finished[0]["approval"], &finished[0]["decided_by"]),
        (&json!("timeout"), &json!({"kind": "timeout"}))
    );
}

#[tokio::test]
async fn a_superseded_question_closes_the_turn_without_asking_the_model() {
    let hub = Hub::new();
    let mut agent = hub
        .agent(vec![
            calls(vec![tool_use("t1", "lights", json!({"room": "kitchen"}))]),
            text("Sure, it is 10:00."),
        ])
        .await;
    let id = ask(&mut agent).await;
    hub.answer(&id, ApprovalState::Superseded, DecidedBy::Superseded);
    let (sink, mut receiver) = ChannelSink::channel();
    let closed = agent
        .close(&id, Some(&sink), tau_protocol::TurnStop::Superseded)
        .await
        .unwrap();
    assert_eq!(closed.model_calls, 0);
    let events = events_of(&mut receiver);
    assert_eq!(events.last().unwrap()["stop_reason"], json!("superseded"));
    assert!(
        !events.iter().any(|e| e["type"] == "notice"),
        "closing is not a turn limit: {events:?}"
    );
    assert_eq!(
        last_results(agent.messages()),
        vec![("t1".into(), "error".into(), refusal_text("lights"))]
    );
    // The newer message is answered.
    let outcome = agent.stream("what time is it?", None).await.unwrap();
    assert_eq!(outcome.stop_reason, AgentStop::EndTurn);
    assert_eq!(hub.house.lights.runs(), 0);
}

#[tokio::test]
async fn a_question_survives_a_restart_and_runs_once_after_it() {
    let hub = Hub::new();
    let id = {
        let mut before = hub.agent(lights_then("never said")).await;
        ask(&mut before).await
        // The process dies here: the agent is dropped with its question stored.
    };
    hub.answer(&id, ApprovalState::Approved, DecidedBy::person("web"));
    let mut after = hub.agent(vec![text("Done after the restart.")]).await;
    assert_eq!(after.pending_approvals(), vec![id.clone()]);
    let outcome = after.resume(&id, None).await.unwrap();
    assert_eq!(outcome.stop_reason, AgentStop::EndTurn);
    assert_eq!(hub.house.lights.inputs(), vec![json!({"room": "kitchen"})]);
    // A third process cannot run it again.
    let mut third = hub.agent(vec![text("x")]).await;
    assert!(third.pending_approvals().is_empty());
    assert!(third.resume(&id, None).await.is_err());
    assert_eq!(hub.house.lights.runs(), 1);
}

#[tokio::test]
async fn arguments_changed_in_the_session_store_while_down_are_refused() {
    let hub = Hub::new();
    let id = {
        let mut before = hub.agent(lights_then("never said")).await;
        ask(&mut before).await
    };
    hub.answer(&id, ApprovalState::Approved, DecidedBy::person("web"));
    // Someone with the database rewrites the paused call's arguments.
    let session = SessionId::parse("web-1").unwrap();
    let sessions = tau_core::StoredSessions::new(hub.store.sessions());
    let mut state = sessions.load_state(&session).unwrap().unwrap();
    let message = state.interrupt_state.tool_use_message.as_mut().unwrap();
    for block in &mut message.content {
        if let tau_agent::ContentBlock::ToolUse(tool_use) = block {
            tool_use.input = json!({"room": "garage"});
        }
    }
    sessions.save_state(&session, &state).unwrap();
    let mut after = hub.agent(vec![text("Not done.")]).await;
    after.resume(&id, None).await.unwrap();
    assert_eq!(hub.house.lights.runs(), 0);
    assert!(hub.audit.events().iter().any(|e| matches!(
        e,
        tau_core::AuditEvent::Error { message, .. }
            if message == "stored approval refused: the arguments differ from the approved ones"
    )));
}

#[tokio::test]
async fn a_forged_resume_for_a_question_nobody_answered_refuses() {
    let hub = Hub::new();
    let mut agent = hub.agent(lights_then("Not done.")).await;
    let id = ask(&mut agent).await;
    // Resumed while still pending (a bug, or someone forging the resume).
    agent.resume(&id, None).await.unwrap();
    assert_eq!(hub.house.lights.runs(), 0);
    assert_eq!(hub.row(&id).state, ApprovalState::Pending);
    // And a resume naming a question this turn does not wait on is an error.
    assert!(
        agent
            .resume(&ApprovalId::parse("ap_0000").unwrap(), None)
            .await
            .is_err()
    );
}

#[tokio::test]
async fn any_other_hooks_interrupt_is_still_refused_in_a_hub_conversation() {
    use tau_agent::{BeforeToolCallEvent, HookOrder, HookRegistry, SyncHook};
    struct Asker;
    impl tau_core::HookProvider for Asker {
        fn name(&self) -> &str {
            "asker"
        }
        fn register_hooks(&self, registry: &mut HookRegistry) -> Result<(), tau_agent::HookError> {
            registry.add(
                "asker",
                HookOrder::DEFAULT,
                SyncHook(|event: &mut BeforeToolCallEvent| {
                    event.interrupt("asker.confirm", json!({}))?;
                    Ok(())
                }),
            )
        }
    }
    let hub = Hub::new();
    let mut setup = Setup::new(hub.house.catalog(), Arc::new(ScriptedApprover::new([])));
    setup.hooks = vec![Arc::new(Asker)];
    setup.durable = Some(DurableQuestions {
        store: hub.store.approvals(),
        session: SessionId::parse("web-1").unwrap(),
        channel: "web".into(),
        timeout: Duration::from_secs(60),
    });
    let mut built = setup
        .build(vec![
            calls(vec![tool_use("t1", "clock", json!({}))]),
            text("It is late."),
        ])
        .await;
    let outcome = built.agent.stream("time?", None).await.unwrap();
    assert_eq!(outcome.stop_reason, AgentStop::EndTurn);
    assert!(outcome.pending_approvals.is_empty());
    assert!(hub.store.approvals().approvals(None).unwrap().is_empty());
}

#[tokio::test]
async fn two_tier_2_calls_of_one_message_are_asked_one_after_the_other() {
    let hub = Hub::new();
    let mut agent = hub
        .agent(vec![
            calls(vec![
                tool_use("t1", "lights", json!({"room": "kitchen"})),
                tool_use("t2", "lights", json!({"room": "garage"})),
            ]),
            text("Kitchen on, garage left off."),
        ])
        .await;
    let outcome = agent.stream("lights on", None).await.unwrap();
    assert_eq!(outcome.stop_reason, AgentStop::Interrupt);
    let [first] = outcome.pending_approvals.as_slice() else {
        panic!("one question at a time: {:?}", outcome.pending_approvals);
    };
    assert_eq!(hub.row(first).call_id, "t1");
    hub.answer(first, ApprovalState::Approved, DecidedBy::person("web"));
    let outcome = agent.resume_stored(None, None).await.unwrap();
    assert_eq!(outcome.stop_reason, AgentStop::Interrupt);
    let [second] = outcome.pending_approvals.as_slice() else {
        panic!("the second call asks next: {:?}", outcome.pending_approvals);
    };
    assert_eq!(hub.row(second).call_id, "t2");
    assert_eq!(hub.house.lights.runs(), 1, "the approved call ran already");
    hub.answer(second, ApprovalState::Rejected, DecidedBy::person("web"));
    let outcome = agent.resume_stored(None, None).await.unwrap();
    assert_eq!(outcome.stop_reason, AgentStop::EndTurn);
    assert_eq!(hub.house.lights.inputs(), vec![json!({"room": "kitchen"})]);
    let results = last_results(agent.messages());
    assert_eq!(
        results
            .iter()
            .map(|r| (r.0.as_str(), r.1.as_str()))
            .collect::<Vec<_>>(),
        vec![("t1", "success"), ("t2", "error")]
    );
    assert_eq!(results[1].2, refusal_text("lights"));
    assert!(agent.pending_approvals().is_empty());
    // Nothing left to resume.
    assert!(agent.resume_stored(None, None).await.is_err());
}

#[tokio::test]
async fn closing_every_stored_question_asks_the_model_nothing() {
    let hub = Hub::new();
    let mut agent = hub.agent(lights_then("never said")).await;
    let id = ask(&mut agent).await;
    hub.answer(&id, ApprovalState::Superseded, DecidedBy::Superseded);
    let closed = agent
        .resume_stored(None, Some(tau_protocol::TurnStop::Superseded))
        .await
        .unwrap();
    assert_eq!(closed.model_calls, 0);
    assert_eq!(hub.house.lights.runs(), 0);
    assert!(agent.pending_approvals().is_empty());
}

/// Shows a file on the card of every `lights` call; after a restart answers the stored
/// card with `resumed` and keeps the cards it was handed.
struct ShowsAFile {
    resumed: Result<Resumed, String>,
    handed: std::sync::Mutex<Vec<CallCard>>,
}

impl CardWriter for ShowsAFile {
    fn write(&self, _tool: &str, _arguments: &Value, card: &mut CallCard) {
        card.shown_files.push(ShownFile {
            path: "setup.sh".into(),
            sha256: Some("ab12".into()),
        });
    }

    fn resume(&self, _tool: &str, _arguments: &Value, card: &CallCard) -> Result<Resumed, String> {
        self.handed.lock().unwrap().push(card.clone());
        self.resumed.clone()
    }
}

/// The hashes a question showed come back from its stored card when the call runs after a
/// restart; when nothing holds the call to them, or a writer refuses, it does not run.
#[tokio::test]
async fn a_stored_card_that_showed_files_runs_only_when_the_call_is_held_to_them() {
    let cases = [
        (Ok(Resumed::HoldsShownFiles), None),
        (
            Ok(Resumed::Nothing),
            Some(SHOWN_FILES_UNCHECKED_TEXT.to_owned()),
        ),
        (
            Err("the sandbox changed".to_owned()),
            Some("the sandbox changed".to_owned()),
        ),
    ];
    for (resumed, refused) in cases {
        let hub = Hub::new();
        let writer = |resumed| {
            Arc::new(ShowsAFile {
                resumed,
                handed: std::sync::Mutex::default(),
            })
        };
        let id = {
            let mut catalog = hub.house.catalog();
            catalog.add_card_writer(writer(Ok(Resumed::Nothing)));
            let mut before = hub.agent_on(catalog, lights_then("never said")).await;
            ask(&mut before).await
        };
        assert_eq!(
            hub.row(&id).card.shown_files,
            vec![ShownFile {
                path: "setup.sh".into(),
                sha256: Some("ab12".into())
            }],
            "stored with the question"
        );
        hub.answer(&id, ApprovalState::Approved, DecidedBy::person("web"));
        // The restarted process: its writer knows nothing but what the row brings back.
        let after_writer = writer(resumed);
        let mut catalog = hub.house.catalog();
        catalog.add_card_writer(Arc::clone(&after_writer) as Arc<dyn CardWriter>);
        let mut after = hub.agent_on(catalog, vec![text("After.")]).await;
        after.resume(&id, None).await.unwrap();
        let handed = after_writer.handed.lock().unwrap().clone();
        assert_eq!(handed, vec![hub.row(&id).card], "{refused:?}");
        let Some(refused) = refused else {
            assert_eq!(hub.house.lights.runs(), 1);
            continue;
        };
        assert_eq!(hub.house.lights.runs(), 0, "{refused}");
        assert_eq!(last_results(after.messages())[0].2, refused);
        let errors: Vec<String> = hub
            .audit
            .events()
            .into_iter()
            .filter_map(|e| match e {
                tau_core::AuditEvent::Error { message, .. } => Some(message),
                _ => None,
            })
            .collect();
        assert_eq!(errors, vec![format!("stored approval refused: {refused}")]);
        // Refused for good: the approval was used.
        assert!(hub.row(&id).consumed_at.is_some());
    }
}
