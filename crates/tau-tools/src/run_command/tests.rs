use super::*;
use pretty_assertions::assert_eq;
use std::path::Path;
use std::time::Instant;
use tau_agent::{EventSink, ToolResultStatus, TurnEvent};

fn setup(limits: CommandConfig) -> (tempfile::TempDir, RunCommand) {
    let dir = tempfile::tempdir().unwrap();
    // Read, never changed: the commands need PATH.
    let env = tau_core::child_env(&[], &|name| std::env::var(name).ok());
    let tool = RunCommand::new(
        Workspace::open(dir.path()).unwrap(),
        limits,
        env,
        tau_sandbox::Sandbox::Off,
    );
    (dir, tool)
}

pub(super) fn default_setup() -> (tempfile::TempDir, RunCommand) {
    setup(CommandConfig::default())
}

pub(super) async fn run(tool: &RunCommand, input: Value) -> Result<ToolOutput, ToolError> {
    tool.run(input, ToolContext::new("t1", "run_command", None))
        .await
}

pub(super) fn result(status: ToolResultStatus, value: Value) -> ToolOutput {
    let mut output = ToolOutput::json(value);
    output.status = status;
    output
}

/// True while `pid` is a live process; a zombie waiting for its reaper is not.
pub(super) fn alive(pid: &str) -> bool {
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
pub(super) async fn dies_soon(pid: &str) -> bool {
    for _ in 0..200 {
        if !alive(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    false
}

pub(super) fn read_pid(dir: &Path) -> String {
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
async fn a_dropped_call_stops_the_whole_process_group() {
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
        "background sleep {pid} survived the dropped call"
    );
}

#[tokio::test]
async fn output_beyond_the_cap_is_cut_with_a_marker() {
    let limits = CommandConfig {
        output_limit_bytes: 10,
        ..CommandConfig::default()
    };
    let (_dir, tool) = setup(limits);
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

/// The parent's environment, as data: what tau may hold, secrets included.
fn parent_env(name: &str) -> Option<String> {
    let value = match name {
        "PATH" => return std::env::var("PATH").ok(),
        "HOME" => "/home/ada",
        "USER" => "ada",
        "LANG" => "C.UTF-8",
        "LC_TIME" => "tr_TR.UTF-8",
        "TZ" => "Europe/Istanbul",
        "TERM" => "xterm",
        "OPENAI_API_KEY" => "sk-openai-secret",
        "ANTHROPIC_API_KEY" => "sk-ant-secret",
        "AWS_BEARER_TOKEN_BEDROCK" => "bedrock-secret",
        "TAU_MCP_TOKEN" => "mcp-secret",
        "TAU_MQTT_PASSWORD" => "mqtt-secret",
        "GIT_AUTHOR_NAME" => "Ada",
        _ => return None,
    };
    Some(value.to_owned())
}

#[tokio::test]
async fn a_command_sees_the_allow_list_and_what_the_config_names_only() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = crate::ToolsConfig {
        workspace: dir.path().to_path_buf(),
        ..crate::ToolsConfig::default()
    };
    config.command.env = vec!["GIT_AUTHOR_NAME".into()];
    config.mqtt.username = Some("tau".into());
    config.mqtt.password_env = Some("TAU_MQTT_PASSWORD".into());
    let tools = crate::builtin_tools(&config, &parent_env, tau_sandbox::Sandbox::Off).unwrap();
    let tool = tools
        .iter()
        .find(|t| t.spec().name == "run_command")
        .unwrap();
    let output = tool
        .run(
            json!({"command": "env"}),
            ToolContext::new("t1", "run_command", None),
        )
        .await
        .unwrap();
    let Some(tau_agent::ToolResultContent::Json(value)) = output.content.first() else {
        panic!("{output:?}");
    };
    let mut seen: Vec<String> = value["stdout"]
        .as_str()
        .unwrap()
        .lines()
        // What the shell sets itself.
        .filter(|line| {
            !["PWD=", "OLDPWD=", "SHLVL=", "_="]
                .iter()
                .any(|p| line.starts_with(p))
        })
        .map(str::to_owned)
        .collect();
    seen.sort();
    let mut expected: Vec<String> = [
        "GIT_AUTHOR_NAME=Ada",
        "HOME=/home/ada",
        "LANG=C.UTF-8",
        "LC_TIME=tr_TR.UTF-8",
        "TERM=xterm",
        "TZ=Europe/Istanbul",
        "USER=ada",
    ]
    .iter()
    .map(|line| (*line).to_owned())
    .collect();
    expected.push(format!("PATH={}", std::env::var("PATH").unwrap()));
    expected.sort();
    assert_eq!(seen, expected);
}

#[tokio::test]
async fn a_command_that_cannot_start_says_why_and_the_next_one_runs() {
    let dir = tempfile::tempdir().unwrap();
    let env = vec![("PATH".to_owned(), "/nonexistent".to_owned())];
    let tool = RunCommand::new(
        Workspace::open(dir.path()).unwrap(),
        CommandConfig::default(),
        env,
        tau_sandbox::Sandbox::Off,
    );
    assert_eq!(
        run(&tool, json!({"command": "true"})).await,
        Err(ToolError::new(
            "could not start `setsid sh -c`: No such file or directory (os error 2)"
        ))
    );
    let (_dir, tool) = default_setup();
    assert_eq!(
        run(&tool, json!({"command": "true"})).await,
        Ok(result(
            ToolResultStatus::Success,
            json!({"exit_code": 0, "signal": null, "timed_out": false, "stdout": "", "stderr": ""})
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
            "invalid arguments for run_command: unknown field `cwd`, expected one of `command`, `timeout_seconds`, `network`",
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

#[test]
fn the_file_changed_texts_are_byte_exact() {
    assert_eq!(
        file_changed_text("setup.sh", Some("ab"), Some("cd")),
        "the command did not run: setup.sh changed after the user was shown it (SHA-256 ab \
         then, cd now)"
    );
    assert_eq!(
        file_changed_text("setup.sh", Some("ab"), None),
        "the command did not run: setup.sh changed after the user was shown it (SHA-256 ab \
         then, unreadable now)"
    );
    assert_eq!(
        file_changed_text("setup.sh", None, Some("cd")),
        "the command did not run: setup.sh could not be read when the user was asked, so they \
         could not see what it would run"
    );
}

#[test]
fn the_sandbox_refused_texts_are_byte_exact() {
    use tau_sandbox::{Refusal, SandboxError, SandboxLayer};
    let refused = |layer, reason: &str| {
        sandbox_refused_text(&SandboxError::Refused(Refusal {
            layer,
            reason: reason.to_owned(),
        }))
    };
    assert_eq!(
        refused(SandboxLayer::Namespaces, "none here"),
        "the command did not run: the sandbox could not be set up (the user, network and PID \
         namespaces could not be set up: none here). `tau doctor` shows what this machine has; \
         `sandbox = \"reduced\"` under [tools.command] in tau.toml runs commands without \
         namespaces (a weaker sandbox), `sandbox = \"off\"` without a sandbox"
    );
    assert_eq!(
        refused(
            SandboxLayer::Privileges,
            "capability 21 is still in the bounding set"
        ),
        "the command did not run: the sandbox could not be set up (the drop of every \
         capability could not be set up: capability 21 is still in the bounding set). `tau \
         doctor` shows what this machine has; `sandbox = \"off\"` under [tools.command] in \
         tau.toml runs commands without a sandbox"
    );
}

/// A stored question's card, handed to a tau that wrote nothing (it restarted): the
/// pins it brings back hold the call as the first process's would have.
#[tokio::test]
async fn pins_a_stored_card_brings_back_hold_the_call() {
    use crate::command_card::CommandCard;
    use tau_core::{CardWriter, Resumed};

    let (dir, tool) = default_setup();
    let asked_by = Arc::new(Written::default());
    let asking = CommandCard {
        workspace: Workspace::open(dir.path()).unwrap(),
        sandbox: Sandbox::Off,
        written: Arc::clone(&asked_by),
    };
    std::fs::write(dir.path().join("setup.sh"), "echo original >> ran.txt\n").unwrap();
    asked_by.record("setup.sh");
    let arguments = json!({"command": "sh setup.sh"});
    let mut card = tau_protocol::CallCard::default();
    asking.write("run_command", &arguments, &mut card);
    assert_eq!(card.shown_files.len(), 1);

    // The restarted process: its tool and its card writer share a ledger that is empty.
    let written = Arc::new(Written::default());
    let tool = tool.recording(Arc::clone(&written));
    let resuming = CommandCard {
        workspace: Workspace::open(dir.path()).unwrap(),
        sandbox: Sandbox::Off,
        written,
    };
    std::fs::write(dir.path().join("setup.sh"), "echo edited >> ran.txt\n").unwrap();
    assert_eq!(
        resuming.resume("run_command", &arguments, &card),
        Ok(Resumed::HoldsShownFiles)
    );
    let refused = run(&tool, arguments.clone()).await.unwrap_err();
    assert!(
        refused
            .message
            .starts_with("the command did not run: setup.sh changed after the user was shown it"),
        "{}",
        refused.message
    );
    assert!(!dir.path().join("ran.txt").exists());

    // Positive control: the file as shown runs.
    std::fs::write(dir.path().join("setup.sh"), "echo original >> ran.txt\n").unwrap();
    resuming.resume("run_command", &arguments, &card).unwrap();
    let output = run(&tool, arguments).await.unwrap();
    assert_eq!(output.status, ToolResultStatus::Success);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("ran.txt")).unwrap(),
        "original\n"
    );
}
