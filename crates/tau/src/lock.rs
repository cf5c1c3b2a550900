//! One tau per session (a `tau chat`, or the `tau serve` that has it open): an exclusive lock on `locks/NAME.lock`, released by the
//! operating system when the process ends, however it ends.

use std::fs::{File, OpenOptions, TryLockError};
use std::os::unix::fs::OpenOptionsExt;

use tau_protocol::SessionId;

use crate::errors::usage;
use crate::paths::Home;

/// Held while a chat has the session open.
#[derive(Debug)]
pub(crate) struct SessionLock {
    _file: File,
}

impl SessionLock {
    pub(crate) fn acquire(home: &Home, id: &SessionId) -> anyhow::Result<Self> {
        Self::try_acquire(home, id)?.ok_or_else(|| {
            usage(format!(
                "session '{id}' is already open in another tau (chat or serve); close that one first"
            ))
        })
    }

    /// The lock, or `None` when another tau holds it now.
    pub(crate) fn try_acquire(home: &Home, id: &SessionId) -> anyhow::Result<Option<Self>> {
        let path = home.locks().join(format!("{id}.lock"));
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .custom_flags(crate::private::no_follow())
            .open(&path)
            .map_err(|e| {
                if crate::private::is_link(&e) {
                    anyhow::anyhow!(crate::private::link_refused(&path))
                } else {
                    anyhow::anyhow!("cannot open {}: {e}", path.display())
                }
            })?;
        match file.try_lock() {
            Ok(()) => Ok(Some(Self { _file: file })),
            Err(TryLockError::WouldBlock) => Ok(None),
            Err(TryLockError::Error(error)) => {
                Err(anyhow::anyhow!("cannot lock {}: {error}", path.display()))
            }
        }
    }
}
