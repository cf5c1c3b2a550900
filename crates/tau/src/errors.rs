//! Errors that end the program with exit code 2: usage and configuration mistakes.

use std::fmt;

use tau_protocol::{GrantId, SessionId};

/// A mistake in how tau was called or configured; exits 2.
#[derive(Debug)]
pub(crate) enum UsageError {
    /// No stored session has that name.
    NoSession(SessionId),
    /// No stored grant has that id.
    NoGrant(GrantId),
    /// Any other mistake, in the words of the command that found it.
    Said(String),
}

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoSession(id) => write!(f, "no session named '{id}'"),
            Self::NoGrant(id) => write!(f, "no grant {id}"),
            Self::Said(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for UsageError {}

pub(crate) fn usage(message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(UsageError::Said(message.into()))
}

/// `id` names no stored session; exits 2.
pub(crate) fn no_session(id: &SessionId) -> anyhow::Error {
    anyhow::Error::new(UsageError::NoSession(id.clone()))
}

/// `id` names no stored grant; exits 2.
pub(crate) fn no_grant(id: &GrantId) -> anyhow::Error {
    anyhow::Error::new(UsageError::NoGrant(id.clone()))
}

/// The exit code for an error that ended the program.
pub(crate) fn exit_code(error: &anyhow::Error) -> u8 {
    if error.chain().any(|cause| {
        cause.downcast_ref::<UsageError>().is_some()
            || cause.downcast_ref::<tau_tools::BoundaryError>().is_some()
            || cause
                .downcast_ref::<tau_home::backup::BackupError>()
                .is_some_and(tau_home::backup::BackupError::is_usage)
            || cause
                .downcast_ref::<tau_home::HomeError>()
                .is_some_and(tau_home::HomeError::is_usage)
    }) {
        2
    } else {
        1
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn a_usage_mistake_exits_2_in_its_own_words() {
        let session = SessionId::parse("kitchen").unwrap();
        let grant = GrantId::parse("gr_0123456789abcdef0123456789abcdef").unwrap();
        for (error, text) in [
            (no_session(&session), "no session named 'kitchen'"),
            (
                no_grant(&grant),
                "no grant gr_0123456789abcdef0123456789abcdef",
            ),
            (usage("bad flag"), "bad flag"),
        ] {
            assert_eq!(
                (format!("{error:#}"), exit_code(&error)),
                (text.to_owned(), 2)
            );
        }
        assert_eq!(exit_code(&anyhow::anyhow!("disk gone")), 1);
    }

    #[test]
    fn a_mistake_found_by_another_crate_exits_2_too() {
        let boundary = anyhow::Error::new(tau_tools::BoundaryError::Holds {
            file: "tau.toml".into(),
            workspace: "/".into(),
            relation: "is",
            what: "the root of the file system",
            shown: String::new(),
        });
        let link = anyhow::Error::new(tau_home::HomeError::PlantedLink {
            entry: "/h/workspace".into(),
            target: "/etc".into(),
            remedy: "remove it",
        });
        let unreadable = anyhow::Error::new(tau_home::HomeError::NotAToken("/h/mcp-token".into()));
        assert_eq!(
            [
                exit_code(&boundary.context("config check")),
                exit_code(&link),
                exit_code(&unreadable),
            ],
            [2, 2, 1]
        );
    }
}
