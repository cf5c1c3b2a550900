//! Routines end to end: `create_routine` in a `replay:` conversation registers a routine
//! only on the person's yes; `tau routines` lists, shows, runs and switches them; a
//! routine that cannot run is a config error naming it and the key.

use crate::common;

use common::{Tau, answer, tool_call};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

fn hello() -> Value {
    json!({"name": "hello", "every": "10m", "tool": "run_command",
           "arguments": {"command": "echo hi >> hello.txt"}})
}

fn create_chat(tau: &Tau, answer_line: &str) -> common::Run {
    let model = tau.replay(&json!([
        tool_call("t1", "create_routine", &hello()),
        answer("Done.")
    ]));
    tau.run(
        &[
            "--model",
            &model,
            "chat",
            "--session",
            "s1",
            "--answers-from-stdin",
        ],
        &format!("say hi every ten minutes\n{answer_line}\n"),
    )
}

fn stdout_of(tau: &Tau, args: &[&str]) -> String {
    let run = tau.run(args, "");
    assert_eq!(run.code, 0, "{}", run.stderr);
    run.stdout
}

#[test]
fn create_routine_registers_the_routine_only_on_the_persons_yes() {
    let refused = Tau::new();
    let run = create_chat(&refused, "n");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(stdout_of(&refused, &["routines", "list"]).starts_with("no routines yet"));

    let tau = Tau::new();
    let run = create_chat(&tau, "y");
    assert_eq!(run.code, 0, "{}", run.stderr);
    // The question showed the whole routine: every key of it is an argument row.
    for row in [
        "tool       create_routine",
        "name (5 chars): \"hello\"",
        "every (3 chars): \"10m\"",
        "tool (11 chars): \"run_command\"",
        "arguments (34 chars): {\"command\":\"echo hi >> hello.txt\"}",
    ] {
        assert!(
            run.stdout.contains(row),
            "{row} missing from:\n{}",
            run.stdout
        );
    }
    let events = tau.audit_events();
    assert_eq!(
        events[2],
        json!({"type": "tool_call", "tool": "create_routine", "tier": 2, "tool_use_id": "t1",
               "arguments": hello(), "status": "success", "approval": "approved",
               "decided_by": {"kind": "person", "channel": "terminal"}, "approval_id": "ap_1",
               "result_summary": "routine 'hello' registered: every 10m, calls run_command {\"command\":\"echo hi >> hello.txt\"}. It runs while `tau serve` runs."})
    );
    let shown = stdout_of(&tau, &["routines", "show", "hello"]);
    assert!(
        shown.contains("set up in  a conversation (state.db)"),
        "{shown}"
    );
    assert!(
        shown.contains("exemption  its call, with exactly these arguments, runs without asking"),
        "{shown}"
    );

    // Its exemption: run now, it runs without a question (stdin is empty).
    let run = tau.run(&["routines", "run", "hello"], "");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        std::fs::read_to_string(tau.workspace().join("hello.txt")).unwrap(),
        "hi\n"
    );
    let events = tau.audit_events();
    let n = events.len();
    assert_eq!(
        (&events[n - 2]["approval"], &events[n - 2]["decided_by"]),
        (
            &json!("exempt"),
            &json!({"kind": "exemption", "name": "routine:hello"})
        )
    );
    assert_eq!(
        (
            &events[n - 1]["type"],
            &events[n - 1]["routine"],
            &events[n - 1]["trigger"],
            &events[n - 1]["outcome"]
        ),
        (
            &json!("routine_run"),
            &json!("hello"),
            &json!("manual"),
            &json!("success")
        )
    );
    let listed = stdout_of(&tau, &["routines", "list"]);
    assert!(listed.contains("hello  yes  every 10m"), "{listed}");
    assert!(listed.contains("success"), "{listed}");
}

#[test]
fn routines_are_switched_off_and_on() {
    let tau = Tau::new();
    let config = tau.config(
        "[[routines]]\nname = \"porch\"\ncron = \"0 19 * * *\"\ntool = \"mqtt_publish\"\narguments = { topic = \"home/porch/light/set\", payload = \"on\" }\n",
    );
    let config = config.to_str().unwrap();
    assert_eq!(
        stdout_of(&tau, &["--config", config, "routines", "disable", "porch"]),
        "routine porch disabled\n"
    );
    assert!(
        stdout_of(&tau, &["--config", config, "routines", "show", "porch"])
            .contains("enabled    no")
    );
    assert_eq!(
        stdout_of(&tau, &["--config", config, "routines", "enable", "porch"]),
        "routine porch enabled\n"
    );
    let missing = tau.run(&["--config", config, "routines", "enable", "garage"], "");
    assert_eq!(
        (missing.code, missing.stderr.as_str()),
        (
            2,
            "tau: there is no routine named 'garage' (see `tau routines list`)\n"
        )
    );
}

#[test]
fn a_routine_not_exempt_is_asked_at_the_terminal_when_run_by_hand() {
    let tau = Tau::new();
    // Made in a conversation, then edited behind the approval: no exemption any more.
    create_chat(&tau, "y");
    let db = rusqlite::Connection::open(tau.home().join("state.db")).unwrap();
    db.execute(
        "UPDATE routines SET definition = replace(definition, 'echo hi', 'echo edited')",
        [],
    )
    .unwrap();
    let shown = stdout_of(&tau, &["routines", "show", "hello"]);
    assert!(
        shown.contains("exemption  none: it changed since it was approved"),
        "{shown}"
    );
    let run = tau.run(&["routines", "run", "hello", "--answers-from-stdin"], "n\n");
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stdout.contains("approval needed"), "{}", run.stdout);
    assert!(
        run.stdout.contains("routine hello: refused"),
        "{}",
        run.stdout
    );
    assert!(!tau.workspace().join("hello.txt").exists());
}

#[test]
fn a_routine_that_cannot_run_is_a_config_error_naming_it_and_the_key() {
    let cases = [
        (
            "[[routines]]\nname = \"x\"\ncron = \"0 25 * * *\"\ntool = \"clock\"\n",
            "routines.x.cron: '0 25 * * *' is not a cron pattern: ",
        ),
        (
            "[[routines]]\nname = \"x\"\nevery = \"1m\"\ntool = \"lampp\"\n",
            "routines.x.tool: there is no tool named 'lampp' (see `tau tools`)",
        ),
        (
            "[[routines]]\nname = \"x\"\nevery = \"1m\"\ntool = \"mqtt_publish\"\narguments = { topic = \"a\" }\n",
            "routines.x.arguments.payload: is required by the tool and missing",
        ),
        (
            "[[routines]]\nname = \"x\"\nwebhook = { secret_env = \"NOT=A NAME\" }\ntool = \"clock\"\n",
            "routines.x.webhook.secret_env: an environment variable name cannot hold '=' or a NUL byte, got \"NOT=A NAME\"",
        ),
        (
            "[[routines]]\nname = \"x\"\nevery = \"1m\"\ntool = \"clock\"\nask = \"email\"\n",
            "routines.x.ask: must be \"web\" or \"telegram\", got \"email\"",
        ),
        (
            "[[routines]]\nname = \"x\"\nevry = \"1m\"\ntool = \"clock\"\n",
            "routines.x.evry: unknown key; a routine has name, every, cron, at, mqtt, webhook, payload, tool, arguments, prompt, ask, enabled, owner",
        ),
    ];
    for (text, expected) in cases {
        let tau = Tau::new();
        let config = tau.config(text);
        let run = tau.run(
            &["--config", config.to_str().unwrap(), "routines", "list"],
            "",
        );
        assert_eq!(run.code, 2, "{text}");
        let prefix = format!("tau: {}: {expected}", config.display());
        assert!(
            run.stderr.starts_with(&prefix),
            "{text}\n got: {}\nwant: {prefix}",
            run.stderr
        );
    }
}
