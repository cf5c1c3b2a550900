//! tau-protocol: what a channel reads about a turn.
//!
//! Owns the channel protocol — [`ChannelEvent`], the typed stream every channel (terminal,
//! TUI, web page, Telegram) renders a turn from — the vocabulary it shares with the audit
//! log (tiers, call statuses, decisions, how a call got past the gate and who or what
//! decided) and the identities every crate passes around ([`SessionId`], [`ApprovalId`]).
//! It is plain data: it depends on serde alone, so a web page, a test or another program
//! can read it. It knows nothing of the agent loop, the gate's rules, models, storage or
//! channels; a channel never parses a text to learn a state, it reads these fields.
//!
//! Layout
//! - `tier.rs`: [`Tier`]
//! - `vocabulary.rs`: [`CallStatus`], [`Decision`], [`Approval`], [`DecidedBy`]
//! - `decision.rs`: the record of a decision carried whole: [`Verdict`] (what the gate
//!   decided about a call, in a [`CallDecision`]), [`Ruling`] (who decided a question, and
//!   what), [`CallFate`] (how a call's record says it ended)
//! - `event.rs`: [`ChannelEvent`] and its parts
//! - `ids.rs`: [`SessionId`], [`ApprovalId`]
//! - `canonical.rs`: [`canonical_json`], the one text of a JSON value
//! - `output.rs`: [`OutputBlock`], a tool's result as a person reads it
//! - `question.rs`: [`ApprovalQuestion`], the tier-2 question carried whole, and its
//!   [`CallCard`]
//! - `grant.rs`: [`GrantId`], [`GrantScope`], [`GrantRequest`] (what a "yes, and allow
//!   this again" asks for), [`GrantOffer`] (what it would cover), [`Grant`] (one as stored), [`Allowance`] (a
//!   grant or a routine's exemption, as the lists show them)
//! - `workspace_tree.rs`: [`WorkspaceTree`], the workspace's files as a grant pins them
//! - `provenance.rs`: [`Source`] (who put a text into a conversation) and
//!   [`CallProvenance`] (what a call's arguments owe to outside text)
//! - `person.rs`: [`PersonName`], who a conversation, a grant and an answer belong to
//! - `text.rs`: [`ellipsized`], a text shortened for one line
//! - `decision_row.rs`: [`DecisionRow`], one decided tier-2 call as TauBar's history
//!   lists it, and its [`DecisionOutcome`]

mod canonical;
mod decision;
mod decision_row;
mod event;
mod grant;
mod ids;
mod output;
mod person;
mod provenance;
mod question;
mod text;
mod tier;
mod vocabulary;
mod workspace_tree;

pub use canonical::canonical_json;
pub use decision::{CallDecision, CallFate, Refusal, Ruling, Verdict};
pub use decision_row::{DECISION_HISTORY_DAYS, DecisionOutcome, DecisionRan, DecisionRow};
pub use event::{ChannelEvent, NoticeKind, TurnStop, TurnUsage};
pub use grant::{
    Allowance, DEFAULT_GRANT_HOURS, Grant, GrantId, GrantMade, GrantOffer, GrantRequest,
    GrantRequestError, GrantScope, GrantSuggestion, InvalidGrantId, MAX_GRANT_HOURS,
    MAX_GRANT_USES, PINS_WORKSPACE_TEXT, RoutineAllowance, SUGGESTION_APPROVALS, SUGGESTION_DAYS,
};
pub use ids::{ApprovalId, InvalidApprovalId, InvalidSessionId, SessionId};
pub use output::{OUTPUT_LINES, OutputBlock, shown_lines};
pub use person::{InvalidPersonName, PersonName};
pub use provenance::{CallProvenance, Source, TracedValue};
pub use question::{ApprovalQuestion, CallCard, CardNote, ConfirmStep, NoteLevel, ShownFile};
pub use text::ellipsized;
pub use tier::{Tier, TierError};
pub use vocabulary::{Approval, CallStatus, DecidedBy, Decision};
pub use workspace_tree::{MAX_PINNED_BYTES, MAX_PINNED_ENTRIES, TreeError, WorkspaceTree};
