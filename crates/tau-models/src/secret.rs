//! API keys: kept out of Debug output, logs and error messages. Texts are scrubbed by
//! `tau-secret`'s one scrubber, which also knows the shapes that carry a secret whatever
//! its value (a URL's password, a key in a query string).

use std::fmt;

use tau_secret::Scrubber;

/// An API key. It has no `Display`, and its `Debug` shows nothing of the value.
#[derive(Clone)]
pub(crate) struct ApiKey(String, Scrubber);

impl PartialEq for ApiKey {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}

impl Eq for ApiKey {}

impl ApiKey {
    pub(crate) fn new(value: impl Into<String>) -> Self {
        let value = value.into();
        let scrubber = Scrubber::new([value.as_str()]);
        Self(value, scrubber)
    }

    /// The value, for the one place it belongs: the request header.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }

    /// `text` with every copy of the key (and any other secret it carries) replaced, for
    /// messages that quote a server.
    pub(crate) fn scrub(&self, text: &str) -> String {
        self.1.scrub(text)
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
