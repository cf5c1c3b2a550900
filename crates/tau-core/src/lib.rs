//! tau-core: tau's policy and its assembly.
//!
//! Owns the tool catalog, the tier-2 approval gate, the audit events and the hook
//! that puts the gate into the agent loop, `build_agent`, `TauAgent`, the notices in every
//! UI language, the `[agent]`, `[ui]`, `[approval]` config and the display function every
//! channel shows untrusted text through. Knows nothing of channels or model providers:
//! they are handed in as trait objects (`Approver`, `Model`).
//!
//! Layout
//! - `approval/`: `TierGate` (its verdict is `tau-protocol`'s `CallDecision`),
//!   `Approver`, exemptions, durable questions and their one expirer, the texts the model
//!   reads (imports nothing from the agent loop, so the MCP
//!   server and routines call it directly)
//! - `catalog.rs`: `ToolCatalog`, tier and effect annotations; `card.rs`: `CardWriter`, what
//!   tau writes on a question's card (tiers themselves are
//!   `tau-protocol`'s, re-exported here)
//! - `audit.rs`: `AuditEvent` (a line of the audit log) and the `EventBus` it travels on
//! - `gated.rs`: the one gated call (check -> run or refuse -> record); `stored_call.rs`:
//!   the same call asked as a stored question outside any turn (a routine's), on the
//!   paused turn's own path
//! - `hook.rs`: `TierHook`, the gated call split across the loop's tool-call hooks
//! - `build.rs`: `build_agent`, the registry audit; `turn/`: `TauAgent`, which runs a turn
//!   and projects it into the `ChannelEvent`s every channel renders, who may open a
//!   conversation (`hub_hold`), and the calls a crash cut off (`close_cut_off_calls`)
//! - `i18n.rs`: notices; `config.rs`: config sections; `ids.rs`: unguessable ids
//! - `display/`: the one display function for untrusted text, sorted JSON, lookalike words,
//!   and `Listing`, through which the command line's listings show every field
//! - `flood.rs`: bounded records of what outsiders repeat (a window per sender, counted),
//!   and the cap for outside texts in logs and audit lines
//! - `failpoint.rs`: where a test build can be stopped dead (empty in any other build)
//! - `child_env.rs`: the environment a child process (a command, an MCP server) starts with
//! - `people.rs`: `[[people]]`, the `Household`, and who speaks at the terminal
//! - `pin.rs`: `WorkspacePinner`, what a grant of a tool that runs the workspace pins
//! - `grants.rs`: grants and routines' exemptions as a person reads them, and a revoke
//!   with its audit line; `shown.rs`: channel, conversation and time as a person reads them;
//!   `waiting.rs`: the questions that wait, as `tau approvals` lists them
//! - `sessions.rs`: `StoredSessions`, the loop's `SessionRepository` over `state.db`'s
//!   sessions (the store keeps their JSON and knows nothing of the loop)

pub mod approval;
mod audit;
mod build;
mod card;
mod catalog;
mod child_env;
mod config;
pub mod display;
pub mod failpoint;
pub mod flood;
mod gated;
pub mod grants;
mod hook;
mod i18n;
mod ids;
mod listings;
mod people;
mod pin;
pub mod provenance;
mod sessions;
mod shown;
mod stored_call;
mod turn;
pub mod waiting;

pub use approval::{
    Answer, ApprovalHistory, Approver, ApproverError, AutoRejectApprover, GateGrants, GrantLedger,
    RecordedGrants, ScriptedApprover, StepUp, TierGate, ToolCallRecord, fold_grant_line,
    invalid_call_text, refusal_text, unknown_tool_text,
};
pub use audit::{AuditEvent, ErrorSite, EventBus, EventSubscriber, RecordedEvents, RoutineOutcome};
pub use build::{
    AgentParts, BuildError, HookProvider, PERSONA_HOOK, Plugin, build_agent, hooks_behind_gate,
};
pub use card::{CardWriter, LOOKALIKE, LookalikeWriter, Resumed, SHOWN_FILES_UNCHECKED_TEXT};
pub use catalog::{
    CatalogEntry, CatalogError, TAU_ANNOTATION, TauToolSpec, ToolCatalog, adopt_external_spec,
    effect_of, runs_workspace, tier_of,
};
pub use child_env::{INHERITED_ENV, child_env, env_name_problem};
pub use config::{
    AgentConfig, ApprovalConfig, ConfigError, CoreConfig, DEFAULT_SYSTEM_PROMPT, UiConfig,
    toml_error,
};
pub use display::{
    Listing, argument_sha256, counted, display, display_multiline, grouped_digits,
    json_for_terminal, shown_length, sorted_json,
};
pub use gated::{CallRecord, GatedOutcome, gated_call};
pub use hook::{TIER_GATE_HOOK, TierHook};
pub use i18n::{Language, Notice};
pub use ids::{NoRandomness, random_code, random_id};
pub use listings::{session_transcript, sessions_table, tools_table};
pub use people::{Household, Person, PersonDef, WhoError};
pub use pin::{GRANT_LABEL, WorkspacePinner, asked_again_text, no_grant_text, unpinned_text};
pub use sessions::{StoredSessions, load_agent_state};
pub use shown::{channel_name, conversation, when};
pub use stored_call::{StoredAnswers, stored_gated_call};
pub use turn::{
    ChannelSink, CutOff, HubHold, StoredTurnError, TauAgent, TurnError, TurnOutcome,
    close_cut_off_calls, from_audit as channel_event, hub_hold, interrupt_rejection, notice_event,
    output_blocks, turn_waits_on, waits_on,
};
