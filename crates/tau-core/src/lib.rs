//! tau-core: tau's policy and its assembly.
//!
//! Owns tiers, the tool catalog, the tier-2 approval gate, the agent events and the hook
//! that puts the gate into the agent loop, `build_agent`, `TauAgent`, the notices in every
//! UI language and the `[agent]`, `[ui]`, `[approval]` config. Knows nothing of channels or
//! model providers: they are handed in as trait objects (`Approver`, `Model`).
//!
//! Layout
//! - `approval/`: `TierGate`, `Approver`, exemptions, the texts the model reads (imports
//!   nothing from the agent loop, so the reflex engine and the MCP server call it directly)
//! - `tier.rs`, `catalog.rs`: tiers, `ToolCatalog`, tier and effect annotations
//! - `events.rs`: `AgentEvent` and the `EventBus` the audit log and UIs subscribe to
//! - `hook.rs`: `TierHook`, the adapter at `SDK_LAST`
//! - `build.rs`: `build_agent`, the registry audit; `turn.rs`: `TauAgent`
//! - `i18n.rs`: notices; `config.rs`: config sections
//! - `child_env.rs`: the environment a child process (a command, an MCP server) starts with

pub mod approval;
mod build;
mod catalog;
mod child_env;
mod config;
mod events;
mod hook;
mod i18n;
mod tier;
mod turn;

pub use approval::{
    ApprovalRequest, Approver, ApproverError, AutoRejectApprover, Check, ScriptedApprover,
    TierGate, ToolCallRecord, refusal_text, unknown_tool_text,
};
pub use build::{
    AgentParts, BuildError, HookProvider, PERSONA_HOOK, Plugin, build_agent, hooks_behind_gate,
};
pub use catalog::{
    CatalogEntry, CatalogError, TAU_ANNOTATION, TauToolSpec, ToolCatalog, adopt_external_spec,
    effect_of, tier_of,
};
pub use child_env::{INHERITED_ENV, child_env, env_name_problem};
pub use config::{
    AgentConfig, ApprovalConfig, ConfigError, CoreConfig, DEFAULT_SYSTEM_PROMPT, UiConfig,
    toml_error,
};
pub use events::{
    AgentEvent, Approval, CallStatus, Decision, ErrorSite, EventBus, EventSubscriber,
    RecordedEvents,
};
pub use hook::{TIER_GATE_HOOK, TierHook};
pub use i18n::{Language, Notice};
pub use tier::{Tier, TierError};
pub use turn::{ChatEvent, ChatSink, TauAgent, TurnError, TurnOutcome, interrupt_rejection};
