//! What can go wrong with `state.db`.

use tau_protocol::{ApprovalId, GrantId};

/// `state.db` could not be opened, read or written, or holds something that does not read.
/// Whatever depended on it did not happen; a question it could not confirm is refused.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("cannot open {path}: {source}")]
    Open {
        path: String,
        #[source]
        source: rusqlite::Error,
    },
    #[error("cannot make {path} private: {source}")]
    Protect {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("state.db: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// The PostgreSQL store could not be reached when it was opened (`store` names it
    /// without user or password; `why` never holds the password either).
    #[error("cannot connect to {store}: {why}")]
    Connect { store: String, why: String },
    /// The connection to the PostgreSQL store is lost: what was asked did not happen (or,
    /// for a commit cut short, may not have). The next call connects again.
    #[error("{store} is unavailable: {why}; nothing is approved or run until it answers")]
    Unavailable { store: String, why: String },
    /// PostgreSQL refused a statement.
    #[error("{store}: {source}")]
    Postgres {
        store: String,
        #[source]
        source: tokio_postgres::Error,
    },
    /// What only an embedded SQLite file has (a copy through SQLite, a file to check).
    #[error("{what} is not available on {store}: use the database's own tools")]
    Unsupported { what: &'static str, store: String },
    /// The file is at a schema step this tau does not know: a newer tau wrote it. It is
    /// refused and never changed.
    #[error(
        "state.db was written by {by} (schema step {found}); this is tau {this}, which knows steps up to {known}: run {by} or later on this home, or restore a backup made by tau {this} into a new one"
    )]
    Newer {
        found: i64,
        known: i64,
        /// The tau that wrote the schema (`tau 0.2.0`), or `a newer tau` when it did not say.
        by: String,
        /// This tau's version.
        this: String,
    },
    /// A stored row that does not read as what it must be; never taken for a default.
    #[error("state.db: {what} is unreadable: {why}")]
    Unreadable { what: String, why: String },
    /// The file system keeps no write-ahead log beside the file (a network share).
    #[error(
        "state.db: cannot use a write-ahead log here (journal mode stays {mode}); keep tau's home on a local file system"
    )]
    NoWriteAheadLog { mode: String },
    /// A value to store did not encode as JSON; nothing was written.
    #[error("state.db: {what} does not encode: {source}")]
    Encode {
        what: &'static str,
        #[source]
        source: serde_json::Error,
    },
    /// A question with that id is stored already; nothing was written.
    #[error("state.db: approval '{0}' exists already")]
    ApprovalExists(ApprovalId),
    /// `pending` is where a question starts, never an answer to it.
    #[error("state.db: a question cannot be decided as pending")]
    DecidedAsPending,
    /// Only a call a person approved is recorded as let through; nothing was written.
    #[error("state.db: approval '{0}': only a call a person approved is let through")]
    NotApproved(ApprovalId),
    /// A grant with that id is stored already; nothing was written.
    #[error("state.db: grant '{0}' exists already")]
    GrantExists(GrantId),
    /// A grant whose arguments do not hash to its `arguments_sha256`; nothing was written.
    #[error("state.db: grant '{0}': its arguments do not hash to its hash")]
    GrantHash(GrantId),
    /// A grant's time that is not a timestamp; nothing was written.
    #[error("state.db: grant '{grant}': time {time:?}")]
    GrantTime { grant: GrantId, time: String },
    /// A conversation just created or found was gone when read back (deleted by another
    /// process in between).
    #[error("state.db: conversation {channel}/{key} vanished")]
    Vanished { channel: String, key: String },
    /// A title a person typed that cannot be one; nothing was renamed.
    #[error("state.db: {0}")]
    Title(#[from] TitleError),
    /// A backup's destination that SQLite cannot be given.
    #[error("state.db: {0} is not a UTF-8 path")]
    NotUtf8Path(String),
    /// A session's message given out of turn; nothing was written.
    #[error("session '{session}' expected message {expected} next but was given {given}")]
    OutOfOrder {
        session: String,
        expected: u64,
        given: u64,
    },
}

/// Why a title a person typed is not one: their words, shown to them as they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TitleError {
    #[error("a title cannot be empty")]
    Empty,
    #[error("a title is at most {max} characters")]
    TooLong { max: usize },
    #[error("a title cannot hold control characters")]
    ControlCharacters,
}

impl StateError {
    pub(crate) fn encode(what: &'static str) -> impl FnOnce(serde_json::Error) -> Self {
        move |source| Self::Encode { what, source }
    }

    pub(crate) fn unreadable(what: impl Into<String>, why: impl std::fmt::Display) -> Self {
        Self::Unreadable {
            what: what.into(),
            why: why.to_string(),
        }
    }
}
