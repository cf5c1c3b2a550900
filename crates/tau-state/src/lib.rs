//! tau-state: the one owner of tau's store: `state.db`, or a PostgreSQL database several
//! hubs share.
//!
//! Owns the file and everything in it: the one way to open it ([`StateDb::open`]: mode
//! 0600 set by path, never through a second descriptor, whose closing would drop the locks
//! SQLite holds), one pragma policy (WAL, `synchronous = NORMAL`, a 5 s wait for a busy
//! file, foreign keys), the schema as numbered migrations, and a module per table. Every
//! process of tau may open the file at once (`tau serve`, `tau chat` on another session,
//! `tau sessions`, `tau routines`, `tau audit verify`); each has one connection, and every
//! read and write runs off the async workers. Nothing else in tau opens, creates, chmods,
//! renames or closes a descriptor on `state.db` or its `-wal` and `-shm` files.
//!
//! The same API runs over PostgreSQL ([`StateDb::connect`], [`StoreLocation`]): the
//! statements are written once in words both accept (`sql.rs`), a write that reads before
//! it decides takes one advisory lock first and a write of statements alone is a
//! compare-and-set of its own, so each holds across hubs as it does across processes on
//! one file, and a lost connection fails the call with
//! [`StateError::Unavailable`] (nothing is decided) and is made again on the next.
//!
//! Durability: a commit survives a killed process when it returns. Writes that must also
//! survive a power cut (a person's answer, a stored question, a call let through, the end
//! of each turn) are committed with the log flushed to the disk ([`StateDb::flush`]; every
//! PostgreSQL commit is).
//!
//! It knows what is stored, not what it means: the gate's rules, a routine's definition,
//! a channel's texts and the agent loop's messages are the crates above (a session's
//! messages and state are kept as the JSON text they were given); the typed ids are
//! `tau-protocol`'s. It depends on nothing of tau but `tau-protocol`.
//!
//! Whoever opens the store holds [`StateDb`] whole and hands every other part a narrow
//! handle of one concern (`handles.rs`): [`Sessions`], [`Conversations`], [`ApprovalReader`]
//! (read only) and [`Approvals`] (the only one that decides a question), [`Grants`],
//! [`Routines`], [`Devices`], [`TelegramMemory`], [`AuditAnchor`], [`Leases`],
//! [`People`], [`Passkeys`], [`PushSubscriptions`]. Each is a
//! clone of the one connection and reaches nothing else.
//!
//! Layout
//! - `sql.rs`: the statements' one surface over both stores; `pg.rs`: the PostgreSQL
//!   connection, its write lock and change notices; `pg_wire.rs`: its socket, driven by
//!   the thread that asks; `pg_tls.rs`: TLS on it when the url asks; `pg_value.rs`: values between the two stores' types
//! - `db.rs`: [`StateDb`], the pragma policy, transactions, flush; `handles.rs`: the narrow
//!   handles and where `StateDb` hands them out; `migrate.rs`: the schema
//!   and the tau that wrote it (`state_meta.schema_by`); `snapshot.rs`: a consistent copy
//!   taken beside the writers (`tau backup`)
//! - `sessions.rs`: a session's messages and agent state, as JSON text (`tau-core` puts
//!   the loop's `SessionRepository` over them)
//! - `approvals/`: durable questions (`row.rs` what one is, `columns.rs` how it is stored,
//!   `read.rs` the lookups and lists, `lifecycle.rs` stored to settled, `decide.rs` the
//!   answer's compare-and-set), the start-up cross-check of what a row may act on
//!   (`check.rs`), the check a stored yes passes before its call runs (`recheck.rs`), and
//!   the yes given in memory recorded as its call is let through (`dispatch.rs`);
//!   `conversations.rs`: a channel's conversations
//! - `routines.rs`: definitions, switches, runs, marks; `telegram.rs`: the channel's memory
//! - `devices.rs`: devices, discovery configs seen, last states
//! - `grants.rs`: grants, their exact match, and their uses and revokes (one order);
//!   `grants_check.rs`: a row against the audit log's grant lines; `grant_pins.rs`: the
//!   workspace tree a grant was last pinned to
//! - `people.rs`: people's TauBar tokens and invites (hashed), and whose each
//!   conversation is
//! - `anchor.rs`: the audit log's anchor and the line announced before it is written
//! - `push.rs`: [`PushSubscriptions`], the devices each person is told on when a question
//!   waits for them
//! - `passkeys.rs`: passkeys, enrollment secrets, TauBar's signed-in sessions and the
//!   WebAuthn ceremonies under way (single use)
//! - `leases.rs`: names held by one of several hubs until a time (a hub alive, a bot's
//!   poller), claimed and renewed by compare-and-set
//! - `titles.rs`: what a session is called (a person's name for it, else its first
//!   prompt's) and search over titles and message text

mod anchor;
mod approvals;
mod conversations;
mod db;
mod devices;
mod error;
mod grant_pins;
mod grants;
mod grants_check;
mod handles;
mod leases;
mod migrate;
mod passkeys;
mod people;
mod pg;
mod pg_support;
mod pg_tls;
mod pg_value;
mod pg_wire;
#[cfg(test)]
mod pg_writes_tests;
mod push;
mod routines;
mod sessions;
mod snapshot;
mod sql;
mod telegram;
#[cfg(test)]
mod test_stores;
mod titles;

#[cfg(test)]
extern crate self as tau_state;

pub use anchor::AuditHead;
pub use approvals::{
    Answered, ApprovalRow, ApprovalState, CallOutcome, CallToRun, NewApproval, Recheck,
    RecordedAnswer, Untrusted, canonical_arguments, cross_check, needs_check, recheck,
};
pub use conversations::{Conversation, ROUTINE_SESSION_PREFIX, routine_key, routine_of_key};
pub use db::{StateDb, StoreLocation};
pub use devices::{DeviceRow, SeenConfig, SeenState};
pub use error::{StateError, TitleError};
pub use grants::{GrantedCall, Revoked, is_live};
pub use grants_check::{RecordedGrant, UntrustedGrant, cross_check_grant};
pub use handles::{
    ApprovalReader, Approvals, AuditAnchor, Conversations, Devices, Grants, Leases, People,
    Routines, Sessions, TelegramMemory,
};
pub use leases::{Lease, hub_lease};
pub use migrate::{LATEST as SCHEMA_VERSION, TAU_VERSION};
pub use passkeys::{Ceremony, CeremonyKind, Passkeys, StoredPasskey, secret_sha256};
pub use push::{PushSubscription, PushSubscriptions};
pub use routines::{RoutineRow, RunRow, Switch};
pub use sessions::{StoredMessage, StoredSession};
pub use telegram::ShownQuestion;
pub use titles::{MAX_TITLE_CHARS, TITLE_CHARS, title_from_prompt};
