//! Tools, approvers and assembly shared by tau-core's integration tests.
#![allow(dead_code)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::{Value, json};
use tau_agent::{
    ContentBlock, Message, Role, ScriptedModel, SharedTool, Tool, ToolContext, ToolError,
    ToolOutput, ToolSpec, ToolUse,
};
use tau_core::{
    AgentParts, Approver, CoreConfig, EventBus, HookProvider, Plugin, RecordedEvents, TauAgent,
    TauToolSpec, ToolCatalog, build_agent,
};
use tau_protocol::Tier;

/// A tool that records every input it ran with.
pub struct Recording {
    spec: ToolSpec,
    pub inputs: Mutex<Vec<Value>>,
    pub runs: AtomicUsize,
}

impl Recording {
    pub fn new(name: &str, tier: Tier) -> Arc<Self> {
        let effect = match tier {
            Tier::Read => format!("reads {name}"),
            Tier::Write => format!("writes {name}"),
            Tier::Physical => format!("switches {name} in the house"),
        };
        Arc::new(Self {
            spec: TauToolSpec::new(name, format!("The {name} tool"), tier, effect).build(),
            inputs: Mutex::new(Vec::new()),
            runs: AtomicUsize::new(0),
        })
    }

    pub fn inputs(&self) -> Vec<Value> {
        self.inputs.lock().unwrap().clone()
    }

    pub fn runs(&self) -> usize {
        self.runs.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl Tool for Recording {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn run(&self, input: Value, _context: ToolContext) -> Result<ToolOutput, ToolError> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        self.inputs.lock().unwrap().push(input.clone());
        Ok(ToolOutput::text(format!(
            "{} done with {input}",
            self.spec.name
        )))
    }
}

pub fn tool_use(id: &str, name: &str, input: Value) -> ContentBlock {
    ContentBlock::ToolUse(ToolUse {
        tool_use_id: id.into(),
        name: name.into(),
        input,
    })
}

pub fn calls(blocks: Vec<ContentBlock>) -> Message {
    Message {
        role: Role::Assistant,
        content: blocks,
        source: None,
    }
}

pub fn text(text: &str) -> Message {
    Message::assistant_text(text)
}

/// The house: a tier-0 clock, a tier-1 notebook and tier-2 lights.
pub struct House {
    pub clock: Arc<Recording>,
    pub notes: Arc<Recording>,
    pub lights: Arc<Recording>,
}

impl House {
    pub fn new() -> Self {
        Self {
            clock: Recording::new("clock", Tier::Read),
            notes: Recording::new("notes", Tier::Write),
            lights: Recording::new("lights", Tier::Physical),
        }
    }

    pub fn catalog(&self) -> ToolCatalog {
        let mut catalog = ToolCatalog::new();
        let tools: Vec<SharedTool> =
            vec![self.clock.clone(), self.notes.clone(), self.lights.clone()];
        catalog.extend(tools).unwrap();
        catalog
    }
}

pub struct Built {
    pub agent: TauAgent,
    pub model: ScriptedModel,
    pub events: RecordedEvents,
}

pub struct Setup {
    pub config: CoreConfig,
    pub catalog: ToolCatalog,
    pub approver: Arc<dyn Approver>,
    pub hooks: Vec<Arc<dyn HookProvider>>,
    pub plugins: Vec<Arc<dyn Plugin>>,
    pub session: Option<(
        Arc<dyn tau_agent::SessionRepository>,
        tau_protocol::SessionId,
    )>,
    pub durable: Option<tau_core::approval::DurableQuestions>,
}

impl Setup {
    pub fn new(catalog: ToolCatalog, approver: Arc<dyn Approver>) -> Self {
        Self {
            config: CoreConfig::default(),
            catalog,
            approver,
            hooks: Vec::new(),
            plugins: Vec::new(),
            session: None,
            durable: None,
        }
    }

    pub async fn build(self, script: Vec<Message>) -> Built {
        let model = ScriptedModel::new(script).recording();
        let bus = EventBus::new();
        let events = RecordedEvents::subscribed_to(&bus);
        let agent = build_agent(AgentParts {
            config: self.config,
            model: Arc::new(model.clone()),
            catalog: self.catalog,
            approver: self.approver,
            hooks: self.hooks,
            plugins: self.plugins,
            session: self.session,
            events: bus,
            durable: self.durable,
            grants: None,
            dispatches: None,
        })
        .await
        .unwrap();
        Built {
            agent,
            model,
            events,
        }
    }
}

/// The tool results of the last user message, as (id, status, text).
pub fn last_results(messages: &[Message]) -> Vec<(String, String, String)> {
    messages
        .iter()
        .rev()
        .find(|m| m.tool_results().next().is_some())
        .map(|m| {
            m.tool_results()
                .map(|r| {
                    (
                        r.tool_use_id.clone(),
                        json!(r.status).as_str().unwrap().to_owned(),
                        r.text(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Events with their random approval ids replaced by `ap_1`, `ap_2`, ... and deadlines by
/// `<deadline>`, so whole sequences compare exactly.
pub fn stable_ids(events: Vec<tau_core::AuditEvent>) -> Vec<tau_core::AuditEvent> {
    #![allow(clippy::needless_pass_by_value)]
    let mut value = serde_json::to_value(&events).unwrap();
    tau_test_support::stable_ids(&mut value);
    serde_json::from_value(value).unwrap()
}

/// The question a durable gate stored about a call; panics on any other verdict.
pub fn asked(decision: &tau_protocol::CallDecision) -> tau_protocol::ApprovalId {
    match (&decision.verdict, &decision.approval_id) {
        (tau_protocol::Verdict::Asked, Some(id)) => id.clone(),
        _ => panic!("the question was not stored: {decision:?}"),
    }
}

/// A decision with its random approval id replaced by `ap_1`.
pub fn stable_check(mut check: tau_protocol::CallDecision) -> tau_protocol::CallDecision {
    if check.approval_id.is_some() {
        check.approval_id = Some(tau_protocol::ApprovalId::parse("ap_1").unwrap());
    }
    check
}
