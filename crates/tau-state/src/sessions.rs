//! Sessions: a conversation's messages, one row each in order, and the agent's state
//! beside them. `tau-agent`'s [`SessionRepository`], kept in `state.db`.
//!
//! Each message is its own commit before the loop goes on, so a killed process loses
//! nothing it wrote; [`SessionRepository::sync`] (the end of each invocation) puts the
//! turn on the disk, so a power cut costs at most the turn in progress.

use std::time::{SystemTime, UNIX_EPOCH};

use rusqlite::{OptionalExtension, params};
use tau_agent::{AgentState, Message, SessionError, SessionId, SessionRepository, SessionSummary};

use crate::db::StateDb;
use crate::error::StateError;

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

fn index_to_sql(index: u64) -> i64 {
    i64::try_from(index).unwrap_or(i64::MAX)
}

#[allow(clippy::needless_pass_by_value)] // the shape `map_err` wants
fn store(error: StateError) -> SessionError {
    SessionError::Store(error.to_string())
}

fn corrupt(id: &SessionId, what: String, error: &serde_json::Error) -> SessionError {
    SessionError::Corrupt {
        session: id.to_string(),
        what,
        error: error.to_string(),
    }
}

/// Why an append did not happen, inside the transaction.
enum AppendRefused {
    OutOfOrder { expected: u64 },
    Store(StateError),
}

impl From<rusqlite::Error> for AppendRefused {
    fn from(error: rusqlite::Error) -> Self {
        Self::Store(error.into())
    }
}

impl StateDb {
    /// True when a session of that id is stored.
    pub fn session_exists(&self, id: &SessionId) -> Result<bool, StateError> {
        self.read(|c| {
            Ok(c.prepare_cached("SELECT 1 FROM sessions WHERE id = ?1")?
                .query_row(params![id.as_str()], |_| Ok(()))
                .optional()?
                .is_some())
        })
    }
}

impl StateDb {
    /// The text of a session's first message (the person's first prompt), what a
    /// channel names the conversation by; `None` for a session without one.
    pub fn first_prompt(&self, id: &SessionId) -> Result<Option<String>, StateError> {
        let body: Option<String> = self.read(|c| {
            Ok(
                c.prepare_cached("SELECT body FROM messages WHERE session_id = ?1 AND idx = 0")?
                    .query_row(params![id.as_str()], |row| row.get(0))
                    .optional()?,
            )
        })?;
        // A message that does not read names nothing; the session itself says why when
        // it is opened.
        Ok(body
            .and_then(|body| serde_json::from_str::<Message>(&body).ok())
            .and_then(|message| {
                message.content.into_iter().find_map(|block| match block {
                    tau_agent::ContentBlock::Text(text) => Some(text),
                    tau_agent::ContentBlock::ToolUse(_)
                    | tau_agent::ContentBlock::ToolResult(_) => None,
                })
            }))
    }
}

impl SessionRepository for StateDb {
    fn ensure_session(&self, id: &SessionId) -> Result<bool, SessionError> {
        let now = now();
        self.write(|tx| {
            Ok(tx.execute(
                "INSERT OR IGNORE INTO sessions (id, created_at, updated_at) VALUES (?1, ?2, ?2)",
                params![id.as_str(), now],
            )? == 1)
        })
        .map_err(store)
    }

    fn append_message(
        &self,
        id: &SessionId,
        index: u64,
        message: &Message,
    ) -> Result<(), SessionError> {
        let body = serde_json::to_string(message)
            .map_err(|e| corrupt(id, format!("message {index}"), &e))?;
        let now = now();
        let mut refused = None;
        let written = self.write(|tx| {
            let attempt = || -> Result<(), AppendRefused> {
                // The primary key (session_id, idx) answers this from its last entry,
                // where a COUNT(*) would read every row of the session on every append.
                let expected: i64 = tx
                    .prepare_cached(
                        "SELECT COALESCE(MAX(idx) + 1, 0) FROM messages WHERE session_id = ?1",
                    )?
                    .query_row(params![id.as_str()], |row| row.get(0))?;
                let expected = u64::try_from(expected).unwrap_or(0);
                if expected != index {
                    return Err(AppendRefused::OutOfOrder { expected });
                }
                tx.prepare_cached(
                    "INSERT INTO messages (session_id, idx, body, created_at) VALUES (?1, ?2, ?3, ?4)",
                )?
                .execute(params![id.as_str(), index_to_sql(index), body, now])?;
                // At most one write a second: a message written in the same second as the
                // last one leaves the session row, and its page, alone.
                tx.prepare_cached(
                    "UPDATE sessions SET updated_at = ?2 WHERE id = ?1 AND updated_at <> ?2",
                )?
                .execute(params![id.as_str(), now])?;
                Ok(())
            };
            match attempt() {
                Ok(()) => Ok(()),
                Err(AppendRefused::Store(error)) => Err(error),
                Err(AppendRefused::OutOfOrder { expected }) => {
                    refused = Some(expected);
                    // Nothing was written; roll back by failing the transaction.
                    Err(StateError::Invalid("out of order".into()))
                }
            }
        });
        match (written, refused) {
            (_, Some(expected)) => Err(SessionError::OutOfOrder {
                session: id.to_string(),
                expected,
                given: index,
            }),
            (result, None) => result.map_err(store),
        }
    }

    fn messages(&self, id: &SessionId, from: u64) -> Result<Vec<Message>, SessionError> {
        let bodies = self
            .read(|c| {
                let mut statement = c.prepare_cached(
                    "SELECT idx, body FROM messages WHERE session_id = ?1 AND idx >= ?2 ORDER BY idx",
                )?;
                let rows = statement.query_map(params![id.as_str(), index_to_sql(from)], |row| {
                    Ok((row.get::<_, i64>(0)?, row.get::<_, String>(1)?))
                })?;
                Ok(rows.collect::<Result<Vec<_>, _>>()?)
            })
            .map_err(store)?;
        bodies
            .into_iter()
            .map(|(index, body)| {
                serde_json::from_str(&body).map_err(|e| corrupt(id, format!("message {index}"), &e))
            })
            .collect()
    }

    fn message_count(&self, id: &SessionId) -> Result<u64, SessionError> {
        // The last index plus one, from the key's last entry: messages are stored in order
        // from 0, so it is their count without reading every row.
        let next: i64 = self
            .read(|c| {
                Ok(c.prepare_cached(
                    "SELECT COALESCE(MAX(idx) + 1, 0) FROM messages WHERE session_id = ?1",
                )?
                .query_row(params![id.as_str()], |row| row.get(0))?)
            })
            .map_err(store)?;
        Ok(u64::try_from(next).unwrap_or(0))
    }

    fn save_state(&self, id: &SessionId, state: &AgentState) -> Result<(), SessionError> {
        let body =
            serde_json::to_string(state).map_err(|e| corrupt(id, "agent state".into(), &e))?;
        self.write(|tx| {
            tx.prepare_cached(
                "INSERT INTO agent_state (session_id, body) VALUES (?1, ?2)
                 ON CONFLICT(session_id) DO UPDATE SET body = excluded.body",
            )?
            .execute(params![id.as_str(), body])?;
            Ok(())
        })
        .map_err(store)
    }

    fn load_state(&self, id: &SessionId) -> Result<Option<AgentState>, SessionError> {
        let body: Option<String> = self
            .read(|c| {
                Ok(
                    c.prepare_cached("SELECT body FROM agent_state WHERE session_id = ?1")?
                        .query_row(params![id.as_str()], |row| row.get(0))
                        .optional()?,
                )
            })
            .map_err(store)?;
        body.map(|b| serde_json::from_str(&b).map_err(|e| corrupt(id, "agent state".into(), &e)))
            .transpose()
    }

    fn list_sessions(&self) -> Result<Vec<SessionSummary>, SessionError> {
        let rows = self
            .read(|c| {
                let mut statement = c.prepare_cached(
                    "SELECT s.id, s.created_at, s.updated_at,
                            (SELECT COALESCE(MAX(m.idx) + 1, 0) FROM messages m WHERE m.session_id = s.id)
                     FROM sessions s ORDER BY s.updated_at DESC, s.id",
                )?;
                let rows = statement.query_map([], |row| {
                    Ok((
                        row.get::<_, String>(0)?,
                        row.get::<_, i64>(1)?,
                        row.get::<_, i64>(2)?,
                        row.get::<_, i64>(3)?,
                    ))
                })?;
                Ok(rows.collect::<Result<Vec<_>, _>>()?)
            })
            .map_err(store)?;
        Ok(rows
            .into_iter()
            // A row written by something else with an unusable id is skipped, not fatal.
            .filter_map(|(id, created_at, updated_at, count)| {
                Some(SessionSummary {
                    id: SessionId::parse(&id).ok()?,
                    created_at,
                    updated_at,
                    message_count: u64::try_from(count).unwrap_or(0),
                })
            })
            .collect())
    }

    fn delete_session(&self, id: &SessionId) -> Result<bool, SessionError> {
        self.write(|tx| {
            Ok(tx.execute("DELETE FROM sessions WHERE id = ?1", params![id.as_str()])? == 1)
        })
        .map_err(store)
    }

    fn sync(&self) -> Result<(), SessionError> {
        self.flush().map_err(store)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn open(dir: &tempfile::TempDir) -> StateDb {
        StateDb::open(&dir.path().join("state.db")).unwrap()
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
        assert!(store.session_exists(&id).unwrap());
        assert!(store.delete_session(&id).unwrap());
        assert!(!store.delete_session(&id).unwrap());
        assert!(!store.session_exists(&id).unwrap());
        assert_eq!(store.message_count(&id).unwrap(), 0);
        assert_eq!(store.load_state(&id).unwrap(), None);
    }

    #[test]
    fn an_unreadable_row_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir);
        let id = SessionId::parse("s").unwrap();
        store.ensure_session(&id).unwrap();
        store
            .write(|tx| {
                tx.execute("INSERT INTO messages (session_id, idx, body, created_at) VALUES ('s', 0, '{broken', 0)", [])?;
                Ok(())
            })
            .unwrap();
        let error = store.messages(&id, 0).unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("session 's' has an unreadable record (message 0)"),
            "{error}"
        );
    }

    #[test]
    fn sync_leaves_everything_in_the_database_file() {
        let dir = tempfile::tempdir().unwrap();
        let id = SessionId::parse("s").unwrap();
        let store = open(&dir);
        store.ensure_session(&id).unwrap();
        for index in 0..50 {
            store
                .append_message(&id, index, &Message::user_text(format!("m{index}")))
                .unwrap();
        }
        store.sync().unwrap();
        // Every frame of the log was copied into the database file: (busy, log frames,
        // frames copied).
        let (busy, log, copied): (i64, i64, i64) = store
            .read(|c| {
                Ok(c.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |row| {
                    Ok((row.get(0)?, row.get(1)?, row.get(2)?))
                })?)
            })
            .unwrap();
        assert_eq!((busy, log), (0, copied));
        assert!(log > 0);
    }
}
