//! A routine hosted beside a real hub: its question is stored, shown and answered with
//! every other question, expired by the hub's one expirer, and a call cut off by the end
//! of the process is closed as `effect_uncertain` at the next start, never run again.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use common::{Lamp, catalog, def};
use jiff::Timestamp;
use jiff::tz::TimeZone;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tau_core::{AuditEvent, EventBus, RecordedEvents, approval::DurableQuestions};
use tau_hub::{
    Hub, HubOptions, OpenError, Opened, Reply, RoutinePort, SessionEvent, SessionFactory,
};
use tau_protocol::{ChannelEvent, DecidedBy, SessionId};
use tau_reflex::{
    AskChannel, Engine, EngineParts, EngineSettings, HostError, HubHost, PromptOutcome, PromptRun,
    PromptRunner, RoutineStore, SystemClock,
};
use tau_state::{ApprovalState, RecordedAnswer, StateDb};
use tokio_util::sync::CancellationToken;

/// Sessions no turn is run in here: only routines' fixed calls are.
struct NoTurns {
    audit: EventBus,
    recorded: RecordedEvents,
}

#[async_trait]
impl SessionFactory for NoTurns {
    fn events(&self, _session: &SessionId) -> EventBus {
        self.audit.clone()
    }

    fn recorded_answers(&self) -> Result<Vec<RecordedAnswer>, OpenError> {
        Ok(self
            .recorded
            .events()
            .into_iter()
            .filter_map(AuditEvent::into_recorded_answer)
            .collect())
    }

    async fn open(
        &self,
        _session: &SessionId,
        _durable: DurableQuestions,
        _events: EventBus,
    ) -> Result<Opened, OpenError> {
        Err(OpenError::Locked("no turns here".into()))
    }
}

struct NoPrompts;

#[async_trait]
impl PromptRunner for NoPrompts {
    async fn run_prompt(&self, _run: PromptRun) -> Result<PromptOutcome, HostError> {
        Err(HostError::NoPrompt)
    }
}

/// One `tau serve` over a home: its hub, its engine, and the audit log they share.
struct Serve {
    dir: tempfile::TempDir,
    audit: EventBus,
    recorded: RecordedEvents,
}

impl Serve {
    fn new() -> Self {
        let audit = EventBus::new();
        Self {
            dir: tempfile::tempdir().unwrap(),
            recorded: RecordedEvents::subscribed_to(&audit),
            audit,
        }
    }

    fn store(&self) -> StateDb {
        StateDb::open(&self.dir.path().join("state.db")).unwrap()
    }

    /// A hub on the home, started, whose questions wait up to `timeout`.
    async fn hub(&self, timeout: Duration) -> Hub {
        let factory = NoTurns {
            audit: self.audit.clone(),
            recorded: self.recorded.clone(),
        };
        let hub = Hub::open(
            self.store(),
            Arc::new(factory),
            HubOptions {
                remote_timeout: timeout,
                audit: self.audit.clone(),
                language: tau_core::Language::En,
                passkey_step: tau_hub::PasskeyStep::default(),
                people: tau_hub::HubPeople::default(),
            },
        );
        hub.start().await.unwrap();
        hub
    }

    /// `porch` switching the lamp off, made in a conversation with "on" and edited since
    /// (so not exempt: asked), firing every second and asking on the web.
    fn porch(&self) {
        let routines = RoutineStore::new(self.store().routines());
        let approved = def(json!({"name": "porch", "every": "1s", "tool": "lamp",
                                  "arguments": {"state": "on"}, "ask": "web"}));
        routines
            .create(&approved, &approved.content_hash(), None, Timestamp::now())
            .unwrap();
        let mut edited = approved.clone();
        edited.arguments = Some(json!({"state": "off"}).as_object().unwrap().clone());
        assert!(routines.replace_definition(&edited).unwrap());
    }

    /// The engine hosted by `hub`, running until `stop`.
    fn engine(&self, hub: &Hub, lamp: Arc<Lamp>, timeout: Duration) -> Engine {
        let host = HubHost::new(
            Arc::new(hub.clone()) as Arc<dyn RoutinePort>,
            Arc::new(NoPrompts),
            timeout,
            vec![AskChannel::Web],
        );
        let settings = EngineSettings {
            ask_timeout: timeout,
            // A refused run is not tried again within the test.
            backoff_base: Duration::from_secs(3600),
            ..EngineSettings::default()
        };
        Engine::new(EngineParts {
            config: Vec::new(),
            store: Arc::new(RoutineStore::new(self.store().routines())),
            catalog: Arc::new(catalog(lamp)),
            events: self.audit.clone(),
            host: Arc::new(host),
            zone: TimeZone::UTC,
            clock: Arc::new(SystemClock),
            env: Arc::new(|_: &str| None),
            mqtt: None,
            settings,
            people: tau_core::Household::default(),
        })
        .unwrap()
    }

    /// The `routine_run` lines so far, as (outcome, detail).
    fn runs(&self) -> Vec<(String, Option<String>)> {
        self.recorded
            .events()
            .into_iter()
            .filter_map(|e| match e {
                AuditEvent::RoutineRun {
                    outcome, detail, ..
                } => Some((outcome.as_str().to_owned(), detail)),
                _ => None,
            })
            .collect()
    }

    /// The audit lines of `kind` (their `type`), as JSON.
    fn lines(&self, kind: &str) -> Vec<Value> {
        self.recorded
            .events()
            .into_iter()
            .map(|e| serde_json::to_value(e).unwrap())
            .filter(|v| v["type"] == kind)
            .collect()
    }

    async fn first_run(&self) -> (String, Option<String>) {
        for _ in 0..1000 {
            if let Some(run) = self.runs().into_iter().next() {
                return run;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the routine never ran");
    }
}

fn lamp() -> Arc<Lamp> {
    Arc::new(Lamp::new(Arc::new(SystemClock)))
}

/// The next question shown on the web.
async fn next_question(web: &mut tau_hub::ChannelEvents) -> tau_protocol::ApprovalId {
    loop {
        if let SessionEvent::Turn(ChannelEvent::ApprovalRequested(question)) =
            web.recv().await.unwrap().event
        {
            return question.approval_id;
        }
    }
}

/// Runs `engine` until `stop` is cancelled.
fn run(engine: Engine, stop: &CancellationToken) -> tokio::task::JoinHandle<()> {
    let stop = stop.clone();
    tokio::spawn(async move { engine.run(stop).await })
}

#[tokio::test]
async fn a_routine_s_question_nobody_answers_is_expired_by_the_hub_and_runs_nothing() {
    let serve = Serve::new();
    serve.porch();
    let timeout = Duration::from_millis(400);
    let hub = serve.hub(timeout).await;
    let mut web = hub.channel_events("web");
    let lamp = lamp();
    let stop = CancellationToken::new();
    let task = run(serve.engine(&hub, Arc::clone(&lamp), timeout), &stop);
    let ran = serve.first_run().await;
    stop.cancel();
    task.await.unwrap();

    assert_eq!(
        ran,
        (
            "refused".to_owned(),
            Some(r#"timed out, decided by {"kind":"timeout"}"#.to_owned())
        )
    );
    assert_eq!(lamp.count(), 0);
    let rows = serve.store().approvals().approvals(None).unwrap();
    assert_eq!(
        (rows.len(), rows[0].state, rows[0].decided_by.clone()),
        (1, ApprovalState::Expired, Some(DecidedBy::Timeout))
    );
    // Shown in the routine's conversation on the web, then closed there by the expirer.
    let mut seen = Vec::new();
    while let Ok(Ok(event)) = tokio::time::timeout(Duration::from_millis(50), web.recv()).await {
        assert_eq!(
            event.conversation.key,
            tau_state::routine_key("porch", None)
        );
        match event.event {
            SessionEvent::Turn(ChannelEvent::ApprovalRequested(question)) => {
                seen.push(format!("asked {}", question.card.notes[0].text));
            }
            SessionEvent::Turn(ChannelEvent::ApprovalDecided {
                ruling:
                    tau_protocol::Ruling {
                        decision,
                        decided_by,
                    },
                ..
            }) => seen.push(format!("closed {decision:?} {decided_by:?}")),
            _ => {}
        }
    }
    assert_eq!(
        seen,
        vec![
            "asked porch · every 1s".to_owned(),
            "closed Timeout Timeout".to_owned()
        ]
    );
    // One `approval` line: the expirer's.
    let approvals = serve.lines("approval");
    assert_eq!(approvals.len(), 1, "{approvals:?}");
    assert_eq!(approvals[0]["decided_by"], json!({"kind": "timeout"}));
    hub.shutdown().await;
}

#[tokio::test]
async fn a_yes_on_the_routine_s_channel_runs_its_call_once_and_records_its_outcome() {
    let serve = Serve::new();
    serve.porch();
    let timeout = Duration::from_secs(3600);
    let hub = serve.hub(timeout).await;
    let mut web = hub.channel_events("web");
    let answering = {
        let port = hub.port("web");
        tokio::spawn(async move {
            let id = next_question(&mut web).await;
            port.answer(Some("ada".into()), &id, Reply::Approve)
                .await
                .unwrap()
        })
    };
    let lamp = lamp();
    let stop = CancellationToken::new();
    let task = run(serve.engine(&hub, Arc::clone(&lamp), timeout), &stop);
    let ran = serve.first_run().await;
    stop.cancel();
    task.await.unwrap();
    assert!(matches!(
        answering.await.unwrap(),
        tau_state::Answered::Decided(_)
    ));

    assert_eq!(ran, ("success".to_owned(), Some("lamp off".to_owned())));
    assert_eq!(lamp.count(), 1);
    let rows = serve.store().approvals().approvals(None).unwrap();
    let row = &rows[0];
    assert_eq!(
        (
            row.state,
            row.consumed_at.is_some(),
            row.outcome.is_some(),
            row.arguments.as_str()
        ),
        (ApprovalState::Approved, true, true, r#"{"state":"off"}"#),
        "consumed once, its outcome recorded"
    );
    let calls = serve.lines("tool_call");
    assert_eq!(
        (&calls[0]["status"], &calls[0]["decided_by"]),
        (
            &json!("success"),
            &json!({"kind": "person", "channel": "web", "user": "ada"})
        )
    );
    // One question asked and one answer recorded, however many parts saw them.
    assert_eq!(serve.lines("approval_requested").len(), 1);
    assert_eq!(serve.lines("approval").len(), 1);
    hub.shutdown().await;
}

#[tokio::test]
async fn a_routine_s_call_cut_off_by_the_end_of_tau_is_uncertain_at_the_next_start() {
    let serve = Serve::new();
    serve.porch();
    let timeout = Duration::from_secs(3600);
    let hub = serve.hub(timeout).await;
    let mut web = hub.channel_events("web");
    let port = hub.port("web");
    // The lamp never returns: tau ends while it runs.
    let mut slow = Lamp::new(Arc::new(SystemClock));
    slow.delay = Duration::from_secs(3600);
    let lamp = Arc::new(slow);
    let stop = CancellationToken::new();
    let task = run(serve.engine(&hub, Arc::clone(&lamp), timeout), &stop);
    let id = next_question(&mut web).await;
    port.answer(None, &id, Reply::Approve).await.unwrap();
    for _ in 0..500 {
        if lamp.count() == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(lamp.count(), 1);
    // tau is killed here: the run never returns (the lamp holds it), and the next tau
    // starts on the same home.
    task.abort();
    drop(hub);

    let again = serve.hub(timeout).await;
    let row = serve.store().approvals().approval(&id).unwrap().unwrap();
    assert_eq!(
        (row.consumed_at.is_some(), row.outcome),
        (true, Some(tau_state::CallOutcome::EffectUncertain))
    );
    let uncertain = serve.lines("effect_uncertain");
    assert_eq!(uncertain.len(), 1, "{uncertain:?}");
    assert_eq!(uncertain[0]["approval_id"], json!(id.as_str()));
    assert_eq!(lamp.count(), 1, "never run again");
    again.shutdown().await;
}
