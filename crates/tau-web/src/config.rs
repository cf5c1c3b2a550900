//! `[web]` in `tau.toml`.

use std::net::SocketAddr;

use serde::{Deserialize, Serialize};

/// `[web]`: where TauBar listens.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WebConfig {
    /// Serve TauBar at all.
    pub enabled: bool,
    /// The address to listen on; loopback unless `allow_remote`.
    pub listen: SocketAddr,
    /// Listen on an address other machines can reach. The page is plain HTTP: the token
    /// and every approval travel unencrypted, and anyone on that network who learns the
    /// token can approve tier-2 calls.
    pub allow_remote: bool,
    /// `Host` header values accepted besides the listen address itself (a name the
    /// machine is reached by when `allow_remote` is set).
    pub hosts: Vec<String>,
}

impl Default for WebConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            listen: SocketAddr::from(([127, 0, 0, 1], 7878)),
            allow_remote: false,
            hosts: Vec::new(),
        }
    }
}

/// What a non-loopback listen address risks, said when it is refused and when it is used.
pub const REMOTE_RISK: &str = "TauBar speaks plain HTTP: the token and every approval cross the network unencrypted, \
and anyone who can reach the address and learns the token can approve tier-2 calls";

/// A `[web]` value tau cannot use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {message}")]
pub struct WebConfigError {
    pub key: &'static str,
    pub message: String,
}

impl WebConfig {
    /// A non-loopback address needs `allow_remote = true`; hosts must be plain `host[:port]`.
    pub fn validate(&self) -> Result<(), WebConfigError> {
        if !self.listen.ip().is_loopback() && !self.allow_remote {
            return Err(WebConfigError {
                key: "web.listen",
                message: format!(
                    "{} is not a loopback address; set web.allow_remote = true to serve it anyway ({REMOTE_RISK})",
                    self.listen
                ),
            });
        }
        if let Some(bad) = self.hosts.iter().find(|h| {
            h.is_empty()
                || !h.bytes().all(|b| {
                    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':' | b'[' | b']')
                })
        }) {
            return Err(WebConfigError {
                key: "web.hosts",
                message: format!("{bad:?} is not a host name (letters, digits, '.', '-', ':port')"),
            });
        }
        Ok(())
    }

    /// Every `Host` header value a request may carry.
    pub fn allowed_hosts(&self, bound: SocketAddr) -> Vec<String> {
        let port = bound.port();
        let mut hosts = vec![bound.to_string()];
        if bound.ip().is_loopback() {
            hosts.push(format!("localhost:{port}"));
            hosts.push(format!("127.0.0.1:{port}"));
            hosts.push(format!("[::1]:{port}"));
        }
        for host in &self.hosts {
            hosts.push(host.to_ascii_lowercase());
            if !host.contains(':') {
                hosts.push(format!("{}:{port}", host.to_ascii_lowercase()));
            }
        }
        hosts.sort();
        hosts.dedup();
        hosts
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn loopback_by_default_and_remote_only_when_asked() {
        assert_eq!(WebConfig::default().validate(), Ok(()));
        let remote = WebConfig {
            listen: "0.0.0.0:7878".parse().unwrap(),
            ..WebConfig::default()
        };
        let error = remote.validate().unwrap_err();
        assert_eq!(error.key, "web.listen");
        assert!(error.message.contains("allow_remote"), "{error}");
        assert!(error.message.contains("plain HTTP"), "{error}");
        let allowed = WebConfig {
            allow_remote: true,
            ..remote
        };
        assert_eq!(allowed.validate(), Ok(()));
        let bad_host = WebConfig {
            hosts: vec!["evil.example/x".into()],
            ..WebConfig::default()
        };
        assert_eq!(bad_host.validate().unwrap_err().key, "web.hosts");
    }

    #[test]
    fn the_hosts_a_request_may_name() {
        let config = WebConfig {
            hosts: vec!["Box.lan".into()],
            ..WebConfig::default()
        };
        assert_eq!(
            config.allowed_hosts("127.0.0.1:9000".parse().unwrap()),
            [
                "127.0.0.1:9000",
                "[::1]:9000",
                "box.lan",
                "box.lan:9000",
                "localhost:9000"
            ]
        );
    }
}
