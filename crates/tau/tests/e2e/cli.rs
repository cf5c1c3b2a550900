//! The command line's edges: no model, bad input, the small commands.

use crate::common;

use common::Tau;
use pretty_assertions::assert_eq;

#[test]
fn without_a_model_chat_explains_how_to_get_one_and_exits_2() {
    let tau = Tau::new();
    let run = tau.run(&["chat"], "hello\n");
    assert_eq!(run.code, 2);
    insta::assert_snapshot!(run.stderr);
    assert!(!tau.home().exists(), "nothing is written");
}

#[test]
fn bad_input_is_one_clear_line_exit_2_and_nothing_written() {
    let tau = Tau::new();
    let cases = [
        (
            "[agent]\nmax_turns = \"many\"\n",
            vec!["chat"],
            "agent.max_turns: invalid type: string \"many\", expected u32",
        ),
        ("[agent\n", vec!["chat"], "tau.toml"),
        (
            "[tools]\nworkspace = \"/does/not/exist\"\n",
            vec!["chat"],
            "tools.workspace: '/does/not/exist' does not exist or is not a directory",
        ),
        ("[tool]\nx = 1\n", vec!["tools"], "unknown field `tool`"),
        (
            "[tools]\ndisabled = [\"teleport\"]\n",
            vec!["chat"],
            "tools.disabled: there is no built-in tool named 'teleport'",
        ),
        (
            "",
            vec!["chat", "--session", "../etc"],
            "session name \"../etc\" is invalid",
        ),
    ];
    for (config, args, expected) in cases {
        let path = tau.config(config);
        let mut all = vec![
            "--config",
            path.to_str().unwrap(),
            "--model",
            "replay:/nonexistent.json",
        ];
        all.extend(args);
        let run = tau.run(&all, "");
        assert_eq!(run.code, 2, "{config:?}: {}", run.stderr);
        assert_eq!(run.stderr.lines().count(), 1, "one line: {}", run.stderr);
        assert!(run.stderr.contains(expected), "{config:?}: {}", run.stderr);
        assert!(!tau.home().exists(), "nothing is written for {config:?}");
    }
}

#[test]
fn version_and_completions() {
    let tau = Tau::new();
    let version = tau.run(&["--version"], "");
    assert_eq!(
        version.stdout,
        format!("tau {}\n", env!("CARGO_PKG_VERSION"))
    );
    let bash = tau.run(&["completions", "bash"], "");
    assert_eq!(bash.code, 0);
    assert!(bash.stdout.contains("_tau()"), "{}", bash.stdout);
}

#[test]
fn tools_lists_every_tool_with_its_tier_and_effect() {
    let tau = Tau::new();
    let run = tau.run(&["tools"], "");
    assert_eq!(run.code, 0, "{}", run.stderr);
    insta::assert_snapshot!(run.stdout);
}

#[test]
fn config_check_prints_the_effective_config_or_the_error() {
    let tau = Tau::new();
    let path = tau.config("[ui]\nlanguage = \"tr\"\n");
    let run = tau.run(&["--config", path.to_str().unwrap(), "config", "check"], "");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains("[ui]\nlanguage = \"tr\"\n"),
        "{}",
        run.stdout
    );
    let path = tau.config("[approval]\ntimeout_seconds = 0\n");
    let run = tau.run(&["--config", path.to_str().unwrap(), "config", "check"], "");
    assert_eq!(run.code, 2);
    assert!(run.stderr.ends_with("approval.timeout_seconds: must be a number of seconds above 0 and at most 86400, got 0\n"), "{}", run.stderr);
}
