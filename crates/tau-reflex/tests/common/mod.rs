//! A lamp to switch, a host to run routines in, and the engine assembled, for tau-reflex's
//! integration tests.
#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use jiff::Timestamp;
use jiff::tz::TimeZone;
use serde_json::{Value, json};
use tau_agent::{SharedTool, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};
use tau_core::approval::{answer_durable, expire_due};
use tau_core::{AuditEvent, EventBus, RecordedEvents, StoredAnswers, TauToolSpec, ToolCatalog};
use tau_protocol::{ApprovalId, DecidedBy, Tier};
use tau_reflex::{
    AskChannel, Clock, Engine, EngineParts, EngineSettings, HostError, PromptOutcome, PromptRun,
    PromptRunner, RoutineDef, RoutineHost, RoutineStore,
};
use tau_state::{ApprovalRow, ApprovalState, Approvals, StateDb};

/// A tier-2 lamp: records each call with the wall-clock time it ran at; can be slow or
/// broken.
pub struct Lamp {
    spec: ToolSpec,
    clock: Arc<dyn Clock>,
    pub calls: Mutex<Vec<(Timestamp, Value)>>,
    pub delay: Duration,
    pub broken: bool,
}

impl Lamp {
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        let spec = TauToolSpec::new(
            "lamp",
            "Switches the lamp",
            Tier::Physical,
            "switches the porch lamp",
        )
        .input_schema(json!({
            "type": "object",
            "properties": {"state": {"type": "string", "enum": ["on", "off"]}},
            "required": ["state"],
            "additionalProperties": false,
        }))
        .build();
        Self {
            spec,
            clock,
            calls: Mutex::default(),
            delay: Duration::ZERO,
            broken: false,
        }
    }

    pub fn times(&self) -> Vec<Timestamp> {
        self.calls.lock().unwrap().iter().map(|(t, _)| *t).collect()
    }

    pub fn count(&self) -> usize {
        self.calls.lock().unwrap().len()
    }
}

#[async_trait]
impl Tool for Lamp {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn run(&self, input: Value, _context: ToolContext) -> Result<ToolOutput, ToolError> {
        self.calls
            .lock()
            .unwrap()
            .push((self.clock.now(), input.clone()));
        if !self.delay.is_zero() {
            tokio::time::sleep(self.delay).await;
        }
        if self.broken {
            return Err(ToolError::new("the lamp does not answer"));
        }
        Ok(ToolOutput::text(format!(
            "lamp {}",
            input["state"].as_str().unwrap_or("?")
        )))
    }
}

/// A tier-0 clock, so the catalog has more than the lamp.
pub fn catalog(lamp: Arc<Lamp>) -> ToolCatalog {
    let mut catalog = ToolCatalog::new();
    catalog.extend([lamp as SharedTool]).unwrap();
    catalog
}

/// How the fake channel answers a stored question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answering {
    Yes,
    /// A yes recorded as given on Telegram, to a question asked on the web.
    YesElsewhere,
    No,
    Never,
}

/// A `state.db` in a folder of its own, kept while the value lives.
pub struct TempState {
    _dir: tempfile::TempDir,
    pub db: StateDb,
}

impl TempState {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let db = StateDb::open(&dir.path().join("state.db")).unwrap();
        Self { _dir: dir, db }
    }
}

/// A host with an optional web channel that answers stored questions at once.
pub struct FakeHost {
    pub approvals: Option<TempState>,
    pub answering: Answering,
    pub events: EventBus,
    pub announced: Mutex<Vec<ApprovalRow>>,
    /// Questions shown as ended (withdrawn or expired).
    pub withdrawn: Mutex<Vec<ApprovalRow>>,
    pub settled: Mutex<Vec<ApprovalId>>,
    pub webhooks: bool,
    /// What `can_ask_now` says: false as a hub that shares its store with one serving
    /// the routine's channel.
    pub asks_now: std::sync::atomic::AtomicBool,
    pub prompts: Option<Arc<dyn PromptRunner>>,
    pub prompted: Mutex<Vec<PromptRun>>,
}

impl FakeHost {
    pub fn new() -> Self {
        Self {
            approvals: None,
            answering: Answering::Never,
            events: EventBus::new(),
            announced: Mutex::default(),
            withdrawn: Mutex::default(),
            settled: Mutex::default(),
            webhooks: false,
            asks_now: std::sync::atomic::AtomicBool::new(true),
            prompts: None,
            prompted: Mutex::default(),
        }
    }

    /// With a web channel that answers every question with `answering`.
    pub fn with_web(answering: Answering) -> Self {
        Self {
            approvals: Some(TempState::new()),
            answering,
            ..Self::new()
        }
    }
}

#[async_trait]
impl PromptRunner for FakeHost {
    async fn run_prompt(&self, run: PromptRun) -> Result<PromptOutcome, HostError> {
        self.prompted.lock().unwrap().push(run.clone());
        match &self.prompts {
            Some(runner) => runner.run_prompt(run).await,
            None => Err(HostError::NoPrompt),
        }
    }
}

/// The fake channel: answers what is shown as `answering` says, and (standing in for the
/// hub's expirer) expires what is due whenever a run looks again.
#[async_trait]
impl StoredAnswers for FakeHost {
    fn show_question(&self, row: &ApprovalRow) {
        if row.state != ApprovalState::Pending {
            self.withdrawn.lock().unwrap().push(row.clone());
            return;
        }
        self.announced.lock().unwrap().push(row.clone());
        let Some(store) = &self.approvals else { return };
        let to = match self.answering {
            Answering::Yes | Answering::YesElsewhere => ApprovalState::Approved,
            Answering::No => ApprovalState::Rejected,
            Answering::Never => return,
        };
        let channel = if self.answering == Answering::YesElsewhere {
            "telegram"
        } else {
            "web"
        };
        let person = DecidedBy::Person {
            channel: channel.into(),
            user: Some("ada".into()),
            person: None,
        };
        answer_durable(
            &store.db.approvals(),
            &self.events,
            &row.id,
            to,
            &person,
            None,
        )
        .unwrap();
    }

    async fn changed(&self, _id: &ApprovalId) {
        if let Some(store) = &self.approvals {
            let bus = |_: &tau_protocol::SessionId| self.events.clone();
            for expired in expire_due(&store.db.approvals(), &bus, Timestamp::now()).unwrap() {
                self.withdrawn.lock().unwrap().push(expired.row);
            }
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    fn settled(&self, id: &ApprovalId) {
        self.settled.lock().unwrap().push(id.clone());
    }
}

#[async_trait]
impl RoutineHost for FakeHost {
    fn approvals(&self) -> Option<Approvals> {
        self.approvals.as_ref().map(|a| a.db.approvals())
    }

    fn channels(&self) -> Vec<AskChannel> {
        if self.approvals.is_some() {
            vec![AskChannel::Web]
        } else {
            Vec::new()
        }
    }

    fn serves_webhooks(&self) -> bool {
        self.webhooks
    }

    fn can_ask_now(&self, _channel: AskChannel) -> bool {
        self.asks_now.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// A routine definition from JSON.
pub fn def(value: Value) -> RoutineDef {
    RoutineDef::from_json(value).unwrap()
}

pub fn at(text: &str) -> Timestamp {
    text.parse().unwrap()
}

/// Everything a test engine is made of, with its parts kept for looking at.
pub struct Rig {
    pub state: TempState,
    pub store: Arc<RoutineStore>,
    pub events: EventBus,
    pub recorded: RecordedEvents,
    pub host: Arc<FakeHost>,
    pub catalog: Arc<ToolCatalog>,
    pub clock: Arc<dyn Clock>,
    pub zone: TimeZone,
    pub settings: EngineSettings,
    pub env: Vec<(String, String)>,
    pub mqtt: Option<rumqttc::MqttOptions>,
}

impl Rig {
    pub fn new(catalog: ToolCatalog, clock: Arc<dyn Clock>, host: FakeHost) -> Self {
        let events = EventBus::new();
        let recorded = RecordedEvents::subscribed_to(&events);
        let state = TempState::new();
        Self {
            store: Arc::new(RoutineStore::new(state.db.routines())),
            state,
            events,
            recorded,
            host: Arc::new(host),
            catalog: Arc::new(catalog),
            clock,
            zone: TimeZone::UTC,
            settings: EngineSettings::default(),
            env: Vec::new(),
            mqtt: None,
        }
    }

    pub fn engine(&self, config: Vec<RoutineDef>) -> Result<Engine, tau_core::ConfigError> {
        let env = self.env.clone();
        Engine::new(EngineParts {
            config,
            store: Arc::clone(&self.store),
            catalog: Arc::clone(&self.catalog),
            events: self.events.clone(),
            host: Arc::clone(&self.host) as Arc<dyn RoutineHost>,
            zone: self.zone.clone(),
            clock: Arc::clone(&self.clock),
            env: Arc::new(move |name: &str| {
                env.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
            }),
            mqtt: self.mqtt.clone(),
            settings: self.settings.clone(),
            people: tau_core::Household::default(),
        })
    }

    /// The `routine_run` events so far, as (routine, trigger, outcome, detail).
    pub fn runs(&self) -> Vec<(String, String, String, Option<String>)> {
        self.recorded
            .events()
            .into_iter()
            .filter_map(|e| match e {
                AuditEvent::RoutineRun {
                    routine,
                    trigger,
                    outcome,
                    detail,
                    ..
                } => Some((routine, trigger, outcome.as_str().to_owned(), detail)),
                _ => None,
            })
            .collect()
    }

    /// The `tool_call` events so far, as (tool, status, approval, decided_by) in JSON.
    pub fn calls(&self) -> Vec<Value> {
        self.recorded
            .events()
            .into_iter()
            .filter(|e| matches!(e, AuditEvent::ToolCall { .. }))
            .map(|e| {
                let v = serde_json::to_value(e).unwrap();
                json!({"tool": v["tool"], "status": v["status"], "approval": v["approval"], "decided_by": v["decided_by"]})
            })
            .collect()
    }
}
