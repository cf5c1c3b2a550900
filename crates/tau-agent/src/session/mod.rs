//! Sessions: a conversation and the agent's state, stored so a restart loses nothing.

mod sqlite;

pub use sqlite::{SqliteSessions, prepare_state_tables};

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::interrupt::InterruptState;
use crate::message::Message;

/// A validated session id: 1 to 64 of `A-Z a-z 0-9 _ - .`, not starting with `.` or `-`,
/// so it is safe as a file name and a command-line argument.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct SessionId(String);

impl SessionId {
    pub fn parse(text: &str) -> Result<Self, SessionError> {
        let valid = (1..=64).contains(&text.len())
            && !text.starts_with(['.', '-'])
            && text
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
        if valid {
            Ok(Self(text.to_owned()))
        } else {
            Err(SessionError::InvalidId {
                id: text.to_owned(),
            })
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for SessionId {
    type Error = SessionError;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        Self::parse(&value)
    }
}

impl From<SessionId> for String {
    fn from(id: SessionId) -> Self {
        id.0
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

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
    #[error(
        "session name {id:?} is invalid: use 1 to 64 letters, digits, '-', '_' or '.', not starting with '.' or '-'"
    )]
    InvalidId { id: String },
    #[error("session store error: {0}")]
    Store(#[from] rusqlite::Error),
    #[error("session store error: cannot sync {path}: {error}")]
    Sync { path: String, error: std::io::Error },
    #[error("session '{session}' has an unreadable record ({what}): {error}")]
    Corrupt {
        session: String,
        what: String,
        error: String,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids_are_safe_names() {
        for ok in ["work", "a.b-c_d", "2026-12-02", &"x".repeat(64)] {
            assert!(SessionId::parse(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "../etc",
            "a/b",
            ".hidden",
            "-rf",
            "sp ace",
            "ü",
            &"x".repeat(65),
            "a\\b",
            "nul\0",
        ] {
            assert!(SessionId::parse(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            SessionId::parse("a/b").unwrap_err().to_string(),
            "session name \"a/b\" is invalid: use 1 to 64 letters, digits, '-', '_' or '.', not starting with '.' or '-'"
        );
    }
}
