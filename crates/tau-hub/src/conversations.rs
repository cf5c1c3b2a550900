//! Conversations: which session a channel's conversation (a web page's tab, a Telegram
//! chat) talks to, kept in `state.db` so a restart finds them again.

use std::path::Path;
use std::sync::{Mutex, MutexGuard, PoisonError};

use jiff::Timestamp;
use rusqlite::{Connection, OptionalExtension, params};
use tau_agent::SessionId;

use crate::HubError;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS conversations (
    channel TEXT NOT NULL,
    key TEXT NOT NULL,
    session TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL,
    PRIMARY KEY (channel, key)
);
";

/// One conversation of a channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conversation {
    pub channel: String,
    /// What the channel calls it (a chat id, the web session's own id).
    pub key: String,
    pub session: SessionId,
    pub created_at: Timestamp,
}

pub(crate) struct Conversations {
    connection: Mutex<Connection>,
}

#[allow(clippy::needless_pass_by_value)] // used as `map_err(store)`
fn store(error: rusqlite::Error) -> HubError {
    HubError::Store(error.to_string())
}

impl Conversations {
    pub(crate) fn open(path: &Path) -> Result<Self, HubError> {
        Self::setup(Connection::open(path).map_err(store)?)
    }

    pub(crate) fn in_memory() -> Result<Self, HubError> {
        Self::setup(Connection::open_in_memory().map_err(store)?)
    }

    fn setup(connection: Connection) -> Result<Self, HubError> {
        tau_agent::prepare_state_tables(&connection, SCHEMA).map_err(store)?;
        Ok(Self {
            connection: Mutex::new(connection),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Connection> {
        self.connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The conversation `(channel, key)`, created with `session` when it is new.
    pub(crate) fn find_or_create(
        &self,
        channel: &str,
        key: &str,
        session: &SessionId,
    ) -> Result<Conversation, HubError> {
        let connection = self.lock();
        connection
            .execute(
                "INSERT OR IGNORE INTO conversations (channel, key, session, created_at) \
                 VALUES (?1, ?2, ?3, ?4)",
                params![channel, key, session.as_str(), Timestamp::now().to_string()],
            )
            .map_err(store)?;
        Self::select_one(
            &connection,
            "channel = ?1 AND key = ?2",
            params![channel, key],
        )?
        .ok_or_else(|| HubError::Store(format!("conversation {channel}/{key} vanished")))
    }

    /// The conversation a session belongs to, if it is a hub conversation.
    pub(crate) fn of_session(&self, session: &SessionId) -> Result<Option<Conversation>, HubError> {
        Self::select_one(&self.lock(), "session = ?1", params![session.as_str()])
    }

    /// Every conversation of `channel`, oldest first.
    pub(crate) fn of_channel(&self, channel: &str) -> Result<Vec<Conversation>, HubError> {
        let connection = self.lock();
        let mut statement = connection
            .prepare(
                "SELECT channel, key, session, created_at FROM conversations \
                 WHERE channel = ?1 ORDER BY created_at, key",
            )
            .map_err(store)?;
        let rows = statement
            .query_map(params![channel], columns)
            .map_err(store)?;
        let mut out = Vec::new();
        for row in rows {
            out.push(parse(row.map_err(store)?)?);
        }
        Ok(out)
    }

    fn select_one(
        connection: &Connection,
        filter: &str,
        values: impl rusqlite::Params,
    ) -> Result<Option<Conversation>, HubError> {
        connection
            .query_row(
                &format!(
                    "SELECT channel, key, session, created_at FROM conversations WHERE {filter}"
                ),
                values,
                columns,
            )
            .optional()
            .map_err(store)?
            .map(parse)
            .transpose()
    }
}

type Raw = (String, String, String, String);

fn columns(row: &rusqlite::Row<'_>) -> rusqlite::Result<Raw> {
    Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
}

fn parse((channel, key, session, created_at): Raw) -> Result<Conversation, HubError> {
    let bad = || HubError::Store(format!("conversation {channel}/{key} is unreadable"));
    Ok(Conversation {
        session: SessionId::parse(&session).map_err(|_| bad())?,
        created_at: created_at.parse().map_err(|_| bad())?,
        channel,
        key,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn a_conversation_keeps_its_session() {
        let store = Conversations::in_memory().unwrap();
        let first = SessionId::parse("web-a").unwrap();
        let made = store.find_or_create("web", "a", &first).unwrap();
        let other = SessionId::parse("web-b").unwrap();
        let again = store.find_or_create("web", "a", &other).unwrap();
        assert_eq!(made, again, "the first session stays");
        assert_eq!(again.session, first);
        assert_eq!(store.of_session(&first).unwrap(), Some(made.clone()));
        assert_eq!(store.of_session(&other).unwrap(), None);
        store
            .find_or_create("telegram", "42", &SessionId::parse("telegram-42").unwrap())
            .unwrap();
        assert_eq!(store.of_channel("web").unwrap(), vec![made]);
        assert!(
            store.find_or_create("telegram", "43", &first).is_err(),
            "a session belongs to one conversation"
        );
    }
}
