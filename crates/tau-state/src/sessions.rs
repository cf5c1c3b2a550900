//! Sessions: a conversation's messages, one row each in order, and the agent's state
//! beside them, each kept as the JSON text it was given (the loop's own shape, which this
//! crate does not know). `tau-core` puts `tau-agent`'s `SessionRepository` over them.
//!
//! Each message is its own commit before the loop goes on, so a killed process loses
//! nothing it wrote; [`Sessions::flush`] (the end of each invocation) puts the turn on the
//! disk, so a power cut costs at most the turn in progress.

use std::time::{SystemTime, UNIX_EPOCH};

use rusqlite::params;
use serde_json::Value;
use tau_protocol::SessionId;

use crate::error::StateError;
use crate::handles::Sessions;

/// One line of a session listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredSession {
    pub id: SessionId,
    /// Unix seconds.
    pub created_at: i64,
    pub updated_at: i64,
    pub message_count: u64,
}

/// A stored message: its index in the session and the JSON text it was stored as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredMessage {
    pub index: u64,
    pub body: String,
}

/// Message `?2` of session `?1` (`?3` its body, `?4` the time), stored only when it is
/// the next one: otherwise its index is NULL, which the table refuses, and the write
/// fails whole. The primary key (session_id, idx) answers "the next one" from its last
/// entry, where a COUNT(*) would read every row of the session on every append.
const APPEND_IF_NEXT: &str = "INSERT INTO messages (session_id, idx, body, created_at) \
     VALUES (?1, CASE WHEN (SELECT COALESCE(MAX(idx) + 1, 0) FROM messages \
     WHERE session_id = ?1) = ?2 THEN ?2 END, ?3, ?4)";
/// The session's `updated_at` (`?2`), with a message: at most one write a second, a
/// message written in the same second as the last one leaves the session row, and its
/// page, alone.
const TOUCH: &str = "UPDATE sessions SET updated_at = ?2 WHERE id = ?1 AND updated_at <> ?2";

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

fn index_to_sql(index: u64) -> i64 {
    i64::try_from(index).unwrap_or(i64::MAX)
}

/// The text of a message's first text block (`{"content": [{"text": ...}, ...]}`, the
/// shape search reads too); `None` for a body that is not such a message.
fn first_text(body: &str) -> Option<String> {
    let message: Value = serde_json::from_str(body).ok()?;
    message
        .get("content")?
        .as_array()?
        .iter()
        .find_map(|block| block.get("text")?.as_str().map(str::to_owned))
}

impl Sessions {
    /// Makes every write so far survive a power cut (`StateDb::flush`): the end of each
    /// turn.
    pub fn flush(&self) -> Result<(), StateError> {
        self.db.flush()
    }

    /// True when a session of that id is stored.
    pub fn session_exists(&self, id: &SessionId) -> Result<bool, StateError> {
        self.db.read(|c| {
            Ok(c.query_optional(
                "SELECT 1 FROM sessions WHERE id = ?1",
                params![id.as_str()],
                |_| Ok(()),
            )?
            .is_some())
        })
    }

    /// The text of a session's first message (the person's first prompt), what a
    /// channel names the conversation by; `None` for a session without one.
    pub fn first_prompt(&self, id: &SessionId) -> Result<Option<String>, StateError> {
        let body: Option<String> = self.db.read(|c| {
            c.query_optional(
                "SELECT body FROM messages WHERE session_id = ?1 AND idx = 0",
                params![id.as_str()],
                |row| row.get(0),
            )
        })?;
        // A message that does not read names nothing; the session itself says why when
        // it is opened.
        Ok(body.as_deref().and_then(first_text))
    }

    /// Creates the session when it does not exist; true when it was created.
    pub fn ensure_session(&self, id: &SessionId) -> Result<bool, StateError> {
        let now = now();
        Ok(self.db.write_statement(
            false,
            "INSERT INTO sessions (id, created_at, updated_at) VALUES (?1, ?2, ?2) \
             ON CONFLICT DO NOTHING",
            params![id.as_str(), now],
        )? == 1)
    }

    /// Stores message number `index` (0-based, in order) of session `id`, `body` as given,
    /// in its own transaction; [`StateError::OutOfOrder`] (nothing written) when `index`
    /// is not the next one.
    pub fn append_message(&self, id: &SessionId, index: u64, body: &str) -> Result<(), StateError> {
        let now = now();
        let appended = self.db.write_statements(
            false,
            &[
                (
                    APPEND_IF_NEXT,
                    params![id.as_str(), index_to_sql(index), body, now],
                ),
                (TOUCH, params![id.as_str(), now]),
            ],
        );
        match appended {
            Ok(_) => Ok(()),
            Err(error) => {
                // Not the next one: the append failed on purpose and nothing was written.
                let expected = self.message_count(id)?;
                if expected == index {
                    return Err(error);
                }
                Err(StateError::OutOfOrder {
                    session: id.to_string(),
                    expected,
                    given: index,
                })
            }
        }
    }

    /// The messages of session `id` from index `from` on, in order.
    pub fn stored_messages(
        &self,
        id: &SessionId,
        from: u64,
    ) -> Result<Vec<StoredMessage>, StateError> {
        let rows = self.db.read(|c| {
            c.query_map(
                "SELECT idx, body FROM messages WHERE session_id = ?1 AND idx >= ?2 ORDER BY idx",
                params![id.as_str(), index_to_sql(from)],
                |row| Ok((row.get::<_, i64>(0)?, row.get::<_, String>(1)?)),
            )
        })?;
        Ok(rows
            .into_iter()
            .map(|(index, body)| StoredMessage {
                index: u64::try_from(index).unwrap_or(0),
                body,
            })
            .collect())
    }

    /// How many messages session `id` holds.
    pub fn message_count(&self, id: &SessionId) -> Result<u64, StateError> {
        // The last index plus one, from the key's last entry: messages are stored in order
        // from 0, so it is their count without reading every row.
        let next: i64 = self.db.read(|c| {
            c.query_row(
                "SELECT COALESCE(MAX(idx) + 1, 0) FROM messages WHERE session_id = ?1",
                params![id.as_str()],
                |row| row.get(0),
            )
        })?;
        Ok(u64::try_from(next).unwrap_or(0))
    }

    /// Keeps `body` (JSON text) as the agent's state of session `id`, in place of the last.
    pub fn save_agent_state(&self, id: &SessionId, body: &str) -> Result<(), StateError> {
        self.db.write_statement(
            false,
            "INSERT INTO agent_state (session_id, body) VALUES (?1, ?2)
             ON CONFLICT(session_id) DO UPDATE SET body = excluded.body",
            params![id.as_str(), body],
        )?;
        Ok(())
    }

    /// The agent's state of session `id`, as stored; `None` when none was saved.
    pub fn agent_state(&self, id: &SessionId) -> Result<Option<String>, StateError> {
        self.db.read(|c| {
            c.query_optional(
                "SELECT body FROM agent_state WHERE session_id = ?1",
                params![id.as_str()],
                |row| row.get(0),
            )
        })
    }

    /// Every stored session, most recently updated first.
    pub fn list_sessions(&self) -> Result<Vec<StoredSession>, StateError> {
        let rows = self.db.read(|c| {
            c.query_map("SELECT s.id, s.created_at, s.updated_at,
                        (SELECT COALESCE(MAX(m.idx) + 1, 0) FROM messages m WHERE m.session_id = s.id)
                 FROM sessions s ORDER BY s.updated_at DESC, s.id", params![], |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    row.get::<_, i64>(1)?,
                    row.get::<_, i64>(2)?,
                    row.get::<_, i64>(3)?,
                ))
            })
        })?;
        Ok(rows
            .into_iter()
            // A row written by something else with an unusable id is skipped, not fatal.
            .filter_map(|(id, created_at, updated_at, count)| {
                Some(StoredSession {
                    id: SessionId::parse(&id).ok()?,
                    created_at,
                    updated_at,
                    message_count: u64::try_from(count).unwrap_or(0),
                })
            })
            .collect())
    }

    /// Deletes session `id` with its messages and state; true when there was one.
    pub fn delete_session(&self, id: &SessionId) -> Result<bool, StateError> {
        self.db.write(|tx| {
            Ok(tx.execute("DELETE FROM sessions WHERE id = ?1", params![id.as_str()])? == 1)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_stores::TestStore;
    use pretty_assertions::assert_eq;

    fn open(dir: &TestStore) -> Sessions {
        dir.open().sessions()
    }

    const HI: &str = r#"{"role":"user","content":[{"text":"hi"}]}"#;
    const HELLO: &str = r#"{"role":"assistant","content":[{"text":"hello"}]}"#;

    fn stored(index: u64, body: &str) -> StoredMessage {
        StoredMessage {
            index,
            body: body.to_owned(),
        }
    }

    #[test]
    fn a_message_larger_than_a_socket_s_buffer_goes_and_comes_back_whole() {
        for dir in crate::test_stores::stores() {
            let store = open(&dir);
            let id = SessionId::parse("big").unwrap();
            store.ensure_session(&id).unwrap();
            // 8 MiB: many times what a socket takes at once, both ways.
            let text = "0123456789abcdef".repeat(512 * 1024);
            let body = serde_json::json!({"role": "user", "content": [{"text": text}]}).to_string();
            store.append_message(&id, 0, &body).unwrap();
            store.append_message(&id, 1, HELLO).unwrap();
            let stored = store.stored_messages(&id, 0).unwrap();
            assert_eq!(stored.len(), 2, "{}", dir.kind);
            assert!(stored[0].body == body, "{}: the body changed", dir.kind);
        }
    }

    #[test]
    fn a_message_out_of_order_writes_nothing_not_even_the_session_s_time() {
        for dir in crate::test_stores::stores() {
            let kind = dir.kind;
            let db = dir.open();
            let store = db.sessions();
            let id = SessionId::parse("hall").unwrap();
            store.ensure_session(&id).unwrap();
            store.append_message(&id, 0, HI).unwrap();
            let set_old = |at: i64| {
                db.write(|c| {
                    c.execute(
                        "UPDATE sessions SET updated_at = ?1 WHERE id = 'hall'",
                        params![at],
                    )
                })
                .unwrap()
            };
            let updated = || store.list_sessions().unwrap()[0].updated_at;
            set_old(7);
            // The last message again, and one past the next: both refused.
            for given in [0, 2] {
                let error = store.append_message(&id, given, HELLO).unwrap_err();
                assert_eq!(
                    error.to_string(),
                    format!("session 'hall' expected message 1 next but was given {given}"),
                    "{kind}"
                );
                assert_eq!(updated(), 7, "{kind}: nothing written");
            }
            assert_eq!(store.stored_messages(&id, 0).unwrap(), vec![stored(0, HI)]);
            // The next one is stored and moves the session's time.
            store.append_message(&id, 1, HELLO).unwrap();
            assert!(updated() > 7, "{kind}");
            assert_eq!(store.message_count(&id).unwrap(), 2, "{kind}");
        }
    }

    #[test]
    fn messages_and_state_round_trip_and_delete_cascades() {
        for dir in crate::test_stores::stores() {
            let id = SessionId::parse("kitchen").unwrap();
            {
                let store = open(&dir);
                assert!(store.ensure_session(&id).unwrap());
                assert!(!store.ensure_session(&id).unwrap());
                store.append_message(&id, 0, HI).unwrap();
                store.append_message(&id, 1, HELLO).unwrap();
                let error = store.append_message(&id, 5, HI).unwrap_err();
                assert_eq!(
                    error.to_string(),
                    "session 'kitchen' expected message 2 next but was given 5"
                );
                store
                    .save_agent_state(&id, r#"{"removedCount":1}"#)
                    .unwrap();
            }
            let store = open(&dir);
            assert_eq!(
                store.stored_messages(&id, 0).unwrap(),
                vec![stored(0, HI), stored(1, HELLO)]
            );
            assert_eq!(
                store.stored_messages(&id, 1).unwrap(),
                vec![stored(1, HELLO)]
            );
            assert_eq!(store.message_count(&id).unwrap(), 2);
            assert_eq!(
                store.agent_state(&id).unwrap().as_deref(),
                Some(r#"{"removedCount":1}"#)
            );
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
            assert_eq!(store.agent_state(&id).unwrap(), None);
        }
    }

    /// What a message is stored as is what it was given, byte for byte: the crate above
    /// reads it back with the types it wrote it with.
    #[test]
    fn a_body_is_kept_as_given_even_when_it_does_not_read() {
        for dir in crate::test_stores::stores() {
            let store = open(&dir);
            let id = SessionId::parse("s").unwrap();
            store.ensure_session(&id).unwrap();
            store.append_message(&id, 0, "{broken").unwrap();
            assert_eq!(
                store.stored_messages(&id, 0).unwrap(),
                vec![stored(0, "{broken")]
            );
            assert_eq!(store.first_prompt(&id).unwrap(), None);
        }
    }

    #[test]
    fn the_first_prompt_is_the_first_text_of_the_first_message() {
        for dir in crate::test_stores::stores() {
            let store = open(&dir);
            let id = SessionId::parse("s").unwrap();
            store.ensure_session(&id).unwrap();
            assert_eq!(store.first_prompt(&id).unwrap(), None);
            store
            .append_message(
                &id,
                0,
                r#"{"role":"user","content":[{"toolResult":{"toolUseId":"t1","status":"success","content":[{"text":"no"}]}},{"text":"water the plants"}]}"#,
            )
            .unwrap();
            store.append_message(&id, 1, HELLO).unwrap();
            assert_eq!(
                store.first_prompt(&id).unwrap().as_deref(),
                Some("water the plants")
            );
        }
    }

    #[test]
    fn flush_leaves_everything_in_the_database_file() {
        // The file and its log are SQLite's alone.
        {
            let dir = crate::test_stores::sqlite();
            let id = SessionId::parse("s").unwrap();
            let store = open(&dir);
            store.ensure_session(&id).unwrap();
            for index in 0..50 {
                let body = format!(r#"{{"role":"user","content":[{{"text":"m{index}"}}]}}"#);
                store.append_message(&id, index, &body).unwrap();
            }
            store.flush().unwrap();
            // Every frame of the log was copied into the database file: (busy, log frames,
            // frames copied).
            let (busy, log, copied): (i64, i64, i64) = store
                .db
                .read(|c| {
                    c.query_row("PRAGMA wal_checkpoint(PASSIVE)", params![], |row| {
                        Ok((row.get(0)?, row.get(1)?, row.get(2)?))
                    })
                })
                .unwrap();
            assert_eq!((busy, log), (0, copied));
            assert!(log > 0);
        }
    }
}
