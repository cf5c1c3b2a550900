//! One tau per session (a `tau chat`, or the `tau serve` that has it open): an exclusive lock on `locks/NAME.lock`, released by the
//! operating system when the process ends, however it ends.

use std::fs::{File, OpenOptions, TryLockError};
use std::os::unix::fs::OpenOptionsExt;

use tau_protocol::SessionId;

use crate::error::HomeError;
use crate::home::Home;

/// Held while a chat has the session open.
#[derive(Debug)]
pub struct SessionLock {
    _file: File,
}

impl SessionLock {
    pub fn acquire(home: &Home, id: &SessionId) -> Result<Self, HomeError> {
        Self::try_acquire(home, id)?.ok_or_else(|| HomeError::SessionBusy(id.clone()))
    }

    /// The lock, or `None` when another tau holds it now.
    pub fn try_acquire(home: &Home, id: &SessionId) -> Result<Option<Self>, HomeError> {
        let path = home.locks().join(format!("{id}.lock"));
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .custom_flags(crate::private::no_follow())
            .open(&path)
            .map_err(|error| {
                if crate::private::is_link(&error) {
                    HomeError::LinkRefused(path.clone())
                } else {
                    HomeError::Open {
                        path: path.clone(),
                        error,
                    }
                }
            })?;
        match file.try_lock() {
            Ok(()) => Ok(Some(Self { _file: file })),
            Err(TryLockError::WouldBlock) => Ok(None),
            Err(TryLockError::Error(error)) => Err(HomeError::Lock { path, error }),
        }
    }
}
