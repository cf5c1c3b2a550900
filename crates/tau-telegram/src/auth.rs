//! Who the bot answers to: an owner (by numeric user id) writing in an allowed chat.
//! Everyone and everything else is ignored, and logged once per sender so a stranger
//! cannot fill the log.

use std::collections::{BTreeSet, HashSet};
use std::sync::{Mutex, PoisonError};

/// How many distinct strangers are remembered for logging; past that each is logged
/// again (rarely matters, and memory stays bounded).
const REMEMBERED: usize = 4096;

/// What the bot makes of a sender in a chat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    Owner,
    /// Not an owner (or no sender at all, like a channel post).
    Stranger,
    /// An owner, but in a chat the config does not allow.
    ChatNotAllowed,
}

#[derive(Debug)]
pub(crate) struct Access {
    owners: BTreeSet<i64>,
    chats: BTreeSet<i64>,
    logged: Mutex<HashSet<(Option<i64>, Option<i64>)>>,
}

impl Access {
    pub(crate) fn new(owners: BTreeSet<i64>, chats: BTreeSet<i64>) -> Self {
        Self {
            owners,
            chats,
            logged: Mutex::new(HashSet::new()),
        }
    }

    /// 1. no sender, or a sender who is not an owner -> stranger
    /// 2. an owner in a chat that is not allowed -> not allowed
    /// 3. an owner in an allowed chat -> owner
    pub(crate) fn check(&self, user: Option<i64>, chat: Option<i64>) -> Verdict {
        match user {
            Some(user) if self.owners.contains(&user) => match chat {
                Some(chat) if self.chats.contains(&chat) => Verdict::Owner,
                _ => Verdict::ChatNotAllowed,
            },
            _ => Verdict::Stranger,
        }
    }

    /// Whether the bot talks in `chat` at all.
    pub(crate) fn chat_allowed(&self, chat: i64) -> bool {
        self.chats.contains(&chat)
    }

    /// True the first time `(user, chat)` is seen: the caller logs it then, and only then.
    pub(crate) fn first_time(&self, user: Option<i64>, chat: Option<i64>) -> bool {
        let mut logged = self.logged.lock().unwrap_or_else(PoisonError::into_inner);
        if logged.len() >= REMEMBERED {
            logged.clear();
        }
        logged.insert((user, chat))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_owner_in_an_allowed_chat_counts() {
        let access = Access::new(BTreeSet::from([7]), BTreeSet::from([7, -100]));
        let table = [
            (Some(7), Some(7), Verdict::Owner),
            (Some(7), Some(-100), Verdict::Owner),
            (Some(7), Some(8), Verdict::ChatNotAllowed),
            (Some(7), None, Verdict::ChatNotAllowed),
            (Some(8), Some(7), Verdict::Stranger),
            (Some(8), Some(-100), Verdict::Stranger),
            (None, Some(7), Verdict::Stranger),
            (Some(-7), Some(7), Verdict::Stranger),
        ];
        for (user, chat, verdict) in table {
            assert_eq!(access.check(user, chat), verdict, "{user:?} in {chat:?}");
        }
        assert!(access.chat_allowed(-100));
        assert!(!access.chat_allowed(8));
    }

    #[test]
    fn a_sender_is_logged_once() {
        let access = Access::new(BTreeSet::from([7]), BTreeSet::from([7]));
        assert!(access.first_time(Some(9), Some(9)));
        assert!(!access.first_time(Some(9), Some(9)));
        assert!(access.first_time(Some(9), Some(7)));
    }
}
