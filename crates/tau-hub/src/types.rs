//! The types of the hub's API: what a channel sends, receives and is told.

use std::time::Duration;

use async_trait::async_trait;
use tau_core::{EventBus, TauAgent, approval::DurableQuestions};
use tau_protocol::{ChannelEvent, GrantRequest, SessionId};
use tau_state::{ApprovalRow, Conversation};
use tokio::sync::broadcast;

/// What happens in a session, in order, as its subscribers see it.
// Nearly every event is a turn's: boxing it would allocate for each one to save the bytes
// of the rare prompt.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum SessionEvent {
    /// A person's message, as the turn that answers it starts.
    Prompt { text: String },
    /// What the turn did; the state is in the fields.
    Turn(ChannelEvent),
}

/// One event of one of a channel's conversations (see `ChannelPort::events`).
#[derive(Debug, Clone, PartialEq)]
pub struct ConversationEvent {
    pub conversation: Conversation,
    pub event: SessionEvent,
}

/// The events of every conversation of one channel (or of every channel), as they
/// happen.
pub struct ChannelEvents {
    /// `None`: every channel's.
    pub(crate) channel: Option<String>,
    pub(crate) receiver: broadcast::Receiver<ConversationEvent>,
}

impl ChannelEvents {
    /// The next event of these conversations; `Lagged` when the reader fell behind (what
    /// it missed is in the store), `Closed` when the hub is gone.
    pub async fn recv(&mut self) -> Result<ConversationEvent, broadcast::error::RecvError> {
        loop {
            let event = self.receiver.recv().await?;
            if self
                .channel
                .as_ref()
                .is_none_or(|channel| event.conversation.channel == *channel)
            {
                return Ok(event);
            }
        }
    }
}

/// A person's answer to a stored question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// A plain yes. It does not approve a question whose card asks for a second step.
    Approve,
    /// A yes with what the person typed or pressed for the second step (the device's name
    /// or the number on its card); it approves only when that passes the step.
    Confirm(String),
    /// A yes that also asks for a grant ("yes, and allow this again"): refused with
    /// [`crate::HubError::Grant`] when the question offered none or the request is out of
    /// bounds, so a person never believes a grant was made when none was.
    ApproveWithGrant(GrantRequest),
    /// A yes a passkey confirmed: the channel (TauBar) checked an assertion bound to this
    /// question. It stands in for the second step.
    Passkey,
    Reject,
}

/// A conversation's agent, as the binary builds it.
pub struct Opened {
    /// Built with the `DurableQuestions` the hub passed and the bus from
    /// [`SessionFactory::events`].
    pub agent: TauAgent,
    /// Kept while the hub has the session open: whatever keeps another tau off it.
    pub guard: Box<dyn Send + Sync>,
}

/// Why a session could not be opened (or the audit log read for the start-up check).
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// `state.db` could not be read for the session.
    #[error(transparent)]
    Store(#[from] tau_state::StateError),
    /// The session's stored history does not read.
    #[error(transparent)]
    Session(#[from] tau_agent::SessionError),
    /// No agent could be built over the session.
    #[error(transparent)]
    Build(#[from] tau_core::BuildError),
    /// The audit log could not be read.
    #[error("cannot read the audit log: {0}")]
    AuditLog(#[source] std::io::Error),
    /// The conversation's own tools do not fit in the catalog.
    #[error(transparent)]
    Tools(#[from] tau_core::CatalogError),
    /// The session is not this process's to open: another tau holds its lock, or the lock
    /// could not be taken (the factory's own words).
    #[error(transparent)]
    Locked(Box<dyn std::error::Error + Send + Sync>),
}

/// Builds hub conversations' agents; the binary knows the model, the tools, the config.
#[async_trait]
pub trait SessionFactory: Send + Sync {
    /// The bus a session's events go to (the audit log tagged with the session). The hub
    /// records answers there too, also while the session is not open.
    fn events(&self, session: &SessionId) -> EventBus;

    /// The audit log's `approval` lines (how stored questions were answered, as recorded
    /// when they were): start-up confirms every approval it would act on against them.
    /// Read once per start, and only when some stored question is approved; an error
    /// confirms nothing, so every approval waiting to run is refused.
    fn recorded_answers(&self) -> Result<Vec<tau_state::RecordedAnswer>, OpenError>;

    /// What the audit log records of grants: start-up confirms every live grant against
    /// it, as the gate does before each use. `None` (the default): nothing to confirm
    /// against at start; each gate's own ledger still confirms every use.
    fn grant_ledger(&self) -> Option<std::sync::Arc<dyn tau_core::GrantLedger>> {
        None
    }

    /// True when another tau has `session` open now (its lock is taken): a call let
    /// through there may still be running, so start-up does not close it. The default:
    /// nobody else opens sessions.
    fn open_elsewhere(&self, _session: &SessionId) -> bool {
        false
    }

    /// Builds the agent of `session` with `durable` (tier-2 questions are stored) on
    /// `events`, and takes whatever keeps other processes off the session.
    async fn open(
        &self,
        session: &SessionId,
        durable: DurableQuestions,
        events: EventBus,
    ) -> Result<Opened, OpenError>;
}

/// The hub's settings.
#[derive(Clone)]
pub struct HubOptions {
    /// How long a stored question waits (`[approval] remote_timeout_seconds`).
    pub remote_timeout: Duration,
    /// Where the hub's own audit lines go, those of no conversation (an answer a channel
    /// did not count).
    pub audit: EventBus,
    /// The language of what the hub itself tells a conversation (an answer it did not use).
    pub language: tau_core::Language,
    /// Which questions take a passkey once anyone has one, and where TauBar is.
    pub passkey_step: crate::PasskeyStep,
    /// The household, and who alone may answer which questions.
    pub people: crate::people::HubPeople,
}

/// A conversation as a channel lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct ConversationInfo {
    pub conversation: Conversation,
    pub message_count: u64,
    /// Unix seconds of the last stored message (or the start).
    pub updated_at: i64,
    /// A turn runs or waits to run.
    pub busy: bool,
    /// Questions of this session still waiting for an answer.
    pub pending_approvals: usize,
    /// What the conversation is called: the title a person gave it, else its first
    /// prompt's first line (as written: a channel shows it through the display function);
    /// `None` for a conversation with no message yet.
    pub title: Option<String>,
}

/// What `start` found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Recovery {
    /// Approved calls that were running when the hub stopped (their result never
    /// stored): not run again, closed as `effect_uncertain`.
    pub uncertain: usize,
    /// Questions whose turn was given up while the hub was down, now cancelled.
    pub cancelled: usize,
    /// Questions past their deadline, now expired.
    pub expired: usize,
    /// Decided questions whose turn goes on now (the hub stopped before it could).
    pub resumed: usize,
    /// Questions still waiting, shown again on their channels.
    pub pending: Vec<ApprovalRow>,
    /// Questions that were not what tau wrote (edited in `state.db` while the hub was
    /// down): closed, never acted on.
    pub refused: Vec<Refused>,
    /// Live grants that were not what tau wrote (a row written or changed in `state.db`
    /// behind tau's back): revoked, never used (or, when the audit log could not be
    /// read, covering nothing until it can).
    pub refused_grants: Vec<RefusedGrant>,
}

/// A grant start-up did not trust, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct RefusedGrant {
    pub grant: tau_protocol::Grant,
    pub why: String,
}

/// A stored question start-up did not trust, as closed, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Refused {
    pub row: ApprovalRow,
    pub why: String,
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use pretty_assertions::assert_eq;

    use super::*;

    /// What a person reads is what the failure said; the failure itself stays reachable.
    #[test]
    fn an_open_error_keeps_what_failed() {
        let audit = OpenError::AuditLog(std::io::Error::other("disk gone"));
        assert_eq!(audit.to_string(), "cannot read the audit log: disk gone");
        assert_eq!(
            audit.source().map(ToString::to_string).as_deref(),
            Some("disk gone")
        );
        let locked = OpenError::Locked("session 's' is already open in another tau".into());
        assert_eq!(
            locked.to_string(),
            "session 's' is already open in another tau"
        );
        let store = OpenError::from(tau_state::StateError::Vanished {
            channel: "web".into(),
            key: "a".into(),
        });
        assert_eq!(store.to_string(), "state.db: conversation web/a vanished");
        assert!(matches!(store, OpenError::Store(_)));
    }
}
