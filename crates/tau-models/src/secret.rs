//! API keys: kept out of Debug output, logs and error messages.

use std::fmt;

/// An API key. It has no `Display`, and its `Debug` shows nothing of the value.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct ApiKey(String);

/// Shorter values are placeholders, not secrets worth scrubbing from every message.
const MIN_REDACTED_LEN: usize = 4;

impl ApiKey {
    pub(crate) fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The value, for the one place it belongs: the request header.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }

    /// `text` with every copy of the key replaced, for messages that quote a server.
    pub(crate) fn scrub(&self, text: &str) -> String {
        if self.0.len() < MIN_REDACTED_LEN {
            return text.to_owned();
        }
        text.replace(&self.0, "[redacted]")
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey([redacted])")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_and_scrub_hide_the_value() {
        let key = ApiKey::new("sk-test-123456");
        assert_eq!(format!("{key:?}"), "ApiKey([redacted])");
        assert_eq!(
            key.scrub("Incorrect API key provided: sk-test-123456."),
            "Incorrect API key provided: [redacted]."
        );
        assert_eq!(key.expose(), "sk-test-123456");
    }
}
