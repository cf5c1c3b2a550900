//! What the Telegram channel remembers across restarts: where it stopped reading updates,
//! how many conversations each chat has had (`/new`), and which message shows which
//! question (so a question decided, expired or replaced while tau was down still loses its
//! buttons).

use rusqlite::params;
use tau_protocol::ApprovalId;

use crate::error::StateError;
use crate::handles::TelegramMemory;

/// Where a question is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShownQuestion {
    pub chat: i64,
    pub message_id: i64,
    /// The message already says how the question ended and has no buttons.
    pub closed: bool,
}

impl TelegramMemory {
    /// The next update to ask the Bot API for; `None` before the first one was handled.
    pub fn telegram_offset(&self) -> Result<Option<i64>, StateError> {
        self.db.read(|c| {
            c.query_optional(
                "SELECT next FROM telegram_offset WHERE id = 1",
                params![],
                |r| r.get(0),
            )
        })
    }

    pub fn set_telegram_offset(&self, next: i64) -> Result<(), StateError> {
        self.db.write(|tx| {
            tx.execute(
                "INSERT INTO telegram_offset (id, next) VALUES (1, ?1)
                 ON CONFLICT (id) DO UPDATE SET next = excluded.next",
                params![next],
            )?;
            Ok(())
        })
    }

    /// How many times `/new` was said in `chat`.
    pub fn telegram_generation(&self, chat: i64) -> Result<u32, StateError> {
        self.db.read(|c| {
            Ok(c.query_optional(
                "SELECT generation FROM telegram_chats WHERE chat = ?1",
                params![chat],
                |r| r.get(0),
            )?
            .unwrap_or(0))
        })
    }

    /// `/new` in `chat`: the next generation, stored.
    pub fn next_telegram_generation(&self, chat: i64) -> Result<u32, StateError> {
        self.db.write(|tx| {
            tx.query_row(
                "INSERT INTO telegram_chats (chat, generation) VALUES (?1, 1)
                 ON CONFLICT (chat) DO UPDATE SET generation = telegram_chats.generation + 1
                 RETURNING generation",
                params![chat],
                |r| r.get(0),
            )
        })
    }

    pub fn telegram_question(&self, id: &ApprovalId) -> Result<Option<ShownQuestion>, StateError> {
        self.db.read(|c| {
            c.query_optional(
                "SELECT chat, message_id, closed FROM telegram_questions WHERE approval_id = ?1",
                params![id.as_str()],
                |r| {
                    Ok(ShownQuestion {
                        chat: r.get(0)?,
                        message_id: r.get(1)?,
                        closed: r.get(2)?,
                    })
                },
            )
        })
    }

    /// Remembers that `message_id` in `chat` shows question `id`, with its buttons.
    pub fn remember_telegram_question(
        &self,
        id: &ApprovalId,
        chat: i64,
        message_id: i64,
    ) -> Result<(), StateError> {
        // SQLite's `INSERT OR REPLACE`, in words both stores know: the row written anew
        // is the newest, as a replaced row is.
        self.db.write(|tx| {
            tx.execute(
                "DELETE FROM telegram_questions WHERE approval_id = ?1",
                params![id.as_str()],
            )?;
            tx.execute(
                "INSERT INTO telegram_questions (approval_id, chat, message_id, closed)
                 VALUES (?1, ?2, ?3, 0)",
                params![id.as_str(), chat, message_id],
            )?;
            Ok(())
        })
    }

    /// The message of question `id` says how it ended and has no buttons any more.
    pub fn close_telegram_question(&self, id: &ApprovalId) -> Result<(), StateError> {
        self.db.write(|tx| {
            tx.execute(
                "UPDATE telegram_questions SET closed = 1 WHERE approval_id = ?1",
                params![id.as_str()],
            )?;
            Ok(())
        })
    }

    /// Questions whose message still has its buttons, oldest first. A row whose id does
    /// not read is left out (and stays as it is).
    pub fn open_telegram_questions(&self) -> Result<Vec<ApprovalId>, StateError> {
        let ids: Vec<String> = self.db.read(|c| {
            c.query_map(
                "SELECT approval_id FROM telegram_questions WHERE closed = 0 ORDER BY rowid",
                params![],
                |r| r.get(0),
            )
        })?;
        Ok(ids
            .iter()
            .filter_map(|id| ApprovalId::parse(id).ok())
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn offset_and_questions_survive_a_reopen() {
        for dir in crate::test_stores::stores() {
            let id = |text: &str| ApprovalId::parse(text).unwrap();
            {
                let store = dir.open().telegram_memory();
                assert_eq!(store.telegram_offset().unwrap(), None);
                store.set_telegram_offset(10).unwrap();
                store.set_telegram_offset(12).unwrap();
                store
                    .remember_telegram_question(&id("ap_1"), 42, 7)
                    .unwrap();
                store
                    .remember_telegram_question(&id("ap_2"), 42, 8)
                    .unwrap();
                store.close_telegram_question(&id("ap_1")).unwrap();
                assert_eq!(store.telegram_generation(42).unwrap(), 0);
                assert_eq!(store.next_telegram_generation(42).unwrap(), 1);
                assert_eq!(store.next_telegram_generation(42).unwrap(), 2);
            }
            let store = dir.open().telegram_memory();
            assert_eq!(store.telegram_offset().unwrap(), Some(12));
            assert_eq!(
                store.telegram_question(&id("ap_1")).unwrap(),
                Some(ShownQuestion {
                    chat: 42,
                    message_id: 7,
                    closed: true
                })
            );
            assert_eq!(store.open_telegram_questions().unwrap(), vec![id("ap_2")]);
            assert_eq!(store.telegram_question(&id("ap_3")).unwrap(), None);
            assert_eq!(store.telegram_generation(42).unwrap(), 2);
            assert_eq!(store.telegram_generation(43).unwrap(), 0);
        }
    }
}
