//! Identities that cross crate boundaries: a session, a stored question. Each is parsed
//! once where it enters tau (a command-line argument, an HTTP route, a stored row, a
//! button's payload) and travels as its type from there, never rebuilt from a string.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A session id: 1 to 64 of `A-Z a-z 0-9 _ - .`, not starting with `.` or `-`, so it is
/// safe as a file name and a command-line argument.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct SessionId(String);

/// A session id that is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "session name {id:?} is invalid: use 1 to 64 letters, digits, '-', '_' or '.', not starting with '.' or '-'"
)]
pub struct InvalidSessionId {
    pub id: String,
}

impl SessionId {
    pub fn parse(text: &str) -> Result<Self, InvalidSessionId> {
        let valid = (1..=64).contains(&text.len())
            && !text.starts_with(['.', '-'])
            && text
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
        if valid {
            Ok(Self(text.to_owned()))
        } else {
            Err(InvalidSessionId {
                id: text.to_owned(),
            })
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for SessionId {
    type Error = InvalidSessionId;
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

/// The id of a stored question: `ap_` and 1 to 64 lowercase letters and digits (tau makes
/// them from 128 random bits, so nobody can guess one). An answer names it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ApprovalId(String);

/// An approval id that is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{id:?} is not an approval id")]
pub struct InvalidApprovalId {
    pub id: String,
}

impl ApprovalId {
    /// What every approval id starts with.
    pub const PREFIX: &'static str = "ap_";

    pub fn parse(text: &str) -> Result<Self, InvalidApprovalId> {
        let valid = text.strip_prefix(Self::PREFIX).is_some_and(|rest| {
            (1..=64).contains(&rest.len())
                && rest
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        });
        if valid {
            Ok(Self(text.to_owned()))
        } else {
            Err(InvalidApprovalId {
                id: text.to_owned(),
            })
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for ApprovalId {
    type Error = InvalidApprovalId;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        Self::parse(&value)
    }
}

impl From<ApprovalId> for String {
    fn from(id: ApprovalId) -> Self {
        id.0
    }
}

impl fmt::Display for ApprovalId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl PartialEq<str> for ApprovalId {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<str> for SessionId {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

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

    #[test]
    fn approval_ids_are_ap_and_lowercase_letters_and_digits() {
        for ok in [
            "ap_1",
            "ap_6bc08b220c120cc028c3c168b82bf576",
            &format!("ap_{}", "a".repeat(64)),
        ] {
            assert_eq!(ApprovalId::parse(ok).unwrap().as_str(), ok);
        }
        for bad in [
            "",
            "ap_",
            "ap",
            "AP_1",
            "ap_ABC",
            "ap_1 ",
            "ap_1/../x",
            "ap-1",
            "x_1",
            "ap_1\0",
            &format!("ap_{}", "a".repeat(65)),
        ] {
            assert!(ApprovalId::parse(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            ApprovalId::parse("ap_1/x").unwrap_err().to_string(),
            "\"ap_1/x\" is not an approval id"
        );
    }

    #[test]
    fn ids_travel_as_plain_strings_and_refuse_what_does_not_parse() {
        let id: ApprovalId = serde_json::from_str("\"ap_7\"").unwrap();
        assert_eq!(serde_json::to_string(&id).unwrap(), "\"ap_7\"");
        assert!(serde_json::from_str::<ApprovalId>("\"nope\"").is_err());
        let session: SessionId = serde_json::from_str("\"kitchen\"").unwrap();
        assert_eq!(serde_json::to_string(&session).unwrap(), "\"kitchen\"");
        assert!(serde_json::from_str::<SessionId>("\"../x\"").is_err());
    }
}
