//! Which layers this machine has, found by setting each up in a throwaway process of tau
//! (`__sandbox-probe`), in the order a launch does.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use serde::{Deserialize, Serialize};

use crate::launcher::PROBE;
use crate::policy::{Launch, ReportStream};
use crate::{files, namespaces, syscalls};

/// One layer on this machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Availability {
    Available { detail: String },
    Missing { reason: String },
}

/// Every layer on this machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Layers {
    pub landlock: Availability,
    pub seccomp: Availability,
    pub namespaces: Availability,
}

impl Layers {
    /// The rows `tau doctor` shows: name, state, detail.
    pub fn rows(&self) -> Vec<(&'static str, bool, String)> {
        [
            ("Landlock", &self.landlock),
            ("seccomp", &self.seccomp),
            ("namespaces", &self.namespaces),
        ]
        .into_iter()
        .map(|(name, state)| match state {
            Availability::Available { detail } => (name, true, detail.clone()),
            Availability::Missing { reason } => (name, false, reason.clone()),
        })
        .collect()
    }
}

/// One row of `tau doctor`'s sandbox section: its mark (`ok`, `no` for a problem, `--` for
/// nothing to check), the layer and what was found.
pub type DoctorRow = (&'static str, &'static str, String);

impl Layers {
    /// `tau doctor`'s sandbox section under the mode the config sets (`on`, `reduced`):
    /// its title and a row per layer. "reduced" does without namespaces; "on" refuses
    /// every command without them.
    pub fn doctor_section(&self, on: bool, reduced: bool) -> (String, Vec<DoctorRow>) {
        let title = match (on, reduced) {
            (true, false) => {
                "sandbox for commands and MCP servers ([tools.command] sandbox = \"on\")"
            }
            (true, true) => {
                "sandbox for commands and MCP servers, reduced ([tools.command] sandbox = \
                 \"reduced\"): without namespaces"
            }
            (false, _) => {
                "sandbox: off ([tools.command] sandbox = \"off\"): commands run without a sandbox"
            }
        };
        let rows = self
            .rows()
            .into_iter()
            .map(|(name, available, detail)| {
                let namespaces = name == "namespaces";
                let mark = match available {
                    true => "ok",
                    false if on && !(namespaces && reduced) => "no",
                    false => "--",
                };
                let detail = match (available, namespaces && on && !reduced) {
                    (true, _) if namespaces && reduced => {
                        format!("available: {detail} (not used: sandbox = \"reduced\")")
                    }
                    (true, _) => format!("available: {detail}"),
                    (false, true) => format!(
                        "not available: {detail}; every command is refused. `sandbox = \
                         \"reduced\"` under [tools.command] runs them without namespaces"
                    ),
                    (false, false) => format!("not available: {detail}"),
                };
                (mark, name, detail)
            })
            .collect();
        (title.to_owned(), rows)
    }
}

/// Runs the probe in a child of tau (`launcher`: tau's executable).
pub async fn probe(launcher: &Path) -> Layers {
    let output = tokio::process::Command::new(launcher)
        .arg(PROBE)
        .env_clear()
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .await;
    let missing = |reason: String| Layers {
        landlock: Availability::Missing {
            reason: reason.clone(),
        },
        seccomp: Availability::Missing {
            reason: reason.clone(),
        },
        namespaces: Availability::Missing { reason },
    };
    match output {
        Ok(output) => serde_json::from_slice(&output.stdout)
            .unwrap_or_else(|_| missing("the probe ended without an answer".to_owned())),
        Err(error) => missing(format!("cannot start the probe: {error}")),
    }
}

/// The probe itself, in the throwaway process.
pub(crate) fn probe_main() -> ExitCode {
    let namespaces = match namespaces::enter(false) {
        Ok(_) => Availability::Available {
            detail: "user, network and PID".to_owned(),
        },
        Err(reason) => Availability::Missing { reason },
    };
    let launch = Launch {
        parent: 0,
        report: ReportStream::Stderr,
        writable: Vec::new(),
        deny: Vec::new(),
        network: false,
        reduced: false,
        in_pid_namespace: false,
        in_net_namespace: false,
        stage_one: None,
    };
    let landlock = match files::restrict(&launch) {
        Ok(abi) => Availability::Available {
            detail: format!("ABI {abi}"),
        },
        Err(reason) => Availability::Missing { reason },
    };
    let seccomp = match syscalls::restrict(false, false) {
        Ok(()) => Availability::Available {
            detail: "filter installed".to_owned(),
        },
        Err(reason) => Availability::Missing { reason },
    };
    let layers = Layers {
        landlock,
        seccomp,
        namespaces,
    };
    let text = serde_json::to_string(&layers).unwrap_or_default();
    let _ = std::io::stdout().write_all(text.as_bytes());
    ExitCode::SUCCESS
}
