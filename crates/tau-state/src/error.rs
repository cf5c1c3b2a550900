//! What can go wrong with `state.db`.

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
    #[error("state.db: {0}")]
    Invalid(String),
    /// A session's message given out of turn; nothing was written.
    #[error("session '{session}' expected message {expected} next but was given {given}")]
    OutOfOrder {
        session: String,
        expected: u64,
        given: u64,
    },
}

impl StateError {
    pub(crate) fn unreadable(what: impl Into<String>, why: impl std::fmt::Display) -> Self {
        Self::Unreadable {
            what: what.into(),
            why: why.to_string(),
        }
    }
}
