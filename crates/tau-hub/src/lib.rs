//! tau-hub: the long-running hub behind `tau serve`.
//!
//! Owns conversations (a channel's conversation key -> a session), the durable questions
//! (both kept in `state.db` by `tau-state`), one turn at a time
//! per session (turns of different sessions run concurrently), the expiry of stored
//! questions, recovery after a restart, and the fan-out of each session's events to the
//! channels; and [`StoredFactory`], the [`SessionFactory`] that builds a conversation's
//! agent over its stored session, its lock and its audit lines. Knows no channel and no
//! model: channels call the port below, and the binary hands in the model, the tools and
//! each channel's rule of whose grants a conversation has.
//!
//! # The channel-facing API
//!
//! A channel (the web page, Telegram, ...) is a [`Channel`]: a name and a task that
//! [`Hub::run_channels`] starts and stops. It is handed a [`ChannelPort`] bound to its
//! name ([`Hub::port`]) and talks to the hub only through it:
//!
//! - `new_conversation` / `open_conversation(key)`: the session a conversation talks to
//!   (created on first use; a Telegram chat id is a key).
//! - `send(session, text)`: queues a person's message as a turn. A question still pending
//!   in that conversation is superseded first.
//! - `subscribe(session)`: that session's [`SessionEvent`]s as they happen (the person's
//!   message, then the turn's `ChannelEvent`s, among them `approval_requested` and
//!   `approval_decided`); `events()`: the same for every conversation of the channel,
//!   each with its [`Conversation`].
//! - `cancel(session)`: cancels the running turn (Ctrl-C, `/stop`).
//! - `answer(user, approval_id, Reply)`: a person's answer, a compare-and-set on the
//!   stored row. Only the channel that asked may answer; the first answer wins
//!   ([`Answered::Decided`]), later ones learn the final state
//!   ([`Answered::AlreadyDecided`]). A decided question resumes its turn. An answer to a
//!   question nothing waits on any more (no paused turn, no routine's run) is not used:
//!   the question is closed and the channel told ([`Answered::NotUsed`]).
//! - `approvals(state)`: the channel's stored questions, e.g. those still pending to show
//!   again after a restart; `approvals_of_every_channel` and `question(id)`: every
//!   channel's, to list (never to answer).
//! - `conversations`, `conversation_of`, `messages`, `title`, `rename_conversation`,
//!   `search_conversations`, `delete_conversation`: what a channel lists and shows.
//! - `grants`, `grant`, `revoke_grant`: the live grants made on the channel and their
//!   revoke (a `grant_revoked` audit line); `refused_answer`: an answer the channel did
//!   not count, audited as the channel's.
//!
//! Routines hosted beside the hub reach it through [`RoutinePort`] (implemented by
//! [`Hub`]); what the host knows of its routines reaches the channels through
//! [`Routines`].
//!
//! When it starts, a channel shows again what `approvals(Some(Pending))` lists: questions
//! asked before a restart wait there, not in any stream.
//!
//! The binary builds the hub ([`Hub::open`] on `state.db`'s [`StateDb`]), calls
//! [`Hub::start`] once (the cross-check of stored questions against the audit
//! log's answers, recovery, expiry) and then [`Hub::run_channels`] until SIGTERM. A
//! channel that fails stops alone: the hub logs why, keeps it in [`Hub::channels`] (what a
//! page shows) and tells [`Hub::channel_stops`] (what the binary audits); the other
//! channels go on.
//!
//! Layout: `hub.rs` the API, `types.rs` what it takes and gives, `factory.rs` the agents, `turns.rs` one session's turns and how a waiting turn is
//! resumed or closed, `unawaited.rs` answers nothing waits on, `expiry.rs` deadlines and recovery, `held_turns.rs` which of several hubs resumes a decided question's turn, `health.rs` whether the hub still serves (a watchdog's question), `stops.rs` SIGTERM and a channel that stops, `people.rs` whose a conversation is and who may answer it, `grants.rs` grants listed and revoked, `port.rs` the ports and their adapters over the hub, `check.rs`
//! start-up's cross-check of stored questions, `ids.rs`
//! new conversations' ids (128 random bits; a taken one is drawn again, never reused).

mod channel;
mod check;
mod expiry;
mod factory;
mod grants;
mod health;
mod held_turns;
mod hub;
mod ids;
mod live;
mod passkey_step;
mod people;
mod port;
mod stops;
mod titles;
mod turns;
mod types;
mod unawaited;

pub use channel::{Channel, ChannelError, ChannelStatus};
pub use factory::{GrantPerson, SessionTools, StoredFactory};
pub use health::Unhealthy;
pub use hub::{
    ChannelEvents, ConversationEvent, ConversationInfo, Hub, HubOptions, OpenError, Opened,
    Recovery, Refused, RefusedGrant, Reply, SessionEvent, SessionFactory,
};
pub use passkey_step::{PASSKEY_ELSEWHERE_REASON, PasskeyElsewhere, PasskeyStep};
pub use people::{ApproversOf, HubPeople, only_approvers};
pub use port::{
    ChannelPort, RefusedAnswer, RoutineOrigin, RoutinePort, RoutineTurn, Routines, WebhookDelivery,
};
pub use stops::{report_channel_stops, stop_signal};

/// Why a grant asked for with a yes cannot be given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GrantRefused {
    /// The question offered none.
    #[error("this question offers no grant: answer approve or reject")]
    NotOffered,
    /// Its hours or uses are out of bounds.
    #[error(transparent)]
    OutOfBounds(#[from] tau_protocol::GrantRequestError),
}

/// What keeps a conversation in use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum InUse {
    #[error("a question waits in this conversation: answer it first")]
    QuestionWaits,
    #[error("a turn runs in this conversation: cancel it first")]
    TurnRuns,
}

/// A title a conversation cannot have (empty, too long, a control character): the title
/// asked for, and the store's words for what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{why}")]
pub struct InvalidTitle {
    pub title: Option<String>,
    pub why: tau_state::TitleError,
}

/// What the hub could not do; nothing ran because of it.
#[derive(Debug, thiserror::Error)]
pub enum HubError {
    /// No stored question has that id, or it belongs to another channel.
    #[error("no approval '{0}' on this channel")]
    UnknownApproval(String),
    /// No conversation of this channel talks to that session.
    #[error("no session '{0}' on this channel")]
    UnknownSession(String),
    /// The session could not be opened (another tau has it open, the store failed).
    #[error("session '{session}' cannot be opened: {reason}")]
    Open { session: String, reason: String },
    /// Too many messages of this conversation wait for their turn already.
    #[error("too many messages wait in this conversation; try again when it has answered")]
    Busy,
    #[error("the hub is shutting down")]
    ShuttingDown,
    /// A grant was asked for that this question cannot give; nothing was decided.
    #[error(transparent)]
    Grant(#[from] GrantRefused),
    /// The answer was not the answerer's to give (another person's conversation, or a
    /// question only its approvers answer); nothing was decided. Says why.
    #[error("{0}")]
    NotYours(String),
    /// The conversation is in use; nothing was changed.
    #[error(transparent)]
    InUse(#[from] InUse),
    /// A title the conversation cannot have; nothing was renamed.
    #[error(transparent)]
    Title(#[from] InvalidTitle),
    /// A routine's turn did not end within `waited`; its questions stay as they are.
    #[error("the turn did not end in time")]
    TimedOut { waited: std::time::Duration },
    /// `state.db` could not be read or written (its own words).
    #[error(transparent)]
    Store(#[from] tau_state::StateError),
    /// A stored turn, or the questions it waits on, could not be read.
    #[error(transparent)]
    StoredTurn(#[from] tau_core::StoredTurnError),
    /// A session's stored history could not be read.
    #[error(transparent)]
    Session(#[from] tau_agent::SessionError),
    /// No new conversation could be made: no randomness for its id, a channel name that
    /// makes no session id, or every id drawn was taken.
    #[error(transparent)]
    NoRandomness(#[from] tau_core::NoRandomness),
    #[error(transparent)]
    InvalidSessionId(#[from] tau_protocol::InvalidSessionId),
    #[error("no unused id for a new {channel} conversation after {attempts} tries")]
    NoFreshId { channel: String, attempts: usize },
    /// A yes that takes a passkey, given where none can be asked: nothing was approved.
    #[error(transparent)]
    PasskeyElsewhere(#[from] PasskeyElsewhere),
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn what_failed_is_typed_and_a_person_reads_the_same_words() {
        let errors = [
            HubError::from(GrantRefused::NotOffered),
            HubError::from(GrantRefused::from(tau_protocol::GrantRequestError::Hours(
                721,
            ))),
            HubError::from(InUse::QuestionWaits),
            HubError::from(InUse::TurnRuns),
            HubError::from(InvalidTitle {
                title: Some(String::new()),
                why: tau_state::TitleError::Empty,
            }),
            HubError::TimedOut {
                waited: std::time::Duration::from_secs(30),
            },
        ];
        assert_eq!(
            errors.map(|error| error.to_string()),
            [
                "this question offers no grant: answer approve or reject",
                "a grant lasts 1 to 720 hours (30 days), got 721",
                "a question waits in this conversation: answer it first",
                "a turn runs in this conversation: cancel it first",
                "a title cannot be empty",
                "the turn did not end in time",
            ]
        );
    }
}
