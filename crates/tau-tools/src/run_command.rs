//! `run_command`: `sh -c` in the workspace, bounded in time and output, its whole process
//! group stopped when it ends.

mod output;
mod process;

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
use process::{ProcessGroup, supervise};

pub(crate) struct RunCommand {
    spec: ToolSpec,
    workspace: Workspace,
    limits: CommandConfig,
    /// Environment variables the command must not see (the MQTT password).
    hidden_env: Vec<String>,
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
        hidden_env: Vec<String>,
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
            hidden_env,
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
        let mut process = Command::new("sh");
        process
            .arg("-c")
            .arg(command)
            .current_dir(self.workspace.root())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own group, so the timeout stops whatever it started, not just `sh`.
            .process_group(0)
            .kill_on_drop(true);
        for name in &self.hidden_env {
            process.env_remove(name);
        }
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
        let mut child = self
            .command(&command)
            .spawn()
            .map_err(|error| ToolError::new(format!("could not start sh: {error}")))?;
        let mut group = ProcessGroup::of(&child);
        let limit = self.limits.output_limit_bytes;
        let mut stdout = Capture::new(Stream::Stdout, limit);
        let mut stderr = Capture::new(Stream::Stderr, limit);
        let finished = supervise(
            &mut child,
            &mut group,
            [&mut stdout, &mut stderr],
            timeout,
            &context,
        )
        .await;
        let timed_out = finished.is_none();
        if timed_out {
            context.progress(format!(
                "[timed out after {} s; the command was stopped]",
                timeout.as_secs()
            ));
        }
        let status = match finished {
            Some(status) => status,
            None => child.wait().await,
        }
        .map_err(|error| ToolError::new(format!("lost track of the command: {error}")))?;
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
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use std::path::Path;
    use std::time::Instant;
    use tau_agent::{EventSink, ToolResultStatus, TurnEvent};

    fn setup(limits: CommandConfig, hidden_env: Vec<String>) -> (tempfile::TempDir, RunCommand) {
        let dir = tempfile::tempdir().unwrap();
        let tool = RunCommand::new(Workspace::open(dir.path()).unwrap(), limits, hidden_env);
        (dir, tool)
    }

    fn default_setup() -> (tempfile::TempDir, RunCommand) {
        setup(CommandConfig::default(), Vec::new())
    }

    async fn run(tool: &RunCommand, input: Value) -> Result<ToolOutput, ToolError> {
        tool.run(input, ToolContext::new("t1", "run_command", None))
            .await
    }

    fn result(status: ToolResultStatus, value: Value) -> ToolOutput {
        let mut output = ToolOutput::json(value);
        output.status = status;
        output
    }

    /// True while `pid` is a live process; a zombie waiting for its reaper is not.
    fn alive(pid: &str) -> bool {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Ok(stat) => !stat
                .rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z'),
            Err(_) => false,
        }
    }

    /// SIGKILL is delivered at once but a process takes a moment to finish dying.
    async fn dies_soon(pid: &str) -> bool {
        for _ in 0..200 {
            if !alive(pid) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        false
    }

    fn read_pid(dir: &Path) -> String {
        std::fs::read_to_string(dir.join("bg.pid"))
            .unwrap()
            .trim()
            .to_owned()
    }

    #[tokio::test]
    async fn reports_exit_code_stdout_and_stderr() {
        let (dir, tool) = default_setup();
        let output = run(&tool, json!({"command": "echo out; echo err >&2; exit 3"})).await;
        assert_eq!(
            output,
            Ok(result(
                ToolResultStatus::Error,
                json!({"exit_code": 3, "signal": null, "timed_out": false, "stdout": "out\n", "stderr": "err\n"})
            ))
        );
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let output = run(&tool, json!({"command": "pwd"})).await;
        assert_eq!(
            output,
            Ok(result(
                ToolResultStatus::Success,
                json!({"exit_code": 0, "signal": null, "timed_out": false, "stdout": format!("{}\n", root.display()), "stderr": ""})
            ))
        );
    }

    #[tokio::test]
    async fn streams_output_lines_as_progress() {
        let (_dir, tool) = default_setup();
        let (sink, mut events) = EventSink::channel();
        let context = ToolContext::new("t7", "run_command", Some(sink));
        let input = json!({"command": "echo one; echo oops >&2; printf 'two\\nthree'"});
        tool.run(input, context).await.unwrap();
        let mut messages = Vec::new();
        while let Ok(event) = events.try_recv() {
            messages.push(event);
        }
        let texts: Vec<String> = messages
            .iter()
            .filter_map(|event| match event {
                TurnEvent::ToolProgress { message, .. } => Some(message.clone()),
                _ => None,
            })
            .collect();
        // Every event is progress of this call.
        let expected: Vec<TurnEvent> = texts
            .iter()
            .map(|message| TurnEvent::ToolProgress {
                tool_use_id: "t7".into(),
                name: "run_command".into(),
                message: message.clone(),
            })
            .collect();
        assert_eq!(messages, expected);
        // The two streams interleave as the scheduler pleases; each keeps its order.
        let (stderr, stdout): (Vec<_>, Vec<_>) =
            texts.into_iter().partition(|m| m.starts_with("stderr: "));
        assert_eq!(stdout, vec!["one", "two", "three"]);
        assert_eq!(stderr, vec!["stderr: oops"]);
    }

    #[tokio::test]
    async fn a_timeout_kills_the_whole_process_group() {
        let (dir, tool) = default_setup();
        let started = Instant::now();
        let output = run(
            &tool,
            json!({"command": "sleep 30 & echo $! > bg.pid; echo started; sleep 30", "timeout_seconds": 1}),
        )
        .await;
        let elapsed = started.elapsed();
        assert_eq!(
            output,
            Ok(result(
                ToolResultStatus::Error,
                json!({"exit_code": null, "signal": 9, "timed_out": true, "stdout": "started\n", "stderr": ""})
            ))
        );
        assert!(elapsed < Duration::from_secs(5), "took {elapsed:?}");
        let pid = read_pid(dir.path());
        assert!(
            dies_soon(&pid).await,
            "background sleep {pid} survived the timeout"
        );
    }

    #[tokio::test]
    async fn nothing_it_started_outlives_it() {
        let (dir, tool) = default_setup();
        let started = Instant::now();
        let output = run(&tool, json!({"command": "sleep 30 & echo $! > bg.pid"})).await;
        assert_eq!(
            output,
            Ok(result(
                ToolResultStatus::Success,
                json!({"exit_code": 0, "signal": null, "timed_out": false, "stdout": "", "stderr": ""})
            ))
        );
        assert!(started.elapsed() < Duration::from_secs(5));
        let pid = read_pid(dir.path());
        assert!(
            dies_soon(&pid).await,
            "background sleep {pid} outlived the command"
        );
    }

    #[tokio::test]
    async fn a_cancelled_call_stops_the_whole_process_group() {
        let (dir, tool) = default_setup();
        let input = json!({"command": "sleep 30 & echo $! > bg.pid; sleep 30"});
        let call = run(&tool, input);
        let pid_file = dir.path().join("bg.pid");
        let cancelled = tokio::time::timeout(Duration::from_secs(5), async {
            tokio::pin!(call);
            // Poll the call until the command has written its pid, then drop it.
            loop {
                tokio::select! {
                    _ = &mut call => return false,
                    () = tokio::time::sleep(Duration::from_millis(20)) => {
                        if std::fs::read_to_string(&pid_file).is_ok_and(|pid| pid.ends_with('\n')) {
                            return true;
                        }
                    }
                }
            }
        })
        .await;
        assert_eq!(cancelled, Ok(true));
        let pid = read_pid(dir.path());
        assert!(
            dies_soon(&pid).await,
            "background sleep {pid} survived the cancelled call"
        );
    }

    #[tokio::test]
    async fn output_beyond_the_cap_is_cut_with_a_marker() {
        let limits = CommandConfig {
            output_limit_bytes: 10,
            ..CommandConfig::default()
        };
        let (_dir, tool) = setup(limits, Vec::new());
        let output = run(
            &tool,
            json!({"command": "printf 0123456789abcdef; head -c 100000 /dev/zero >&2"}),
        )
        .await;
        assert_eq!(
            output,
            Ok(result(
                ToolResultStatus::Success,
                json!({
                    "exit_code": 0, "signal": null, "timed_out": false,
                    "stdout": "0123456789\n[output truncated: 6 more bytes]",
                    "stderr": format!("{}\n[output truncated: 99990 more bytes]", "\0".repeat(10)),
                })
            ))
        );
    }

    #[tokio::test]
    async fn hidden_variables_are_not_passed_on() {
        let (name, _) = std::env::vars().find(|(name, _)| name != "PATH").unwrap();
        let (_dir, tool) = setup(CommandConfig::default(), vec![name.clone()]);
        let output = run(&tool, json!({"command": format!("echo ${{{name}-unset}}")})).await;
        assert_eq!(
            output,
            Ok(result(
                ToolResultStatus::Success,
                json!({"exit_code": 0, "signal": null, "timed_out": false, "stdout": "unset\n", "stderr": ""})
            ))
        );
    }

    #[tokio::test]
    async fn bad_arguments_are_refused_before_anything_runs() {
        let (dir, tool) = default_setup();
        for (input, expected) in [
            (
                json!({"command": "touch x", "timeout_seconds": 0}),
                "timeout_seconds must be between 1 and 300, got 0",
            ),
            (
                json!({"command": "touch x", "timeout_seconds": 301}),
                "timeout_seconds must be between 1 and 300, got 301",
            ),
            (
                json!({"command": "touch x", "timeout_seconds": 1.5}),
                "invalid arguments for run_command: invalid type: floating point `1.5`, expected u64",
            ),
            (
                json!({"command": "touch x", "cwd": "/"}),
                "invalid arguments for run_command: unknown field `cwd`, expected `command` or `timeout_seconds`",
            ),
            (json!({"command": "  "}), "command is empty"),
            (
                json!({"command": "touch x\u{0}y"}),
                "command contains a NUL byte",
            ),
        ] {
            assert_eq!(
                run(&tool, input.clone()).await,
                Err(ToolError::new(expected)),
                "{input}"
            );
        }
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
