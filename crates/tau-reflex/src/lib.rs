//! tau-reflex: routines — triggers that call tools through the same gate as a
//! conversation, with exactly the exemptions the person granted.
//!
//! Owns routines (`[[routines]]` in `tau.toml`, and those made in a conversation, kept in
//! `state.db`), their triggers (`every`, `cron`, `at`, `mqtt`, `webhook`), the engine that
//! keeps them (no overlap, backoff, missed runs counted and not replayed), each routine's
//! exemption (its own tool with exactly its arguments, tied to the content the person
//! approved), asking on a routine's `ask` channel through a durable question, and the
//! routine tools. Every call goes through `tau_core::gated_call` or, asked on a channel,
//! `tau_core::stored_gated_call`; nothing here can let a call skip the gate. Knows nothing of channels, HTTP or models: the process hosting the
//! engine is a [`RoutineHost`]; beside `tau serve` that is [`HubHost`], over the port the
//! hub defines for routines.
//!
//! Layout
//! - `def.rs`: a routine as written, read key by key; `validate.rs`: a routine that can run
//! - `schema.rs`: fixed arguments checked against the tool's input schema
//! - `trigger.rs`: triggers, periods, cron in a zone, topic filters; `clock.rs`: the wall clock
//! - `store.rs`: routines, switches and runs in `state.db`; `book.rs`: every routine there is
//! - `exemption.rs`: a routine's exemption; `ask.rs`: how a call is asked; `owner.rs`: whose it is
//! - `run.rs`: one run through the gate, recorded; `engine/`: triggers kept, runs started
//! - `host.rs`: what the engine needs from its host; `hosted.rs`: that host over the hub's
//!   port, and the routines as the hub's channels see them; `offers.rs`: what it offers routines,
//!   and the check of the `tau.toml` routines against it (at start and by `tau config check`)
//! - `prompt.rs`: prompt actions as turns
//! - `tools.rs`: the routine tools; `listing.rs`: the routines as `tau routines` shows them

mod ask;
mod book;
mod clock;
mod def;
mod engine;
mod exemption;
mod host;
mod hosted;
pub mod listing;
mod offers;
mod owner;
mod prompt;
mod run;
mod schema;
mod store;
mod tools;
mod trigger;
mod validate;

pub use ask::{Asking, asking_on};
pub use book::{Book, config_routines, load, toml_routines};
pub use clock::{Clock, SystemClock, TokioClock};
pub use def::{FieldError, RoutineDef, WebhookDef, defs_from_toml, toml_to_json};
pub use engine::{Engine, EngineParts, EngineSettings, Env, Fired, WebhookCall, WebhookReply};
pub use exemption::{add_exemption, allowances};
pub use host::{HostError, NoPrompts, PromptOutcome, PromptRun, PromptRunner, RoutineHost};
pub use hosted::{HostedRoutines, HubHost};
pub use offers::{Offers, check_routines};
pub use prompt::{PromptApprover, TurnPrompts};
pub use run::{ActionRun, record, run_action};
pub use store::{RoutineStore, RunRecord, StoreError, StoredRoutine, StoredRow};
pub use tools::{RoutineToolsParts, describe_action, routine_tools, routines_json};
pub use trigger::{Secret, Trigger};
pub use validate::{
    Action, AskChannel, Checks, MAX_NAME_CHARS, Origin, ROUTINE_TOOL_NAMES, Routine, name_problem,
    session_of, validate,
};
