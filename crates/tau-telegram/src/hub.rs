//! What the channel needs from the hub that hosts it, as one trait: the hub's side is one
//! adapter. Conversations are the hub's `(telegram, key)`; the key is the chat id.

use async_trait::async_trait;
use tau_core::ChannelEvent;
use tau_core::DecidedBy;
use tau_core::approval::{Answered, ApprovalRow, ApprovalState};

/// The hub could not do what was asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct HubError(pub String);

/// A stored question, with the conversation it belongs to.
#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    pub row: ApprovalRow,
    /// The key of the Telegram conversation whose current session asked it; `None` when
    /// that session is no Telegram conversation's current one (another channel's, or one
    /// replaced by `/new`).
    pub conversation: Option<String>,
}

/// One event of one of this channel's conversations.
#[derive(Debug, Clone, PartialEq)]
pub struct HubEvent {
    pub conversation: String,
    pub event: ChannelEvent,
}

/// Why a press did not count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PressRefusal {
    /// The presser is not an owner.
    NotAnOwner,
    /// An owner, in a chat the config does not allow.
    ChatNotAllowed,
    /// The question belongs to another chat or another session.
    OtherConversation,
    /// The button's data is not tau's, or names no question.
    Forged,
}

impl PressRefusal {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NotAnOwner => "not an owner",
            Self::ChatNotAllowed => "chat not allowed",
            Self::OtherConversation => "question of another chat or session",
            Self::Forged => "button data not tau's",
        }
    }
}

/// A press that changed nothing, for the audit log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefusedPress {
    pub approval_id: Option<String>,
    pub user: Option<i64>,
    pub chat: Option<i64>,
    pub reason: PressRefusal,
}

/// The hub, as the Telegram channel uses it.
#[async_trait]
pub trait Hub: Send + Sync {
    /// A person's message for the conversation `key`; the turn's events arrive as
    /// [`HubEvent`]s.
    async fn send(&self, key: &str, text: &str) -> Result<(), HubError>;
    /// Starts a new session for the conversation.
    async fn new_session(&self, key: &str) -> Result<(), HubError>;
    /// Cancels the conversation's running turn (and a command it runs); false when none
    /// runs.
    async fn cancel(&self, key: &str) -> Result<bool, HubError>;
    async fn question(&self, approval_id: &str) -> Result<Option<Question>, HubError>;
    /// Decides a `pending` question (compare-and-set: the first answer wins) and lets the
    /// turn go on.
    async fn answer(
        &self,
        approval_id: &str,
        to: ApprovalState,
        decided_by: &DecidedBy,
    ) -> Result<Answered, HubError>;
    /// This channel's questions still waiting for an answer.
    async fn pending(&self) -> Result<Vec<Question>, HubError>;
    /// Records a press that did not count.
    fn refused_press(&self, press: &RefusedPress);
}
