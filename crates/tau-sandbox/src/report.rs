//! The one line the launcher writes to tau before the program starts: ready, or refused
//! with the layer that could not be set up. It travels on a stream the program never gets,
//! so a program cannot write it.

use serde::{Deserialize, Serialize};

/// A layer of the sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SandboxLayer {
    /// Files (and TCP, and signals): the Landlock LSM.
    Landlock,
    /// System calls (sockets, the kernel keyring, io_uring): a seccomp filter.
    Seccomp,
    /// User, network and PID namespaces.
    Namespaces,
    /// No capability and no way to gain one (root's included).
    Privileges,
    /// tau's own start of the program.
    Launcher,
}

impl SandboxLayer {
    /// What the layer is, for a person.
    pub fn describe(self) -> &'static str {
        match self {
            Self::Landlock => "Landlock (the file rules)",
            Self::Seccomp => "seccomp (the system call filter)",
            Self::Namespaces => "the user, network and PID namespaces",
            Self::Privileges => "the drop of every capability",
            Self::Launcher => "tau's sandbox launcher",
        }
    }
}

/// Why a program was not started.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refusal {
    pub layer: SandboxLayer,
    pub reason: String,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} could not be set up: {}",
            self.layer.describe(),
            self.reason
        )
    }
}

/// The launcher's line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum Report {
    Ready {
        landlock_abi: i32,
        pid_namespace: bool,
        net_namespace: bool,
    },
    Refused {
        layer: SandboxLayer,
        reason: String,
    },
}

impl Report {
    pub(crate) fn refused(layer: SandboxLayer, reason: impl Into<String>) -> Self {
        Self::Refused {
            layer,
            reason: reason.into(),
        }
    }

    pub(crate) fn line(&self) -> String {
        let mut line = serde_json::to_string(self).unwrap_or_else(|_| {
            r#"{"type":"refused","layer":"launcher","reason":"cannot write its report"}"#.to_owned()
        });
        line.push('\n');
        line
    }

    /// The first line of what tau read; anything else is no report.
    pub(crate) fn parse(text: &str) -> Option<Self> {
        serde_json::from_str(text.lines().next()?).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn a_report_is_one_json_line() {
        let report = Report::refused(SandboxLayer::Landlock, "not in this kernel");
        assert_eq!(
            report.line(),
            "{\"type\":\"refused\",\"layer\":\"landlock\",\"reason\":\"not in this kernel\"}\n"
        );
        assert_eq!(Report::parse(&report.line()), Some(report));
        assert_eq!(Report::parse("ready"), None);
        assert_eq!(Report::parse(""), None);
    }

    #[test]
    fn a_refusal_names_its_layer() {
        let refusal = Refusal {
            layer: SandboxLayer::Seccomp,
            reason: "prctl: Invalid argument".into(),
        };
        assert_eq!(
            refusal.to_string(),
            "seccomp (the system call filter) could not be set up: prctl: Invalid argument"
        );
    }
}
