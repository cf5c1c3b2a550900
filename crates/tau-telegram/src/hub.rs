//! What the channel needs from the hub that hosts it, as one trait: the hub's side is one
//! adapter. Conversations are the hub's `(telegram, key)`; the key is the chat id, followed
//! by `.N` once `/new` started the chat's N-th conversation (see [`conversation_key`]).

use async_trait::async_trait;
use tau_protocol::{Allowance, ChannelEvent, GrantId, GrantScope, Source};
use tau_state::{Answered, ApprovalRow, Revoked};

/// The hub could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum HubError {
    /// The hub refused or failed (its own words).
    #[error(transparent)]
    Hub(#[from] tau_hub::HubError),
    /// A conversation with nothing written in it yet cannot be renamed: the hub keeps no
    /// session for it.
    #[error("nothing is written in this conversation yet")]
    NothingWritten,
}

/// A stored question, with the conversation it belongs to.
#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    pub row: ApprovalRow,
    /// The key of the Telegram conversation whose session asked it; `None` when that
    /// session is no Telegram conversation's.
    pub conversation: Option<String>,
}

/// One event of one of this channel's conversations.
#[derive(Debug, Clone, PartialEq)]
pub struct HubEvent {
    pub conversation: String,
    pub event: Happened,
}

/// What happened in a conversation.
#[derive(Debug, Clone, PartialEq)]
pub enum Happened {
    /// A turn's event.
    Turn(ChannelEvent),
    /// A routine's prompt starts a turn (in the chat where its questions are shown): shown
    /// as the routine's, with what fired it, never as the person's.
    RoutinePrompt {
        routine: String,
        /// `webhook doorbell`, `mqtt home/door/+`.
        trigger: String,
        text: String,
    },
}

impl From<ChannelEvent> for Happened {
    fn from(event: ChannelEvent) -> Self {
        Self::Turn(event)
    }
}

/// A person's answer to a question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// The plain Approve button: not enough for a question with a second step.
    Approve,
    /// A number button of a question with a second step: the number pressed.
    Confirm(String),
    /// "Approve, allow again": a yes that also asks for the question's grant, in this
    /// conversation or in every conversation of the person's on Telegram, for the hours
    /// it offers. The hub refuses it (an error, the question still open) when the question
    /// offers none.
    ApproveAlways(GrantScope),
    Reject,
}

/// The conversation key of a chat's `generation`-th conversation (0 before any `/new`).
pub fn conversation_key(chat: i64, generation: u32) -> String {
    if generation == 0 {
        chat.to_string()
    } else {
        format!("{chat}.{generation}")
    }
}

/// The chat a conversation key belongs to; `None` for a key this channel never makes.
pub fn chat_of(key: &str) -> Option<i64> {
    let (chat, generation) = key.split_once('.').unwrap_or((key, "0"));
    generation.parse::<u32>().ok()?;
    chat.parse().ok().filter(|c| *c != 0)
}

/// Why a press did not count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PressRefusal {
    /// The presser is not an owner.
    NotAnOwner,
    /// An owner, in a chat the config does not allow.
    ChatNotAllowed,
    /// The question belongs to another chat's conversation (or none of this channel's).
    OtherConversation,
    /// The button's data is not tau's, or names no question.
    Forged,
    /// An owner's yes without the question's second step (the plain Approve, a wrong
    /// number); the question stays open.
    StepMissing,
    /// A Revoke of a grant that is not the presser's own (or none at all).
    NotYourGrant,
}

impl PressRefusal {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NotAnOwner => "not an owner",
            Self::ChatNotAllowed => "chat not allowed",
            Self::OtherConversation => "question of another conversation",
            Self::Forged => "button data not tau's",
            Self::StepMissing => "a yes without the second step",
            Self::NotYourGrant => "a revoke of a grant not the presser's",
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
    /// How many presses this stands for, when more than one (the rest of a sender's
    /// window, counted).
    pub count: Option<u64>,
}

/// One conversation of a chat, as `/sessions` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatConversation {
    pub key: String,
    /// A person's title, else the first prompt's (untrusted text); `None` before the first
    /// message.
    pub title: Option<String>,
    pub message_count: u64,
    /// Unix seconds of its last message (or its start).
    pub updated_at: i64,
}

/// The hub, as the Telegram channel uses it.
#[async_trait]
pub trait Hub: Send + Sync {
    /// A person's message for the conversation `key`; the turn's events arrive as
    /// [`HubEvent`]s.
    async fn send(&self, key: &str, text: &str) -> Result<(), HubError>;
    /// Someone else's text the person passed on (a forward, a quote) for the conversation
    /// `key`: its turn reads it as `source`'s, outside text.
    async fn send_passed_on(&self, key: &str, text: &str, source: Source) -> Result<(), HubError>;
    /// Cancels the conversation's running turn (and a command it runs); false when none
    /// runs.
    async fn cancel(&self, key: &str) -> Result<bool, HubError>;
    async fn question(&self, approval_id: &str) -> Result<Option<Question>, HubError>;
    /// A person's answer: the hub decides a `pending` question (compare-and-set: the
    /// first answer wins, recorded as decided by `user` on Telegram) and lets the turn go
    /// on; a later answer learns the final state. Deadlines are the hub's to enforce.
    async fn answer(
        &self,
        approval_id: &str,
        reply: Reply,
        user: &str,
    ) -> Result<Answered, HubError>;
    /// This channel's questions still waiting for an answer.
    async fn pending(&self) -> Result<Vec<Question>, HubError>;
    /// Every question still waiting, of every channel, oldest first: what `/pending`
    /// lists. Another channel's is only listed here; its own channel answers it.
    async fn waiting(&self) -> Result<Vec<Question>, HubError>;
    /// Records a press that did not count.
    fn refused_press(&self, press: &RefusedPress);
    /// Where a yes to `approval_id` is given instead, when it takes a passkey (which a
    /// message cannot ask for): the question then offers only Reject.
    fn passkey_elsewhere(&self, approval_id: &str) -> Option<tau_hub::PasskeyElsewhere> {
        let _ = approval_id;
        None
    }
    /// What runs without a question for `user` (a Telegram user id): their live grants on
    /// this channel, oldest first, then the routines' exemptions (revoked by disabling the
    /// routine, not here). What `/grants` lists.
    async fn allowances(&self, user: &str) -> Result<Vec<Allowance>, HubError>;
    /// Revokes a grant `user` made on this channel; anybody else's, or one of another
    /// channel, is `NotFound`. From this on it covers no call.
    async fn revoke(&self, grant: &GrantId, user: &str) -> Result<Revoked, HubError>;
    /// The conversations of `chat`, most recent first; with `search`, only those whose
    /// title or message text holds it.
    async fn conversations(
        &self,
        chat: i64,
        search: Option<&str>,
    ) -> Result<Vec<ChatConversation>, HubError>;
    /// Names the conversation `key` (`None`: back to its first prompt's title); `Err`
    /// says why not (nothing written in it yet, a title too long).
    async fn rename(&self, key: &str, title: Option<&str>) -> Result<(), HubError>;
    /// Deletes the conversation `key` with everything it holds; `false` when nothing was
    /// written in it. `Err` says why not (a turn runs in it, a question of it waits).
    async fn delete(&self, key: &str) -> Result<bool, HubError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_name_the_chat_and_the_conversation() {
        assert_eq!(conversation_key(42, 0), "42");
        assert_eq!(conversation_key(-100_123, 2), "-100123.2");
        for (key, chat) in [
            ("42", Some(42)),
            ("-100123.2", Some(-100_123)),
            ("42.x", None),
            ("42.-1", None),
            ("web-1", None),
            ("0", None),
            ("", None),
        ] {
            assert_eq!(chat_of(key), chat, "{key}");
        }
    }

    #[test]
    fn a_hub_error_reads_as_the_hub_said_it() {
        assert_eq!(
            HubError::from(tau_hub::HubError::Busy).to_string(),
            tau_hub::HubError::Busy.to_string()
        );
        assert_eq!(
            HubError::NothingWritten.to_string(),
            "nothing is written in this conversation yet"
        );
    }
}
