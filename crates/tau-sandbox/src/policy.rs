//! What a sandboxed program may touch, as tau hands it to the launcher.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// `sandbox = "on" | "reduced" | "off"`: whether, and how, programs run in the sandbox.
/// "reduced" and "off" are the person's explicit choice, and every question says so.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SandboxMode {
    /// Every layer, namespaces included; a program is refused where one is missing.
    #[default]
    On,
    /// Landlock, seccomp and the launcher's process group, without namespaces: for a
    /// machine that allows none. What it still guarantees is in docs/tools.md.
    Reduced,
    Off,
}

/// Paths no sandboxed program may read, besides tau's own home and config file: keys,
/// cloud credentials and shell histories (where pasted secrets end up).
pub const DEFAULT_DENY_READ: [&str; 16] = [
    "~/.ssh",
    "~/.gnupg",
    "~/.aws",
    "~/.config/gcloud",
    "~/.netrc",
    "~/.bash_history",
    "~/.zsh_history",
    "~/.sh_history",
    "~/.histfile",
    "~/.local/share/fish/fish_history",
    "~/.python_history",
    "~/.node_repl_history",
    "~/.psql_history",
    "~/.mysql_history",
    "~/.sqlite_history",
    "~/.lesshst",
];

/// `~` or `~/...` under `home`; an absolute path as it is. `None` for anything else (a
/// relative path, `~user`), or for `~` without a home.
pub fn expand_home(path: &str, home: Option<&Path>) -> Option<PathBuf> {
    if path == "~" {
        return home.map(Path::to_owned);
    }
    if let Some(rest) = path.strip_prefix("~/") {
        return home.map(|home| home.join(rest));
    }
    let path = Path::new(path);
    path.is_absolute().then(|| path.to_owned())
}

/// Which of the launcher's standard streams carries its report to tau. The program gets
/// `/dev/null` there instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ReportStream {
    /// A command: its stdin is `/dev/null` anyway.
    Stdin,
    /// An MCP server: stdin and stdout speak MCP, its diagnostics are dropped.
    Stderr,
}

/// Everything the launcher needs, passed as one JSON argument.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Launch {
    /// tau's pid: when tau is gone, the launcher ends everything it started.
    pub parent: i32,
    pub report: ReportStream,
    /// Read-write (the workspace, the private temp dir).
    pub writable: Vec<PathBuf>,
    /// Not readable at all (tau's home, its config file, `deny_read`).
    pub deny: Vec<PathBuf>,
    pub network: bool,
    /// `sandbox = "reduced"`: no namespaces are entered, and the program may not leave its
    /// process group (which is then how every process of it is stopped at once).
    pub reduced: bool,
    /// Set by the first stage for the second: the program starts as pid 1 of a namespace
    /// of its own.
    #[serde(default)]
    pub in_pid_namespace: bool,
    /// Set by the first stage for the second: the network namespace is the program's own.
    #[serde(default)]
    pub in_net_namespace: bool,
    /// Set by the first stage for the second: its pid.
    #[serde(default)]
    pub stage_one: Option<i32>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn home_is_expanded_and_nothing_else_is_guessed() {
        let home = Path::new("/home/me");
        let cases = [
            ("~", Some("/home/me")),
            ("~/.ssh", Some("/home/me/.ssh")),
            ("/etc/shadow", Some("/etc/shadow")),
            ("relative/path", None),
            ("~other/.ssh", None),
        ];
        for (path, expected) in cases {
            assert_eq!(
                expand_home(path, Some(home)),
                expected.map(PathBuf::from),
                "{path}"
            );
        }
        assert_eq!(expand_home("~/.ssh", None), None);
    }

    #[test]
    fn the_mode_is_spelled_on_reduced_or_off() {
        #[derive(Deserialize)]
        struct Holder {
            sandbox: SandboxMode,
        }
        let parse = |text: &str| toml_like(text).map(|h: Holder| h.sandbox);
        assert_eq!(parse(r#"{"sandbox":"off"}"#), Some(SandboxMode::Off));
        assert_eq!(parse(r#"{"sandbox":"on"}"#), Some(SandboxMode::On));
        assert_eq!(
            parse(r#"{"sandbox":"reduced"}"#),
            Some(SandboxMode::Reduced)
        );
        assert_eq!(parse(r#"{"sandbox":false}"#), None);
        assert_eq!(parse(r#"{"sandbox":"Off"}"#), None);
    }

    fn toml_like<T: serde::de::DeserializeOwned>(json: &str) -> Option<T> {
        serde_json::from_str(json).ok()
    }
}
