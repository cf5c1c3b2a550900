//! `build_agent`: assembles the loop, the persona, the gate and the tools, then audits
//! that no before-tool-call callback runs after the gate.

use std::sync::Arc;

use tau_agent::{
    Agent, AgentError, BeforeInvocationEvent, Executor, HookError, HookEventKind, HookOrder,
    HookRegistry, Limits, MessageAddedEvent, Model, Registration, RetryPolicy, SessionRepository,
    SharedTool, SlidingWindow, SyncHook,
};
use tau_protocol::{SessionId, Source};

use crate::approval::{Approver, DispatchRecord, DurableQuestions, GateGrants, TierGate};
use crate::audit::EventBus;
use crate::catalog::ToolCatalog;
use crate::config::{ConfigError, CoreConfig};
use crate::hook::{TIER_GATE_HOOK, TierHook};
use crate::provenance::{FramedView, Provenance, system_paragraph};
use crate::turn::{TauAgent, TurnForwarder};

/// The name of the persona callback.
pub const PERSONA_HOOK: &str = "tau.persona";
/// The name of the callback that keeps the conversation's provenance ledger.
pub const PROVENANCE_HOOK: &str = "tau.provenance";

/// Registers callbacks of its own; `name` is shown when the audit refuses one.
pub trait HookProvider: Send + Sync {
    fn name(&self) -> &str;
    fn register_hooks(&self, registry: &mut HookRegistry) -> Result<(), HookError>;
}

/// A hook provider that also brings tools. Its tools reach the agent but not the
/// catalog, so the gate refuses them until they are registered in the catalog.
pub trait Plugin: HookProvider {
    fn tools(&self) -> Vec<SharedTool>;
}

/// Everything `build_agent` assembles.
pub struct AgentParts {
    pub config: CoreConfig,
    pub model: Arc<dyn Model>,
    pub catalog: ToolCatalog,
    /// The channel's approver; `AutoRejectApprover` when the channel has none.
    pub approver: Arc<dyn Approver>,
    pub hooks: Vec<Arc<dyn HookProvider>>,
    pub plugins: Vec<Arc<dyn Plugin>>,
    pub session: Option<(Arc<dyn SessionRepository>, SessionId)>,
    pub events: EventBus,
    /// Set for a hub conversation: tier-2 questions are stored and the turn pauses on
    /// them instead of waiting in memory (`approver` is then not asked).
    pub durable: Option<DurableQuestions>,
    /// Set where grants apply: checked before asking and offered on questions (their
    /// hours are `[approval] grant_hours`, whatever `hours` says).
    pub grants: Option<GateGrants>,
    /// Set where questions are asked in memory (`tau chat`, `tau tui`): each call a
    /// person's yes lets through is recorded first, and its outcome after, so a crash
    /// while it runs is closed as `effect_uncertain` at the next start.
    pub dispatches: Option<DispatchRecord>,
}

/// Why the agent could not be built.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Hook(#[from] HookError),
    #[error(transparent)]
    Agent(#[from] AgentError),
}

/// Builds the agent for one conversation.
pub async fn build_agent(parts: AgentParts) -> Result<TauAgent, BuildError> {
    let AgentParts {
        config,
        model,
        catalog,
        approver,
        hooks,
        plugins,
        session,
        events,
        durable,
        grants,
        dispatches,
    } = parts;
    config.validate()?;
    // The conversation's own bus: its turn's listener hears only this conversation, the
    // caller's subscribers (the audit log) still hear everything.
    let events = EventBus::child_of(&events);
    let forwarder = Arc::new(TurnForwarder::new(config.ui.language()));
    events.subscribe(Arc::clone(&forwarder) as _);
    let catalog = Arc::new(catalog);
    let mut gate = TierGate::new(Arc::clone(&catalog) as _, approver, events.clone())
        .with_timeout(config.approval.timeout());
    let provenance = Arc::new(Provenance::new(Source::Person {
        channel: gate.approver_name().to_owned(),
    }));
    gate = gate.with_provenance(Arc::clone(&provenance));
    if let Some(durable) = durable {
        gate = gate.with_durable(durable);
    }
    if let Some(dispatches) = dispatches {
        gate = gate.with_dispatch_record(dispatches);
    }
    if let Some(grants) = grants {
        gate = gate.with_grants(GateGrants {
            hours: config.approval.grant_hours,
            ..grants
        });
    }
    let gate = Arc::new(gate);

    let mut registry = HookRegistry::new();
    // tau's paragraph on outside text follows the persona, whoever wrote the persona.
    let persona = format!(
        "{}\n\n{}",
        config.agent.system_prompt,
        system_paragraph(config.ui.language())
    );
    let persona_text = persona.clone();
    let observed = Arc::clone(&provenance);
    registry.add(
        PROVENANCE_HOOK,
        HookOrder::DEFAULT,
        SyncHook(move |event: &mut MessageAddedEvent| {
            observed.observe(&event.message);
            Ok(())
        }),
    )?;
    registry.add(
        PERSONA_HOOK,
        HookOrder::DEFAULT,
        SyncHook(move |event: &mut BeforeInvocationEvent| {
            event.system_prompt = Some(persona.clone());
            Ok(())
        }),
    )?;
    for provider in &hooks {
        provider.register_hooks(&mut registry)?;
    }
    TierHook::new(Arc::clone(&gate), Arc::clone(&catalog)).register(&mut registry)?;
    let mut plugin_tools = Vec::new();
    for plugin in &plugins {
        plugin.register_hooks(&mut registry)?;
        plugin_tools.extend(plugin.tools());
    }
    if let Some(behind) = hooks_behind_gate(&registry).first() {
        return Err(ConfigError::new(
            "hooks",
            format!(
                "before-tool-call hook '{}' (order {}) would run after the tier gate; it must register below HookOrder::SDK_LAST",
                behind.name, behind.order
            ),
        )
        .into());
    }

    // Physical tools never run at the same time as each other.
    let executor = if catalog.has_physical() {
        Executor::Sequential
    } else {
        Executor::Concurrent
    };
    let limits = Limits {
        max_turns: Some(config.agent.max_turns),
        max_output_tokens: config.agent.max_output_tokens,
        max_total_tokens: None,
    };
    let retry = RetryPolicy {
        max_attempts: config.agent.retry_attempts,
        ..RetryPolicy::default()
    };
    let mut builder = Agent::builder(model)
        .tools(catalog.tools())
        .tools(plugin_tools)
        .hooks(registry)
        .system_prompt(persona_text)
        .model_view(Arc::new(FramedView))
        .executor(executor)
        .limits(limits)
        .retry(retry)
        .window(SlidingWindow {
            window_size: config.agent.window_size,
        })
        // A call a crash cut off is answered by what tau knows of it (`turn/cut_off.rs`),
        // not as merely interrupted.
        .answer_unfinished_calls_later();
    if let Some((repository, id)) = session {
        builder = builder.session(repository, id);
    }
    let agent = builder.build().await?;
    // A restored conversation read what it holds: its sources count from the start.
    for message in agent.messages() {
        provenance.observe(message);
    }
    Ok(TauAgent::new(
        agent, gate, catalog, &config, events, forwarder,
    ))
}

/// Before-tool-call callbacks that run after the gate: above `SDK_LAST`, or at it but
/// registered later. Empty when the gate is last. A registry without the gate has every
/// callback "behind" it, so it can never pass.
pub fn hooks_behind_gate(registry: &HookRegistry) -> Vec<Registration> {
    let before = registry.registrations_for(HookEventKind::BeforeToolCall);
    match before.iter().position(|r| r.name == TIER_GATE_HOOK) {
        Some(gate) => before.into_iter().skip(gate + 1).collect(),
        None => before
            .into_iter()
            .chain(std::iter::once(Registration {
                event: HookEventKind::BeforeToolCall,
                name: format!("(missing {TIER_GATE_HOOK})"),
                order: f64::NAN,
            }))
            .collect(),
    }
}
