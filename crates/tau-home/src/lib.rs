//! tau-home: tau's home directory and the files in it that no other crate owns.
//!
//! Owns the home's layout (where `state.db`, `audit.jsonl`, `logs/`, `locks/`, the
//! tokens and the workspace are), how its files are made private and never opened
//! through a link, the session locks, the token files, the chat history, the daily file
//! log, the backup file's format, and `tau serve` under systemd (the unit's text and install, the notify protocol
//! and the watchdog). `state.db` is `tau-state`'s and `audit.jsonl` the audit log's:
//! this crate names their paths and never opens them. Knows nothing of the hub, the
//! channels or the model providers: what it needs of them (the hub's health, the log
//! targets to keep out) is handed in.
//!
//! Layout
//! - `home.rs`: `Home`, the layout, the refusal of planted links, the config's path
//! - `private.rs`: private folders and files, never through a link
//! - `lock.rs`: one tau per session
//! - `token_file.rs`: bearer tokens kept in the home
//! - `chat_history.rs`: the prompts typed at `tau chat`
//! - `doctor.rs`: the home's entries and their modes as `tau doctor` shows them
//! - `logging/`: the daily file log and the journal's lines
//! - `service/`: the systemd unit, its text and where it is installed
//! - `systemd.rs`: `READY=1`, `STATUS=`, the watchdog
//! - `backup/`: the backup file (its manifest, staging, writing, reading it back)
//! - `error.rs`: `HomeError`, and which of its cases are a person's mistake

pub mod backup;
mod chat_history;
mod doctor;
mod error;
mod home;
mod lock;
pub mod logging;
pub mod private;
pub mod service;
pub mod systemd;
#[cfg(test)]
mod test_env;
pub mod token_file;

pub use chat_history::ChatHistory;
pub use doctor::DoctorRow;
pub use error::HomeError;
pub use home::{Env, EnvFn, Home, config_path};
pub use lock::SessionLock;
