//! `run_command`: `sh -c` in the workspace, in a session of its own, with an allow-listed
//! environment, bounded in time and output; every process it started is stopped when it
//! ends, times out or its turn is cancelled.

mod output;
mod process;
mod tree;

use std::os::unix::process::ExitStatusExt;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use tau_agent::{Tool, ToolContext, ToolError, ToolOutput, ToolSpec};
use tau_core::{TauToolSpec, Tier};
use tokio::process::Command;

use crate::args;
use crate::config::CommandConfig;
use crate::workspace::Workspace;
use output::{Capture, Stream};
use process::{Ending, Running, supervise};

/// What the model reads when the turn was cancelled while the command ran.
pub(crate) const STOPPED_BY_CANCEL_TEXT: &str =
    "the turn was cancelled, so the command was stopped with everything it started";

pub(crate) struct RunCommand {
    spec: ToolSpec,
    workspace: Workspace,
    limits: CommandConfig,
    /// The whole environment the command starts with: the allow-list and the variables
    /// `[tools.command] env` names, never tau's own keys and tokens.
    env: Vec<(String, String)>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RunCommandArgs {
    command: String,
    timeout_seconds: Option<u64>,
}

impl RunCommand {
    pub(crate) fn new(
        workspace: Workspace,
        limits: CommandConfig,
        env: Vec<(String, String)>,
    ) -> Self {
        let max = limits.max_timeout_seconds;
        let spec = TauToolSpec::new(
            "run_command",
            format!(
                "Runs a shell command (sh -c) in the workspace directory and returns its exit code, stdout and stderr. \
                 Output beyond {} bytes per stream is cut. The command is stopped, with everything it started, \
                 when it ends or after timeout_seconds (default {}).",
                limits.output_limit_bytes, limits.default_timeout_seconds
            ),
            Tier::Physical,
            "runs a shell command in the workspace — code the agent wrote",
        )
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
        }
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

    fn command(&self, command: &str) -> Command {
        // A session of its own: what it starts can never rejoin tau's session, which is how
        // every process of it is found (see `tree`), and it has no terminal to read.
        let mut process = Command::new("setsid");
        process
            .arg("sh")
            .arg("-c")
            .arg(command)
            .current_dir(self.workspace.root())
            .env_clear()
            .envs(self.env.iter().map(|(name, value)| (name, value)))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        process
    }
}

#[async_trait]
impl Tool for RunCommand {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn run(&self, input: Value, context: ToolContext) -> Result<ToolOutput, ToolError> {
        let RunCommandArgs {
            command,
            timeout_seconds,
        } = args::parse("run_command", input)?;
        let timeout = self.timeout(timeout_seconds)?;
        if command.trim().is_empty() {
            return Err(ToolError::new("command is empty"));
        }
        if command.contains('\0') {
            return Err(ToolError::new("command contains a NUL byte"));
        }
        let mut running = Running::start(&mut self.command(&command))
            .map_err(|error| ToolError::new(error.to_string()))?;
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
