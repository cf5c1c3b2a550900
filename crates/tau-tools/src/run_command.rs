//! `run_command`: `sh -c` in the workspace, in a session of its own, with an allow-listed
//! environment, bounded in time and output, in the sandbox (unless it is off); every
//! process it started is stopped when it ends, times out or its turn is cancelled.

mod output;
mod process;
mod tree;

use std::ffi::OsStr;
use std::os::unix::process::ExitStatusExt;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use tau_agent::{Tool, ToolContext, ToolError, ToolOutput, ToolSpec};
use tau_core::{AuditEvent, ErrorSite, EventBus, TauToolSpec};
use tau_protocol::{ShownFile, Tier};
use tau_sandbox::{Sandbox, SandboxError, SandboxLayer, Started};
use tokio::process::Command;

use crate::args;
use crate::config::CommandConfig;
use crate::workspace::Workspace;
use crate::written::{Written, read_and_hash};
use output::{Capture, Stream};
use process::{Ending, Running, supervise};

/// What the model reads when the turn was cancelled while the command ran.
pub(crate) const STOPPED_BY_CANCEL_TEXT: &str =
    "the turn was cancelled, so the command was stopped with everything it started";

/// What the model reads when a file the question showed is not what it was.
pub(crate) fn file_changed_text(path: &str, shown: Option<&str>, now: Option<&str>) -> String {
    match (shown, now) {
        (None, _) => format!(
            "the command did not run: {path} could not be read when the user was asked, so they \
             could not see what it would run"
        ),
        (Some(shown), now) => format!(
            "the command did not run: {path} changed after the user was shown it (SHA-256 \
             {shown} then, {} now)",
            now.unwrap_or("unreadable")
        ),
    }
}

/// Each file the question showed still hashes to what was shown; the text of the first
/// that does not.
fn check_pins(workspace: &Workspace, pins: &[ShownFile]) -> Result<(), String> {
    for pin in pins {
        let now = read_and_hash(workspace, &pin.path)
            .ok()
            .map(|(_, _, sha)| sha);
        if pin.sha256.is_none() || now != pin.sha256 {
            return Err(file_changed_text(
                &pin.path,
                pin.sha256.as_deref(),
                now.as_deref(),
            ));
        }
    }
    Ok(())
}

/// What the model reads when the sandbox could not be set up: the command did not run.
pub(crate) fn sandbox_refused_text(error: &SandboxError) -> String {
    let instead = if error.layer() == SandboxLayer::Namespaces {
        "`sandbox = \"reduced\"` under [tools.command] in tau.toml runs commands without \
         namespaces (a weaker sandbox), `sandbox = \"off\"` without a sandbox"
    } else {
        "`sandbox = \"off\"` under [tools.command] in tau.toml runs commands without a sandbox"
    };
    format!(
        "the command did not run: the sandbox could not be set up ({error}). `tau doctor` shows \
         what this machine has; {instead}"
    )
}

pub(crate) struct RunCommand {
    spec: ToolSpec,
    workspace: Workspace,
    limits: CommandConfig,
    /// The whole environment the command starts with: the allow-list and the variables
    /// `[tools.command] env` names, never tau's own keys and tokens.
    env: Vec<(String, String)>,
    sandbox: Sandbox,
    /// The files tau's file tools wrote, and what questions showed of them.
    written: Arc<Written>,
    /// Told of each command the sandbox refused (an `error` line in the audit log).
    events: Option<EventBus>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RunCommandArgs {
    pub command: String,
    pub timeout_seconds: Option<u64>,
    /// Network access, which the person sees on the question.
    #[serde(default)]
    pub network: bool,
}

impl RunCommand {
    pub(crate) fn new(
        workspace: Workspace,
        limits: CommandConfig,
        env: Vec<(String, String)>,
        sandbox: Sandbox,
    ) -> Self {
        let max = limits.max_timeout_seconds;
        let confinement = match sandbox {
            Sandbox::On(_) => {
                " It runs in a sandbox: it can write only in the workspace and $TMPDIR, cannot read \
                 the user's keys or tau's own files, and has no network unless network is true, \
                 which the user sees when asked to approve."
            }
            Sandbox::Off => "",
        };
        let spec = TauToolSpec::new(
            "run_command",
            format!(
                "Runs a shell command (sh -c) in the workspace directory and returns its exit code, stdout and stderr. \
                 Output beyond {} bytes per stream is cut. The command is stopped, with everything it started, \
                 when it ends or after timeout_seconds (default {}).{confinement}",
                limits.output_limit_bytes, limits.default_timeout_seconds
            ),
            Tier::Physical,
            "runs a shell command in the workspace — code the agent wrote",
        )
        .runs_workspace()
        .input_schema(json!({
            "type": "object",
            "properties": {
                "command": {
                    "type": "string",
                    "description": "The shell command, e.g. 'ls -l | head'.",
                },
                "timeout_seconds": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": max,
                    "description": "Seconds before the command is stopped.",
                },
                "network": {
                    "type": "boolean",
                    "description": "true when the command needs the network (default false).",
                },
            },
            "required": ["command"],
            "additionalProperties": false,
        }))
        .build();
        Self {
            spec,
            workspace,
            limits,
            env,
            sandbox,
            written: Arc::default(),
            events: None,
        }
    }

    /// Tells `events` of each command the sandbox refused.
    pub(crate) fn reporting(mut self, events: Option<EventBus>) -> Self {
        self.events = events;
        self
    }

    /// The refusal as the model reads it, and as an `error` line in the audit log.
    fn refused(&self, error: &SandboxError, context: &ToolContext) -> ToolError {
        tracing::warn!(%error, "a command was refused: the sandbox could not be set up");
        let text = sandbox_refused_text(error);
        if let Some(events) = &self.events {
            events.emit(&AuditEvent::error(
                ErrorSite::Sandbox,
                text.clone(),
                Some("run_command"),
                Some(context.tool_use_id()),
            ));
        }
        ToolError::new(text)
    }

    /// Checks the files its questions showed against `written`.
    pub(crate) fn recording(mut self, written: Arc<Written>) -> Self {
        self.written = written;
        self
    }

    fn timeout(&self, asked: Option<u64>) -> Result<Duration, ToolError> {
        let max = self.limits.max_timeout_seconds;
        match asked.unwrap_or(self.limits.default_timeout_seconds) {
            seconds @ 1.. if seconds <= max => Ok(Duration::from_secs(seconds)),
            seconds => Err(ToolError::new(format!(
                "timeout_seconds must be between 1 and {max}, got {seconds}"
            ))),
        }
    }

    /// The command, and in the sandbox the launcher's report still to come. Either way in
    /// a session of its own: what it starts can never rejoin tau's session, which is how
    /// every process of it is found (see `tree`), and it has no terminal to read.
    fn command(
        &self,
        command: &str,
        network: bool,
    ) -> Result<(Command, Option<tau_sandbox::Pending>), SandboxError> {
        let env = self.env.iter().map(|(n, v)| (n.as_str(), v.as_str()));
        let (mut process, pending) = match &self.sandbox {
            Sandbox::On(confinement) => {
                let prepared = confinement.command(
                    OsStr::new("sh"),
                    [OsStr::new("-c"), OsStr::new(command)],
                    self.workspace.root(),
                    env,
                    network,
                    false,
                )?;
                (prepared.command, Some(prepared.pending))
            }
            Sandbox::Off => {
                let mut process = Command::new("setsid");
                process
                    .arg("sh")
                    .arg("-c")
                    .arg(command)
                    .env_clear()
                    .envs(env)
                    .stdin(Stdio::null());
                (process, None)
            }
        };
        process
            .current_dir(self.workspace.root())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        Ok((process, pending))
    }

    /// Waits for the sandbox to report that the command started; a refusal (or a cancel
    /// meanwhile) is the call's error, and the command never ran.
    async fn sandbox_started(
        &self,
        pending: Option<tau_sandbox::Pending>,
        context: &ToolContext,
    ) -> Result<Option<Started>, ToolError> {
        let Some(pending) = pending else {
            return Ok(None);
        };
        let outcome = tokio::select! {
            outcome = pending.started() => outcome,
            () = context.cancelled() => return Err(ToolError::new(STOPPED_BY_CANCEL_TEXT)),
        };
        match outcome {
            Ok(started) => Ok(Some(started)),
            Err(error) => Err(self.refused(&error, context)),
        }
    }
}

#[async_trait]
impl Tool for RunCommand {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn run(&self, input: Value, context: ToolContext) -> Result<ToolOutput, ToolError> {
        // What the question showed of the files the command names (nothing when nobody
        // was asked).
        let pins = self.written.take_pins(&input);
        let RunCommandArgs {
            command,
            timeout_seconds,
            network,
        } = args::parse("run_command", input)?;
        let timeout = self.timeout(timeout_seconds)?;
        if command.trim().is_empty() {
            return Err(ToolError::new("command is empty"));
        }
        if command.contains('\0') {
            return Err(ToolError::new("command contains a NUL byte"));
        }
        if !pins.is_empty() {
            let workspace = self.workspace.clone();
            tokio::task::spawn_blocking(move || check_pins(&workspace, &pins))
                .await
                .map_err(|_| ToolError::new("checking the files the question showed failed"))?
                .map_err(ToolError::new)?;
        }
        let (mut process, pending) = self
            .command(&command, network)
            .map_err(|error| self.refused(&error, &context))?;
        let mut running =
            Running::start(&mut process).map_err(|error| ToolError::new(error.to_string()))?;
        // tau keeps no writer of the launcher's report: its end is the launcher's to close.
        drop(process);
        // Held to the end: the command's private temp dir goes with it.
        let mut started = match self.sandbox_started(pending, &context).await {
            Ok(started) => started,
            Err(error) => {
                running.end().await;
                return Err(error);
            }
        };
        running.hold(started.as_mut().and_then(Started::take_lifeline));
        let limit = self.limits.output_limit_bytes;
        let mut stdout = Capture::new(Stream::Stdout, limit);
        let mut stderr = Capture::new(Stream::Stderr, limit);
        let ending = supervise(&mut running, [&mut stdout, &mut stderr], timeout, &context).await;
        let (status, timed_out) = match ending {
            Ending::Exited(status) => (status, false),
            Ending::TimedOut => (running.wait().await, true),
            Ending::Cancelled => {
                let _ = running.wait().await;
                running.finish();
                return Err(ToolError::new(STOPPED_BY_CANCEL_TEXT));
            }
        };
        running.finish();
        let status = status
            .map_err(|error| ToolError::new(format!("lost track of the command: {error}")))?;
        if timed_out {
            context.progress(format!(
                "[timed out after {} s; the command was stopped]",
                timeout.as_secs()
            ));
        }
        Ok(report(status, timed_out, &stdout, &stderr))
    }
}

fn report(status: ExitStatus, timed_out: bool, stdout: &Capture, stderr: &Capture) -> ToolOutput {
    let exit_code = status.code();
    let value = json!({
        "exit_code": exit_code,
        "signal": status.signal(),
        "timed_out": timed_out,
        "stdout": stdout.text(),
        "stderr": stderr.text(),
    });
    let mut output = ToolOutput::json(value);
    if timed_out || exit_code != Some(0) {
        output.status = tau_agent::ToolResultStatus::Error;
    }
    output
}

#[cfg(test)]
#[path = "run_command/tests.rs"]
mod tests;

#[cfg(test)]
#[path = "run_command/containment_tests.rs"]
mod containment_tests;
