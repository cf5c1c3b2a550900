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
    #[error(
        "state.db was last written by a newer tau (schema version {found}); this tau knows versions up to {known}: use that tau, or a copy of the file"
    )]
    Newer { found: i64, known: i64 },
    /// A stored row that does not read as what it must be; never taken for a default.
    #[error("state.db: {what} is unreadable: {why}")]
    Unreadable { what: String, why: String },
    #[error("state.db: {0}")]
    Invalid(String),
}

impl StateError {
    pub(crate) fn unreadable(what: impl Into<String>, why: impl std::fmt::Display) -> Self {
        Self::Unreadable {
            what: what.into(),
            why: why.to_string(),
        }
    }
}
