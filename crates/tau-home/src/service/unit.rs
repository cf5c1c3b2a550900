//! The systemd unit that runs `tau serve`: its text, from the binary, the home and the
//! config in use. A pure function of [`UnitParts`], so what a person installs is pinned by
//! a snapshot.
//!
//! Which hardening, and why: tau's own sandbox makes user, PID and network namespaces for
//! every command it runs and confines it with Landlock and seccomp. So the unit leaves out
//! what would forbid that or the commands' own work: `PrivateUsers=` and
//! `RestrictNamespaces=` (no namespaces for the sandbox), `SystemCallFilter=` (the sandbox
//! and the commands need calls no fixed list knows), `MemoryDenyWriteExecute=` (JITs in
//! the commands), `PrivateDevices=`, `DeviceAllow=` and `ProtectClock=` (devices a tier-2
//! command may drive), `RestrictAddressFamilies=` (a command may talk Bluetooth or
//! netlink), `CapabilityBoundingSet=` (the sandbox's launcher holds the capabilities of its
//! own user namespace after an exec). Both units take what works through seccomp alone
//! (`NoNewPrivileges=` and friends); a user manager can make mount namespaces only inside a
//! user namespace of its own (`PrivateUsers=`), so `ProtectSystem=` and the other
//! file-system options are in the system unit only, which runs tau as the person it
//! belongs to.

use std::path::{Path, PathBuf};

use crate::error::HomeError;

/// Which systemd manager runs the unit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// The person's own manager (`systemctl --user`).
    User,
    /// The system's, running tau as `user`.
    System { user: String },
}

/// What the unit names.
#[derive(Debug, Clone)]
pub struct UnitParts {
    pub scope: Scope,
    /// The tau binary, absolute.
    pub binary: PathBuf,
    /// tau's home, absolute.
    pub home: PathBuf,
    /// The config file in use, absolute, when there is one.
    pub config: Option<PathBuf>,
    /// `--model SPEC`, when the command was given one.
    pub model: Option<String>,
    /// Where the model's keys may be kept for the service (optional for systemd).
    pub env_file: Option<PathBuf>,
    /// Folders tau writes besides the home (a workspace the config names elsewhere).
    pub writes: Vec<PathBuf>,
    pub version: String,
}

/// The unit's text.
pub fn render(parts: &UnitParts) -> Result<String, HomeError> {
    let mut exec = vec![exec_word(&path_text(&parts.binary, "the tau binary")?)];
    if let Some(config) = &parts.config {
        exec.push("--config".to_owned());
        exec.push(exec_word(&path_text(config, "the config file")?));
    }
    if let Some(model) = &parts.model {
        exec.push("--model".to_owned());
        exec.push(exec_word(&checked(model, "the model")?));
    }
    exec.push("serve".to_owned());
    let home = path_text(&parts.home, "tau's home")?;
    let (kind, manager, wanted_by) = match &parts.scope {
        Scope::User => ("user", "systemctl --user", "default.target"),
        Scope::System { .. } => ("system", "systemctl", "multi-user.target"),
    };
    let mut out = format!(
        "# tau's hub as a systemd {kind} service, written by `tau service unit` (tau {version}).\n\
         # `tau service install` puts it where systemd looks; then:\n\
         #   {manager} daemon-reload && {manager} enable --now tau.service\n\
         [Unit]\n\
         Description=tau, a personal agent hub (tau serve)\n",
        version = parts.version,
    );
    if matches!(parts.scope, Scope::System { .. }) {
        out.push_str("After=network-online.target\nWants=network-online.target\n");
    }
    out.push_str(
        "\n[Service]\n\
         # tau serve says READY=1 once TauBar listens, and feeds the watchdog at half its time\n\
         # only while its hub serves; a hub that stops serving is restarted.\n\
         Type=notify\n\
         NotifyAccess=main\n",
    );
    out.push_str(&format!("ExecStart={}\n", exec.join(" ")));
    out.push_str(&format!(
        "Environment={}\n",
        word(&format!("TAU_HOME={home}"))
    ));
    if let Some(env_file) = &parts.env_file {
        out.push_str(&format!(
            "# The model's keys (ANTHROPIC_API_KEY=..., one a line), kept out of this file; optional.\n\
             EnvironmentFile=-{}\n",
            path_text(env_file, "the key file")?
        ));
    }
    out.push_str(
        "Restart=on-failure\n\
         RestartSec=5s\n\
         WatchdogSec=30s\n\
         TimeoutStopSec=15s\n\
         # Hardening that leaves tau's own sandbox working (user, PID and network namespaces,\n\
         # Landlock, seccomp): no PrivateUsers=, RestrictNamespaces= or SystemCallFilter=.\n\
         NoNewPrivileges=yes\n\
         LockPersonality=yes\n\
         RestrictRealtime=yes\n\
         RestrictSUIDSGID=yes\n\
         SystemCallArchitectures=native\n",
    );
    if let Scope::System { user } = &parts.scope {
        let mut writes = vec![word(&home)];
        for path in &parts.writes {
            writes.push(word(&path_text(path, "the workspace")?));
        }
        out.push_str(&format!(
            "User={}\n\
             # Everything read-only but tau's home (and a workspace kept elsewhere).\n\
             ProtectSystem=strict\n\
             ProtectHome=read-only\n\
             ReadWritePaths={}\n\
             PrivateTmp=yes\n\
             ProtectKernelTunables=yes\n\
             ProtectKernelModules=yes\n\
             ProtectKernelLogs=yes\n\
             ProtectControlGroups=yes\n\
             ProtectHostname=yes\n",
            checked(user, "the user")?,
            writes.join(" ")
        ));
    }
    out.push_str(&format!("\n[Install]\nWantedBy={wanted_by}\n"));
    Ok(out)
}

/// `path` as unit text: `%` doubled (systemd's specifiers), no line break.
fn path_text(path: &Path, what: &str) -> Result<String, HomeError> {
    let text = path.to_str().ok_or_else(|| HomeError::UnitWord {
        what: what.to_owned(),
        shown: path.display().to_string(),
        why: "its path is not UTF-8",
    })?;
    checked(text, what)
}

/// `text` with `%` doubled; a line break refused (it would end the setting).
fn checked(text: &str, what: &str) -> Result<String, HomeError> {
    if text.contains(['\n', '\r']) {
        return Err(HomeError::UnitWord {
            what: what.to_owned(),
            shown: text.escape_debug().to_string(),
            why: "it holds a line break",
        });
    }
    Ok(text.replace('%', "%%"))
}

/// One word of `ExecStart=`: `$` doubled (systemd expands variables there), then as
/// [`word`].
fn exec_word(text: &str) -> String {
    word(&text.replace('$', "$$"))
}

/// One word of a setting: quoted when it holds a space, a quote or a backslash.
fn word(text: &str) -> String {
    if text.is_empty() || text.contains([' ', '\t', '"', '\'', '\\', ';']) {
        format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
    } else {
        text.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn parts(scope: Scope) -> UnitParts {
        UnitParts {
            scope,
            binary: PathBuf::from("/home/me/.cargo/bin/tau"),
            home: PathBuf::from("/home/me/.local/share/tau"),
            config: Some(PathBuf::from("/home/me/.config/tau/tau.toml")),
            model: None,
            env_file: Some(PathBuf::from("/home/me/.config/tau/service.env")),
            writes: Vec::new(),
            version: "0.1.0".to_owned(),
        }
    }

    #[test]
    fn the_user_unit() {
        insta::assert_snapshot!(render(&parts(Scope::User)).unwrap());
    }

    #[test]
    fn the_system_unit() {
        let mut system = parts(Scope::System {
            user: "me".to_owned(),
        });
        system.writes = vec![PathBuf::from("/srv/tau workspace")];
        system.model = Some("ollama:llama3.2".to_owned());
        insta::assert_snapshot!(render(&system).unwrap());
    }

    #[test]
    fn paths_are_quoted_and_escaped_as_systemd_reads_them() {
        let mut odd = parts(Scope::User);
        odd.binary = PathBuf::from("/opt/my tools/tau");
        odd.home = PathBuf::from("/home/me/100%/$tau");
        odd.config = None;
        odd.env_file = None;
        let unit = render(&odd).unwrap();
        assert!(
            unit.contains("ExecStart=\"/opt/my tools/tau\" serve\n"),
            "{unit}"
        );
        assert!(
            unit.contains("Environment=TAU_HOME=/home/me/100%%/$tau\n"),
            "{unit}"
        );
        assert!(!unit.contains("EnvironmentFile"), "{unit}");
        assert_eq!(word("a\"b\\c"), "\"a\\\"b\\\\c\"");
    }

    #[test]
    fn a_line_break_in_a_path_is_refused() {
        let mut broken = parts(Scope::User);
        broken.home = PathBuf::from("/home/me/a\nExecStartPre=/bin/evil");
        assert_eq!(
            render(&broken).unwrap_err().to_string(),
            "cannot name tau's home (/home/me/a\\nExecStartPre=/bin/evil) in a systemd unit: it holds a line break"
        );
    }
}
