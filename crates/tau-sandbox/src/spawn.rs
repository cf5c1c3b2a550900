//! tau's side of a sandboxed start: the command that starts its own executable as the
//! launcher, the private temp dir, and the wait for the launcher's report.

use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncReadExt;

use crate::launcher::STAGE_ONE;
use crate::policy::{Launch, ReportStream};
use crate::report::{Refusal, Report, SandboxLayer};

/// How long a launcher may take to report; it only sets a few things up.
const REPORT_WAIT: Duration = Duration::from_secs(30);
/// A report is one short line; more is not a report.
const REPORT_LIMIT: usize = 64 * 1024;

/// Whether, and how, programs are confined.
#[derive(Debug, Clone)]
pub enum Sandbox {
    /// `sandbox = "off"`: programs run with everything the person's account has.
    Off,
    On(Arc<Confinement>),
}

/// What every sandboxed start shares.
#[derive(Debug, Clone)]
pub struct Confinement {
    /// tau's own executable, started again as the launcher.
    launcher: PathBuf,
    /// Nothing here may be read: tau's home, its config file, `deny_read`.
    deny: Vec<PathBuf>,
    /// `sandbox = "reduced"`: without namespaces (see `SandboxMode::Reduced`).
    reduced: bool,
}

/// What a sandboxed program may do, as a card says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Allowance {
    pub sandboxed: bool,
    /// Sandboxed without namespaces (`sandbox = "reduced"`).
    pub reduced: bool,
    pub network: bool,
}

impl Allowance {
    /// tau's words for it: `writes: workspace only · network: none`.
    pub fn describe(self) -> &'static str {
        match (self.sandboxed, self.reduced, self.network) {
            (false, _, _) => "runs without a sandbox",
            (true, false, false) => "writes: workspace only · network: none",
            (true, false, true) => "writes: workspace only · network: with network access",
            (true, true, false) => "reduced · writes: workspace only · network: none",
            (true, true, true) => "reduced · writes: workspace only · network: with network access",
        }
    }

    /// Whether the card says it as a plain fact; anything that lets more out is a warning.
    pub fn is_full(self) -> bool {
        self.sandboxed && !self.reduced && !self.network
    }
}

/// Why a sandboxed program did not start.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("{0}")]
    Refused(Refusal),
    #[error("tau's sandbox launcher cannot be prepared: {0}")]
    Prepare(std::io::Error),
    #[error("tau's sandbox launcher ended without saying whether the program started")]
    NoReport,
    #[error("tau's sandbox launcher did not report within {} s", REPORT_WAIT.as_secs())]
    Slow,
}

impl SandboxError {
    /// The layer that could not be set up.
    pub fn layer(&self) -> SandboxLayer {
        match self {
            Self::Refused(refusal) => refusal.layer,
            Self::Prepare(_) | Self::NoReport | Self::Slow => SandboxLayer::Launcher,
        }
    }
}

impl Sandbox {
    /// Programs confined, with `launcher` (tau's executable) as the launcher.
    pub fn on(launcher: PathBuf, deny: Vec<PathBuf>) -> Self {
        Self::On(Arc::new(Confinement {
            launcher,
            deny,
            reduced: false,
        }))
    }

    /// Programs confined without namespaces (`sandbox = "reduced"`).
    pub fn reduced(launcher: PathBuf, deny: Vec<PathBuf>) -> Self {
        Self::On(Arc::new(Confinement {
            launcher,
            deny,
            reduced: true,
        }))
    }

    pub fn allowance(&self, network: bool) -> Allowance {
        Allowance {
            sandboxed: matches!(self, Self::On(_)),
            reduced: matches!(self, Self::On(confinement) if confinement.reduced),
            network,
        }
    }
}

/// A command ready to spawn, and what tau keeps of it.
pub struct Prepared {
    pub command: tokio::process::Command,
    pub pending: Pending,
}

/// The report still to come, and the private temp dir (removed when dropped).
pub struct Pending {
    /// The read end of the report's pipe; for an MCP server the caller hands over the
    /// program's stderr instead.
    report: Option<OwnedFd>,
    temp: tempfile::TempDir,
}

/// A program that started in the sandbox; its temp dir goes when this is dropped.
#[derive(Debug)]
pub struct Started {
    _temp: tempfile::TempDir,
    /// tau's end of the report's pipe (a command's): closing it has the launcher stop the
    /// program with everything it started.
    lifeline: Option<Lifeline>,
    pub pid_namespace: bool,
    pub net_namespace: bool,
}

/// tau's end of a command's report pipe, held while the command runs.
#[derive(Debug)]
pub struct Lifeline {
    _pipe: tokio::net::unix::pipe::Receiver,
}

impl Started {
    /// tau's end of the report's pipe: dropping it has the launcher stop the command and
    /// everything it started, all at once, then exit as if killed with SIGKILL. `None`
    /// for an MCP server (its report came on its stderr) or once taken.
    pub fn take_lifeline(&mut self) -> Option<Lifeline> {
        self.lifeline.take()
    }
}

impl Confinement {
    /// The same, without namespaces (an MCP server's `sandbox = "reduced"`).
    pub fn reduced(&self) -> Self {
        Self {
            reduced: true,
            ..self.clone()
        }
    }

    pub fn is_reduced(&self) -> bool {
        self.reduced
    }

    /// The command that starts `program` with `args` in the sandbox: read-write in
    /// `workspace` and a private temp dir (`TMPDIR`), with exactly `env` besides.
    /// `for_mcp`: stdin and stdout are the program's own (MCP speaks on them), so the
    /// launcher reports on stderr, which the caller pipes and hands to
    /// [`Pending::started_on`], and the program's stderr is dropped; otherwise it reports
    /// on stdin (read by [`Pending::started`]) and the program's stdin is `/dev/null`.
    pub fn command<'a>(
        &self,
        program: &OsStr,
        args: impl IntoIterator<Item = &'a OsStr>,
        workspace: &Path,
        env: impl IntoIterator<Item = (&'a str, &'a str)>,
        network: bool,
        for_mcp: bool,
    ) -> Result<Prepared, SandboxError> {
        let temp = tempfile::Builder::new()
            .prefix("tau-run-")
            .tempdir()
            .map_err(SandboxError::Prepare)?;
        let writable = [workspace, temp.path()]
            .iter()
            .map(|p| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf()))
            .collect();
        let report = if for_mcp {
            ReportStream::Stderr
        } else {
            ReportStream::Stdin
        };
        let launch = Launch {
            parent: rustix::process::getpid().as_raw_nonzero().get(),
            report,
            writable,
            deny: self.deny.clone(),
            network,
            reduced: self.reduced,
            in_pid_namespace: false,
            in_net_namespace: false,
            stage_one: None,
        };
        let json = serde_json::to_string(&launch)
            .map_err(|e| SandboxError::Prepare(std::io::Error::other(e)))?;
        let mut command = tokio::process::Command::new(&self.launcher);
        command
            .arg(STAGE_ONE)
            .arg(json)
            .arg("--")
            .arg(program)
            .args(args)
            .env_clear()
            .envs(env)
            .env("TMPDIR", temp.path());
        let report = match report {
            ReportStream::Stdin => {
                let (read, write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)
                    .map_err(|e| SandboxError::Prepare(e.into()))?;
                command.stdin(Stdio::from(write));
                Some(read)
            }
            ReportStream::Stderr => None,
        };
        Ok(Prepared {
            command,
            pending: Pending { report, temp },
        })
    }
}

impl Pending {
    /// Waits for the launcher's report, once the command was spawned (and dropped, so
    /// tau holds no writer of the report itself).
    pub async fn started(mut self) -> Result<Started, SandboxError> {
        let Some(report) = self.report.take() else {
            return Err(SandboxError::NoReport);
        };
        let mut pipe = tokio::net::unix::pipe::Receiver::from_owned_fd(report)
            .map_err(SandboxError::Prepare)?;
        let mut started = self.started_on(&mut pipe).await?;
        started.lifeline = Some(Lifeline { _pipe: pipe });
        Ok(started)
    }

    /// Waits for the launcher's report on `stream` (an MCP server's stderr), reading
    /// nothing after its line: what follows is the server's own.
    pub async fn started_on(
        self,
        stream: &mut (impl tokio::io::AsyncRead + Unpin),
    ) -> Result<Started, SandboxError> {
        let mut text = Vec::new();
        let read = tokio::time::timeout(REPORT_WAIT, async {
            let mut byte = [0u8; 1];
            while text.len() < REPORT_LIMIT {
                match stream.read(&mut byte).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) if byte == [b'\n'] => break,
                    Ok(_) => text.extend_from_slice(&byte),
                }
            }
        })
        .await;
        if read.is_err() {
            return Err(SandboxError::Slow);
        }
        match Report::parse(&String::from_utf8_lossy(&text)) {
            Some(Report::Ready {
                pid_namespace,
                net_namespace,
                ..
            }) => Ok(Started {
                _temp: self.temp,
                lifeline: None,
                pid_namespace,
                net_namespace,
            }),
            Some(Report::Refused { layer, reason }) => {
                Err(SandboxError::Refused(Refusal { layer, reason }))
            }
            None => Err(SandboxError::NoReport),
        }
    }
}
