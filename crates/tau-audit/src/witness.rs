//! `[audit] witness`: a head kept where the log's writers cannot reach it. With
//! `witness = "telegram"`, `tau serve` sends the chain's head (`SEQ:HASH`) to the first
//! owner on Telegram when it starts and then once a day; a later `tau audit verify --from
//! SEQ:HASH` proves the log still holds everything up to it. A log that cannot be vouched
//! for is said so instead. Here: the setting and what the witness is told; the sending is
//! `tau serve`'s.

use std::path::Path;

use serde::{Deserialize, Serialize};
use tau_core::ConfigError;
use tau_state::StateDb;

use crate::log::GENESIS;
use crate::report::{anchored_head, format_head};
use crate::verify::verify;

/// `[audit]`
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AuditConfig {
    /// Where `tau serve` sends the day's head.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub witness: Option<Witness>,
}

/// A place that keeps heads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Witness {
    /// The first owner of `[telegram]`, in their private chat.
    Telegram,
}

impl AuditConfig {
    /// A witness needs its channel set up.
    pub fn validate(&self, telegram: bool) -> Result<(), ConfigError> {
        match self.witness {
            Some(Witness::Telegram) if !telegram => Err(ConfigError::new(
                "audit.witness",
                "\"telegram\" needs a [telegram] section: the head is sent to its first owner",
            )),
            Some(Witness::Telegram) | None => Ok(()),
        }
    }
}

/// What the witness is told about the log at `path`, anchored in `state`, now.
pub fn witness_message(path: &Path, state: &StateDb) -> String {
    let intact = verify(path, Some(state)).map(|verdict| verdict.intact());
    let head = anchored_head(Some(state));
    match (intact, head) {
        (Ok(true), Ok(head)) => {
            let head = head.map_or_else(
                || format!("0:{GENESIS}"),
                |head| format_head(&head),
            );
            format!(
                "tau audit head: {head}\nKeep this message. `tau audit verify --from {head}` proves the audit log still holds everything up to it."
            )
        }
        (Ok(false), _) => "tau audit: the audit log cannot be vouched for; run `tau audit verify` on the machine to see why.".to_owned(),
        (Err(error), _) => format!("tau audit: the audit log could not be read: {error}"),
        (_, Err(error)) => format!("tau audit: the audit log's anchor could not be read: {error}"),
    }
}
