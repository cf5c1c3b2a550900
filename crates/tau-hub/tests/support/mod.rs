//! What the hub's test suites share: recording tools, a factory whose scripted model
//! continues from each session's stored history, a hub process on shared files.
#![allow(dead_code, unreachable_pub)]

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use tau_agent::{
    ContentBlock, Message, Role, ScriptedModel, SessionRepository, SharedTool, Tool, ToolContext,
    ToolError, ToolOutput, ToolSpec, ToolUse,
};
use tau_core::{
    AgentParts, AuditEvent, AutoRejectApprover, CoreConfig, EventBus, RecordedEvents,
    StoredSessions, TauToolSpec, ToolCatalog, approval::DurableQuestions, build_agent,
};
use tau_hub::{Hub, HubOptions, OpenError, Opened, SessionEvent, SessionFactory};
use tau_protocol::{ApprovalId, ChannelEvent, SessionId, Tier, TurnStop};
use tau_state::{RecordedAnswer, StateDb};
use tokio::sync::broadcast;

/// A tool that records its inputs; `gate` (when set) holds it until released.
pub struct Recording {
    spec: ToolSpec,
    pub inputs: Mutex<Vec<Value>>,
    pub runs: AtomicUsize,
    gate: Option<Arc<tokio::sync::Semaphore>>,
}

impl Recording {
    pub fn new(name: &str, tier: Tier, gate: Option<Arc<tokio::sync::Semaphore>>) -> Arc<Self> {
        Arc::new(Self {
            spec: TauToolSpec::new(
                name,
                format!("The {name} tool"),
                tier,
                format!("uses {name}"),
            )
            .build(),
            inputs: Mutex::default(),
            runs: AtomicUsize::new(0),
            gate,
        })
    }
}

#[async_trait]
impl Tool for Recording {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn run(&self, input: Value, context: ToolContext) -> Result<ToolOutput, ToolError> {
        if let Some(gate) = &self.gate {
            tokio::select! {
                permit = gate.acquire() => permit.unwrap().forget(),
                () = context.cancelled() => return Ok(ToolOutput::text("stopped")),
            }
        }
        self.runs.fetch_add(1, Ordering::SeqCst);
        self.inputs.lock().unwrap().push(input.clone());
        Ok(ToolOutput::text(format!("{} done", self.spec.name)))
    }
}

pub fn call(id: &str, name: &str, input: Value) -> Message {
    Message {
        role: Role::Assistant,
        content: vec![ContentBlock::ToolUse(ToolUse {
            tool_use_id: id.into(),
            name: name.into(),
            input,
        })],
        source: None,
    }
}

pub fn say(text: &str) -> Message {
    Message::assistant_text(text)
}

/// Builds each session's agent over the shared stores; its model plays `script` from
/// after the assistant messages the session already holds.
pub struct Factory {
    sessions: StoredSessions,
    script: Vec<Message>,
    /// Scripts of particular sessions, by id.
    scripts: Arc<Mutex<std::collections::HashMap<String, Vec<Message>>>>,
    lights: Arc<Recording>,
    wait: Arc<Recording>,
    audit: EventBus,
    /// What the audit bus received, across every hub of the setup (the audit log).
    record: RecordedEvents,
    opened: AtomicUsize,
}

#[async_trait]
impl SessionFactory for Factory {
    fn events(&self, _session: &SessionId) -> EventBus {
        self.audit.clone()
    }

    fn recorded_answers(&self) -> Result<Vec<RecordedAnswer>, OpenError> {
        Ok(recorded_answers(&self.record.events()))
    }

    async fn open(
        &self,
        session: &SessionId,
        durable: DurableQuestions,
        events: EventBus,
    ) -> Result<Opened, OpenError> {
        self.opened.fetch_add(1, Ordering::SeqCst);
        let stored = self.sessions.messages(session, 0).unwrap();
        let said = stored.iter().filter(|m| m.role == Role::Assistant).count();
        let script = self
            .scripts
            .lock()
            .unwrap()
            .get(session.as_str())
            .cloned()
            .unwrap_or_else(|| self.script.clone());
        let model = ScriptedModel::new(script.into_iter().skip(said).collect::<Vec<_>>());
        let mut catalog = ToolCatalog::new();
        let tools: Vec<SharedTool> = vec![self.lights.clone(), self.wait.clone()];
        catalog.extend(tools).unwrap();
        let agent = build_agent(AgentParts {
            config: CoreConfig::default(),
            model: Arc::new(model),
            catalog,
            approver: Arc::new(AutoRejectApprover),
            hooks: Vec::new(),
            plugins: Vec::new(),
            session: Some((Arc::new(self.sessions.clone()) as _, session.clone())),
            events,
            durable: Some(durable),
            grants: None,
            dispatches: None,
        })
        .await?;
        Ok(Opened {
            agent,
            guard: Box::new(()),
        })
    }
}

pub struct Setup {
    pub dir: tempfile::TempDir,
    pub lights: Arc<Recording>,
    pub wait: Arc<Recording>,
    pub release: Arc<tokio::sync::Semaphore>,
    pub audit: RecordedEvents,
    bus: EventBus,
    scripts: Arc<Mutex<std::collections::HashMap<String, Vec<Message>>>>,
}

impl Setup {
    pub fn new() -> Self {
        let release = Arc::new(tokio::sync::Semaphore::new(0));
        let bus = EventBus::new();
        Self {
            dir: tempfile::tempdir().unwrap(),
            lights: Recording::new("lights", Tier::Physical, None),
            wait: Recording::new("wait", Tier::Read, Some(Arc::clone(&release))),
            release,
            audit: RecordedEvents::subscribed_to(&bus),
            bus,
            scripts: Arc::default(),
        }
    }

    pub fn db(&self) -> PathBuf {
        self.dir.path().join("state.db")
    }

    /// A hub process on the shared files.
    pub fn hub(&self, script: Vec<Message>, timeout: Duration) -> Hub {
        // Its own connection, as each process has.
        let state = StateDb::open(&self.db()).unwrap();
        let factory = Arc::new(Factory {
            sessions: StoredSessions::new(state.sessions()),
            script,
            scripts: Arc::clone(&self.scripts),
            lights: Arc::clone(&self.lights),
            wait: Arc::clone(&self.wait),
            audit: self.bus.clone(),
            record: self.audit.clone(),
            opened: AtomicUsize::new(0),
        });
        Hub::open(
            state,
            factory,
            HubOptions {
                remote_timeout: timeout,
                audit: self.bus.clone(),
                language: tau_core::Language::En,
                passkey_step: tau_hub::PasskeyStep::default(),
                people: tau_hub::HubPeople::default(),
            },
        )
    }

    /// What the model says in `session`.
    pub fn script(&self, session: &SessionId, script: Vec<Message>) {
        self.scripts
            .lock()
            .unwrap()
            .insert(session.to_string(), script);
    }

    /// A person's answer as a hub records it (the row, then its `approval` line), given
    /// while no hub runs.
    pub fn answer_while_down(&self, id: &ApprovalId, to: tau_state::ApprovalState) {
        let store = StateDb::open(&self.db()).unwrap();
        let (answered, _) = tau_core::approval::answer_durable(
            &store.approvals(),
            &self.bus,
            id,
            to,
            &tau_protocol::DecidedBy::person("web"),
            None,
        )
        .unwrap();
        assert!(matches!(answered, tau_state::Answered::Decided(_)));
    }

    /// Runs `sql` on `state.db` as another program would, with `?1` bound to `id`.
    pub fn edit_state_db(&self, sql: &str, id: &ApprovalId) {
        let changed = tau_test_support::edit_behind_tau(&self.db(), sql, id.as_str());
        assert_eq!(changed, 1, "{sql}");
    }

    pub fn decided_by_of_runs(&self) -> Vec<Value> {
        self.audit
            .events()
            .into_iter()
            .filter_map(|e| match e {
                AuditEvent::ToolCall {
                    tool,
                    fate: tau_protocol::CallFate { decided_by, .. },
                    ..
                } if tool == "lights" => Some(serde_json::to_value(decided_by).unwrap()),
                _ => None,
            })
            .collect()
    }
}

/// The `approval` lines among `events`, as the audit log keeps them.
pub fn recorded_answers(events: &[AuditEvent]) -> Vec<RecordedAnswer> {
    events
        .iter()
        .cloned()
        .filter_map(AuditEvent::into_recorded_answer)
        .collect()
}

pub const HOUR: Duration = Duration::from_secs(3600);

pub fn lights_script() -> Vec<Message> {
    vec![
        call("t1", "lights", json!({"room": "kitchen"})),
        say("The kitchen light is on."),
        say("Anything else?"),
    ]
}

/// Events until a turn ends with `stop` (skipping turns that end otherwise), as JSON.
pub async fn until_turn_ends(
    receiver: &mut broadcast::Receiver<SessionEvent>,
    stop: TurnStop,
) -> Vec<Value> {
    let mut seen = Vec::new();
    loop {
        let event = tokio::time::timeout(Duration::from_secs(10), receiver.recv())
            .await
            .unwrap_or_else(|_| panic!("no turn ended with {stop:?}; saw {seen:#?}"))
            .unwrap();
        let value = match &event {
            SessionEvent::Prompt { text } => json!({"type": "prompt", "text": text}),
            SessionEvent::Turn(event) => serde_json::to_value(event).unwrap(),
        };
        seen.push(value);
        if let SessionEvent::Turn(ChannelEvent::TurnEnded { stop_reason, .. }) = event
            && stop_reason == stop
        {
            return seen;
        }
    }
}

/// The events' types, a run of text deltas as one.
pub fn types(events: &[Value]) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for kind in events.iter().map(|e| e["type"].as_str().unwrap()) {
        if !(kind == "text_delta" && out.last() == Some(&"text_delta")) {
            out.push(kind);
        }
    }
    out
}

pub async fn ask(hub: &Hub) -> (SessionId, broadcast::Receiver<SessionEvent>, ApprovalId) {
    let session = hub.new_conversation("web").unwrap();
    let mut events = hub.subscribe("web", &session).unwrap();
    hub.send("web", &session, "lights on".into()).await.unwrap();
    let seen = until_turn_ends(&mut events, TurnStop::Interrupt).await;
    let id = seen
        .iter()
        .find(|e| e["type"] == "approval_requested")
        .unwrap()["approval_id"]
        .as_str()
        .map(|id| ApprovalId::parse(id).unwrap())
        .unwrap();
    (session, events, id)
}
