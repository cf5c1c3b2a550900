//! Errors that end the program with exit code 2: usage and configuration mistakes.

use std::fmt;

/// A mistake in how tau was called or configured; exits 2.
#[derive(Debug)]
pub(crate) struct UsageError(pub(crate) String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

pub(crate) fn usage(message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(UsageError(message.into()))
}

/// The exit code for an error that ended the program.
pub(crate) fn exit_code(error: &anyhow::Error) -> u8 {
    if error
        .chain()
        .any(|cause| cause.downcast_ref::<UsageError>().is_some())
    {
        2
    } else {
        1
    }
}
