//! The loop's sessions in `state.db`: `tau-agent`'s [`SessionRepository`] over the
//! sessions table `tau-state` keeps. The store holds each message and the agent's state as
//! the JSON text this adapter writes (the Converse shape of `tau-agent`'s types) and reads
//! it back with the same types, so the store needs nothing of the loop and a channel
//! reaches SQLite without it.

use tau_agent::{AgentState, Message, SessionError, SessionRepository, SessionSummary};
use tau_protocol::SessionId;
use tau_state::{Sessions, StateError, StoredSession};

/// Sessions kept in `state.db`. Cheap to clone: every clone is the same connection.
#[derive(Debug, Clone)]
pub struct StoredSessions {
    db: Sessions,
}

impl StoredSessions {
    pub fn new(db: Sessions) -> Self {
        Self { db }
    }
}

impl From<Sessions> for StoredSessions {
    fn from(db: Sessions) -> Self {
        Self::new(db)
    }
}

#[allow(clippy::needless_pass_by_value)] // the shape `map_err` wants
fn store(error: StateError) -> SessionError {
    match error {
        StateError::OutOfOrder {
            session,
            expected,
            given,
        } => SessionError::OutOfOrder {
            session,
            expected,
            given,
        },
        other => SessionError::Store(Box::new(other)),
    }
}

fn corrupt(id: &SessionId, what: String, error: serde_json::Error) -> SessionError {
    SessionError::Corrupt {
        session: id.to_string(),
        what,
        error,
    }
}

fn summary(stored: StoredSession) -> SessionSummary {
    SessionSummary {
        id: stored.id,
        created_at: stored.created_at,
        updated_at: stored.updated_at,
        message_count: stored.message_count,
    }
}

/// The agent's saved state of `id` in `db`, read with the loop's types; `None` when none
/// was saved. For a reader that holds the database, not a repository.
pub fn load_agent_state(db: &Sessions, id: &SessionId) -> Result<Option<AgentState>, SessionError> {
    db.agent_state(id)
        .map_err(store)?
        .map(|body| serde_json::from_str(&body).map_err(|e| corrupt(id, "agent state".into(), e)))
        .transpose()
}

impl SessionRepository for StoredSessions {
    fn ensure_session(&self, id: &SessionId) -> Result<bool, SessionError> {
        self.db.ensure_session(id).map_err(store)
    }

    fn append_message(
        &self,
        id: &SessionId,
        index: u64,
        message: &Message,
    ) -> Result<(), SessionError> {
        let body = serde_json::to_string(message)
            .map_err(|e| corrupt(id, format!("message {index}"), e))?;
        self.db.append_message(id, index, &body).map_err(store)
    }

    fn messages(&self, id: &SessionId, from: u64) -> Result<Vec<Message>, SessionError> {
        self.db
            .stored_messages(id, from)
            .map_err(store)?
            .into_iter()
            .map(|stored| {
                serde_json::from_str(&stored.body)
                    .map_err(|e| corrupt(id, format!("message {}", stored.index), e))
            })
            .collect()
    }

    fn message_count(&self, id: &SessionId) -> Result<u64, SessionError> {
        self.db.message_count(id).map_err(store)
    }

    fn save_state(&self, id: &SessionId, state: &AgentState) -> Result<(), SessionError> {
        let body =
            serde_json::to_string(state).map_err(|e| corrupt(id, "agent state".into(), e))?;
        self.db.save_agent_state(id, &body).map_err(store)
    }

    fn load_state(&self, id: &SessionId) -> Result<Option<AgentState>, SessionError> {
        load_agent_state(&self.db, id)
    }

    fn list_sessions(&self) -> Result<Vec<SessionSummary>, SessionError> {
        Ok(self
            .db
            .list_sessions()
            .map_err(store)?
            .into_iter()
            .map(summary)
            .collect())
    }

    fn delete_session(&self, id: &SessionId) -> Result<bool, SessionError> {
        self.db.delete_session(id).map_err(store)
    }

    fn sync(&self) -> Result<(), SessionError> {
        self.db.flush().map_err(store)
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use tau_agent::{ContentBlock, Role, ToolResult, ToolResultContent, ToolResultStatus, ToolUse};

    use super::*;

    fn open(dir: &tempfile::TempDir) -> StoredSessions {
        StoredSessions::new(
            tau_state::StateDb::open(&dir.path().join("state.db"))
                .unwrap()
                .sessions(),
        )
    }

    #[test]
    fn messages_and_state_round_trip_and_delete_cascades() {
        let dir = tempfile::tempdir().unwrap();
        let id = SessionId::parse("kitchen").unwrap();
        {
            let store = open(&dir);
            assert!(store.ensure_session(&id).unwrap());
            assert!(!store.ensure_session(&id).unwrap());
            store
                .append_message(&id, 0, &Message::user_text("hi"))
                .unwrap();
            store
                .append_message(&id, 1, &Message::assistant_text("hello"))
                .unwrap();
            let error = store
                .append_message(&id, 5, &Message::user_text("gap"))
                .unwrap_err();
            assert!(
                matches!(error, SessionError::OutOfOrder { .. }),
                "{error:?}"
            );
            assert_eq!(
                error.to_string(),
                "session 'kitchen' expected message 2 next but was given 5"
            );
            let state = AgentState {
                removed_count: 1,
                ..AgentState::default()
            };
            store.save_state(&id, &state).unwrap();
        }
        let store = open(&dir);
        assert_eq!(
            store.messages(&id, 0).unwrap(),
            vec![Message::user_text("hi"), Message::assistant_text("hello")]
        );
        assert_eq!(
            store.messages(&id, 1).unwrap(),
            vec![Message::assistant_text("hello")]
        );
        assert_eq!(store.message_count(&id).unwrap(), 2);
        assert_eq!(store.load_state(&id).unwrap().unwrap().removed_count, 1);
        let listed = store.list_sessions().unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!(
            (listed[0].id.as_str(), listed[0].message_count),
            ("kitchen", 2)
        );
        assert!(store.delete_session(&id).unwrap());
        assert!(!store.delete_session(&id).unwrap());
        assert_eq!(store.message_count(&id).unwrap(), 0);
        assert_eq!(store.load_state(&id).unwrap(), None);
        store.sync().unwrap();
    }

    /// The rows are the Converse JSON of the loop's types, byte for byte as before the
    /// store stopped knowing them: an existing `state.db` reads the same.
    #[test]
    fn a_message_and_a_state_are_stored_as_their_converse_json() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir);
        let id = SessionId::parse("s").unwrap();
        store.ensure_session(&id).unwrap();
        let asked = Message {
            role: Role::Assistant,
            content: vec![
                ContentBlock::Text("...".into()),
                ContentBlock::ToolUse(ToolUse {
                    tool_use_id: "t1".into(),
                    name: "clock".into(),
                    input: serde_json::json!({}),
                }),
            ],
            source: None,
        };
        let answered = Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult(ToolResult {
                tool_use_id: "t1".into(),
                status: ToolResultStatus::Error,
                content: vec![ToolResultContent::Text("...".into())],
                source: None,
            })],
            source: None,
        };
        store.append_message(&id, 0, &asked).unwrap();
        store.append_message(&id, 1, &answered).unwrap();
        store.save_state(&id, &AgentState::default()).unwrap();
        let bodies: Vec<String> = store
            .db
            .stored_messages(&id, 0)
            .unwrap()
            .into_iter()
            .map(|m| m.body)
            .collect();
        assert_eq!(
            bodies,
            [
                r#"{"role":"assistant","content":[{"text":"..."},{"toolUse":{"toolUseId":"t1","name":"clock","input":{}}}]}"#,
                r#"{"role":"user","content":[{"toolResult":{"toolUseId":"t1","status":"error","content":[{"text":"..."}]}}]}"#,
            ]
        );
        assert_eq!(
            store.db.agent_state(&id).unwrap().as_deref(),
            Some(
                r#"{"interruptState":{"activated":false,"interrupts":{},"toolResults":[]},"removedCount":0,"values":{}}"#
            )
        );
        assert_eq!(store.messages(&id, 0).unwrap(), vec![asked, answered]);
    }

    #[test]
    fn an_unreadable_row_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir);
        let id = SessionId::parse("s").unwrap();
        store.ensure_session(&id).unwrap();
        store.db.append_message(&id, 0, "{broken").unwrap();
        let error = store.messages(&id, 0).unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("session 's' has an unreadable record (message 0)"),
            "{error}"
        );
        store.db.save_agent_state(&id, "{broken").unwrap();
        let error = store.load_state(&id).unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("session 's' has an unreadable record (agent state)"),
            "{error}"
        );
    }

    #[test]
    fn a_store_failure_carries_the_store_s_error_as_its_source() {
        use std::error::Error as _;
        let error = store(StateError::Unreadable {
            what: "a session".into(),
            why: "the disk went away".into(),
        });
        assert_eq!(
            error.to_string(),
            "session store error: state.db: a session is unreadable: the disk went away"
        );
        let source = error.source().and_then(|s| s.downcast_ref::<StateError>());
        assert!(
            matches!(source, Some(StateError::Unreadable { why, .. }) if why == "the disk went away"),
            "{source:?}"
        );
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir);
        let id = SessionId::parse("s").unwrap();
        store.ensure_session(&id).unwrap();
        store.db.append_message(&id, 0, "{broken").unwrap();
        let error = store.messages(&id, 0).unwrap_err();
        assert!(
            error
                .source()
                .is_some_and(|s| s.downcast_ref::<serde_json::Error>().is_some()),
            "{error:?}"
        );
    }
}
