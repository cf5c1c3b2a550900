//! Sessions: a conversation and the agent's state, stored so a restart loses nothing.
//! The loop knows only [`SessionRepository`]; `tau-core`'s `StoredSessions` keeps them in
//! `state.db`.

use tau_protocol::{InvalidSessionId, SessionId};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::interrupt::InterruptState;
use crate::message::Message;

/// What the agent keeps besides its messages.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentState {
    #[serde(default)]
    pub interrupt_state: InterruptState,
    /// Stored messages the conversation manager dropped from the live history.
    #[serde(default)]
    pub removed_count: u64,
    /// Free values for the layers above the loop.
    #[serde(default)]
    pub values: Map<String, Value>,
}

/// One line of a session listing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionSummary {
    pub id: SessionId,
    /// Unix seconds.
    pub created_at: i64,
    pub updated_at: i64,
    pub message_count: u64,
}

/// What can go wrong with stored sessions.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error(transparent)]
    InvalidId(#[from] InvalidSessionId),
    /// The store could not be read or written; the store's own error is the source.
    #[error("session store error: {0}")]
    Store(#[source] Box<dyn std::error::Error + Send + Sync>),
    #[error("session '{session}' has an unreadable record ({what}): {error}")]
    Corrupt {
        session: String,
        what: String,
        #[source]
        error: serde_json::Error,
    },
    #[error("session '{session}' expected message {expected} next but was given {given}")]
    OutOfOrder {
        session: String,
        expected: u64,
        given: u64,
    },
}

/// Where sessions live. A write that returned survives the process being killed;
/// [`sync`](Self::sync) makes every write so far survive a power loss too.
pub trait SessionRepository: Send + Sync {
    /// Creates the session when it does not exist; true when it was created.
    fn ensure_session(&self, id: &SessionId) -> Result<bool, SessionError>;
    /// Stores message number `index` (0-based, in order, each in its own transaction).
    fn append_message(
        &self,
        id: &SessionId,
        index: u64,
        message: &Message,
    ) -> Result<(), SessionError>;
    /// Messages from `from` on, in order.
    fn messages(&self, id: &SessionId, from: u64) -> Result<Vec<Message>, SessionError>;
    fn message_count(&self, id: &SessionId) -> Result<u64, SessionError>;
    fn save_state(&self, id: &SessionId, state: &AgentState) -> Result<(), SessionError>;
    fn load_state(&self, id: &SessionId) -> Result<Option<AgentState>, SessionError>;
    fn list_sessions(&self) -> Result<Vec<SessionSummary>, SessionError>;
    /// True when there was a session to delete.
    fn delete_session(&self, id: &SessionId) -> Result<bool, SessionError>;
    /// Makes every write so far survive a power loss or an OS crash. The agent calls it at
    /// the end of each invocation.
    fn sync(&self) -> Result<(), SessionError> {
        Ok(())
    }
}
