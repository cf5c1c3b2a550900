//! The names of the people who write to the bot, as Telegram gives them with each update
//! (a first name, else a username), so a closed question says who decided it by name
//! ("Approved by Ada"), not by a number. Only the owners' names are kept, in memory: the
//! audit log and `decided_by` keep the user id, which cannot change hands. A name not
//! heard since tau started is not known, and the id is said instead.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use serde_json::Value;

/// The longest name kept, in characters (Telegram's own limit is 64).
const MAX_NAME_CHARS: usize = 64;

/// The name a user's entry (`from` of a message or a press) gives: the first name, else
/// `@username`; `None` when it has neither.
pub(crate) fn name_of(from: &Value) -> Option<String> {
    let text = |key: &str| from.get(key).and_then(Value::as_str).and_then(trimmed_name);
    match (text("first_name"), text("username")) {
        (Some(first), _) => Some(first),
        (None, Some(username)) => trimmed_name(&format!("@{username}")),
        (None, None) => None,
    }
}

/// A name as tau keeps it: trimmed, at most [`MAX_NAME_CHARS`] characters; `None` when
/// nothing is left.
pub(crate) fn trimmed_name(name: &str) -> Option<String> {
    let name = name.trim();
    (!name.is_empty()).then(|| name.chars().take(MAX_NAME_CHARS).collect())
}

/// The owners' names heard since tau started, by user id.
#[derive(Debug, Default)]
pub(crate) struct Names(Mutex<HashMap<i64, String>>);

impl Names {
    /// Keeps `name` for the owner `user` (the last one heard wins: a person may rename).
    pub(crate) fn learn(&self, user: i64, name: Option<&str>) {
        if let Some(name) = name {
            self.0
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(user, name.to_owned());
        }
    }

    /// The name of the user `user` (a user id as `decided_by` writes it), when heard.
    pub(crate) fn of(&self, user: &str) -> Option<String> {
        let id = user.parse::<i64>().ok()?;
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&id)
            .cloned()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_first_name_else_a_username_and_nothing_else() {
        assert_eq!(
            name_of(&json!({"id": 1, "first_name": "Ada", "username": "ada_l"})),
            Some("Ada".into())
        );
        assert_eq!(
            name_of(&json!({"id": 1, "username": "ada_l"})),
            Some("@ada_l".into())
        );
        assert_eq!(
            name_of(&json!({"id": 1, "first_name": "  ", "username": 5})),
            None
        );
        assert_eq!(name_of(&json!({"id": 1})), None);
        let long = "A".repeat(200);
        assert_eq!(
            name_of(&json!({"first_name": long})).map(|n| n.chars().count()),
            Some(64)
        );
    }

    #[test]
    fn a_name_is_known_once_heard_and_by_its_id_only() {
        let names = Names::default();
        assert_eq!(names.of("4242"), None);
        names.learn(4242, Some("Ada"));
        names.learn(4242, None);
        assert_eq!(names.of("4242"), Some("Ada".into()));
        assert_eq!(names.of("web"), None);
        names.learn(4242, Some("Ada L."));
        assert_eq!(names.of("4242"), Some("Ada L.".into()));
    }
}
