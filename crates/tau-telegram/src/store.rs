//! What the channel remembers across restarts, in `state.db`: where it stopped reading
//! updates, and which message shows which question (so a question decided, expired or
//! replaced while tau was down still loses its buttons). `tau-state` keeps the rows.

use tau_protocol::{ApprovalId, InvalidApprovalId};
use tau_state::{ShownQuestion, StateError, TelegramMemory};

/// The channel's memory could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("telegram store: {0}")]
    State(#[from] StateError),
    #[error("telegram store: {0}")]
    NotAnApprovalId(#[from] InvalidApprovalId),
}

/// The channel's tables of one `state.db`.
pub struct Store {
    db: TelegramMemory,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Store")
    }
}

/// A question id as the channel read it; one that is not an approval id names nothing.
fn question(approval_id: &str) -> Option<ApprovalId> {
    ApprovalId::parse(approval_id).ok()
}

impl Store {
    /// The channel's memory; nothing else of `state.db` (its questions are answered
    /// through the hub's port only).
    pub fn new(db: TelegramMemory) -> Self {
        Self { db }
    }

    pub(crate) fn offset(&self) -> Result<Option<i64>, StoreError> {
        Ok(self.db.telegram_offset()?)
    }

    pub(crate) fn set_offset(&self, next: i64) -> Result<(), StoreError> {
        Ok(self.db.set_telegram_offset(next)?)
    }

    /// How many times `/new` was said in `chat`.
    pub(crate) fn generation(&self, chat: i64) -> Result<u32, StoreError> {
        Ok(self.db.telegram_generation(chat)?)
    }

    /// `/new` in `chat`: the next generation, stored.
    pub(crate) fn next_generation(&self, chat: i64) -> Result<u32, StoreError> {
        Ok(self.db.next_telegram_generation(chat)?)
    }

    pub(crate) fn shown(&self, approval_id: &str) -> Result<Option<ShownQuestion>, StoreError> {
        match question(approval_id) {
            Some(id) => Ok(self.db.telegram_question(&id)?),
            None => Ok(None),
        }
    }

    pub(crate) fn remember(
        &self,
        approval_id: &str,
        chat: i64,
        message_id: i64,
    ) -> Result<(), StoreError> {
        let id = ApprovalId::parse(approval_id)?;
        Ok(self.db.remember_telegram_question(&id, chat, message_id)?)
    }

    pub(crate) fn close(&self, approval_id: &str) -> Result<(), StoreError> {
        match question(approval_id) {
            Some(id) => Ok(self.db.close_telegram_question(&id)?),
            None => Ok(()),
        }
    }

    /// Questions whose message still has its buttons.
    pub(crate) fn open_questions(&self) -> Result<Vec<String>, StoreError> {
        Ok(self
            .db
            .open_telegram_questions()?
            .into_iter()
            .map(String::from)
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn offset_and_questions_survive_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.db");
        {
            let store = Store::new(tau_state::StateDb::open(&path).unwrap().telegram_memory());
            assert_eq!(store.offset().unwrap(), None);
            store.set_offset(10).unwrap();
            store.set_offset(12).unwrap();
            store.remember("ap_1", 42, 7).unwrap();
            store.remember("ap_2", 42, 8).unwrap();
            store.close("ap_1").unwrap();
        }
        let store = Store::new(tau_state::StateDb::open(&path).unwrap().telegram_memory());
        assert_eq!(store.offset().unwrap(), Some(12));
        assert_eq!(
            store.shown("ap_1").unwrap(),
            Some(ShownQuestion {
                chat: 42,
                message_id: 7,
                closed: true
            })
        );
        assert_eq!(store.open_questions().unwrap(), vec!["ap_2".to_owned()]);
        assert_eq!(store.shown("ap_3").unwrap(), None);
        assert_eq!(store.generation(42).unwrap(), 0);
        assert_eq!(store.next_generation(42).unwrap(), 1);
        assert_eq!(store.next_generation(42).unwrap(), 2);
        drop(store);
        let store = Store::new(tau_state::StateDb::open(&path).unwrap().telegram_memory());
        assert_eq!(store.generation(42).unwrap(), 2);
        assert_eq!(store.generation(43).unwrap(), 0);
    }

    #[test]
    fn a_press_that_names_no_question_is_not_remembered() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.db");
        let store = Store::new(tau_state::StateDb::open(&path).unwrap().telegram_memory());
        let error = store.remember("not-an-id", 42, 7).unwrap_err();
        assert_eq!(
            error.to_string(),
            r#"telegram store: "not-an-id" is not an approval id"#
        );
        assert!(matches!(
            error,
            StoreError::NotAnApprovalId(InvalidApprovalId { id }) if id == "not-an-id"
        ));
        assert_eq!(store.open_questions().unwrap(), Vec::<String>::new());
    }
}
