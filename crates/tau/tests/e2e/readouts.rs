//! What the commands print for a person to read at a glance: `tau sessions list` keeps
//! its columns under a hub's long ids, `tau routines show` names the variable a webhook's
//! secret is read from (never the secret), and `tau serve` names its model and, only on a
//! terminal, prints the link with the token a person clicks to open TauBar.

use crate::common;

use common::pty::Pty;
use common::{Tau, answer};
use pretty_assertions::assert_eq;
use serde_json::json;

#[test]
fn sessions_list_keeps_its_columns_under_long_ids() {
    let tau = Tau::new();
    let model = tau.replay(&json!([answer("One."), answer("Two.")]));
    let long = "web-20261203-080219-fda72d0123456789abcdef0123456789";
    for (session, prompt) in [("kitchen", "hi\n"), (long, "hello there\n")] {
        let run = tau.run(&["--model", &model, "chat", "--session", session], prompt);
        assert_eq!(run.code, 0, "{}", run.stderr);
    }
    let listed = tau.run(&["sessions", "list"], "");
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    let lines: Vec<&str> = listed.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{}", listed.stdout);
    // Each left-aligned column starts where its heading does; the counts end where
    // MESSAGES ends. The ids are ASCII: byte offsets are columns.
    let starts_at =
        |line: &str, at: usize| line.as_bytes()[at] != b' ' && line.as_bytes()[at - 1] == b' ';
    for heading in ["UPDATED", "TITLE"] {
        let at = lines[0].find(heading).unwrap();
        for line in &lines[1..] {
            assert!(starts_at(line, at), "{heading}:\n{}", listed.stdout);
        }
    }
    let end = lines[0].find("MESSAGES").unwrap() + "MESSAGES".len();
    for line in &lines[1..] {
        assert_eq!(
            (line.as_bytes()[end - 1], line.as_bytes()[end]),
            (b'2', b' '),
            "MESSAGES:\n{}",
            listed.stdout
        );
    }
}

#[test]
fn routines_show_names_the_variable_a_webhook_s_secret_is_read_from() {
    let tau = Tau::new();
    let config = tau.config(
        "[[routines]]\nname = \"doorbell\"\nwebhook = { secret_env = \"TAU_TEST_DOORBELL\" }\npayload = \"ring\"\ntool = \"clock\"\n",
    );
    let secret = "a-doorbell-secret-of-enough-length";
    let shown = tau.run_env(
        &[
            "--config",
            config.to_str().unwrap(),
            "routines",
            "show",
            "doorbell",
        ],
        &[("TAU_TEST_DOORBELL", secret)],
        "",
    );
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    assert!(
        shown.stdout.contains(
            "           POST /hooks/doorbell with Authorization: Bearer <the secret in $TAU_TEST_DOORBELL>\n"
        ),
        "{}",
        shown.stdout
    );
    assert!(!shown.stdout.contains(secret), "{}", shown.stdout);
}

#[test]
fn tau_serve_names_its_model_and_links_a_terminal_in_with_the_token() {
    let tau = Tau::new();
    let model = tau.replay(&json!([answer("hi")]));
    let config = tau.serve_config("");
    // A pipe (a service's journal, a log): the model, never the token.
    let serve = tau.serve(&model, &config);
    assert_eq!(serve.banner[0], format!("tau serve: model {model}"));
    assert!(
        !serve.banner.iter().any(|line| line.contains(&serve.token)),
        "{:?}",
        serve.banner
    );
    assert!(
        serve
            .banner
            .iter()
            .any(|line| line.ends_with("#token=TOKEN")),
        "{:?}",
        serve.banner
    );
    let token = serve.token.clone();
    drop(serve);

    // A terminal: the link to click, with the token after its `#` (never sent to a
    // server, dropped from the address bar by the page).
    let mut pty = Pty::start(
        &tau,
        &[
            "--config",
            config.to_str().unwrap(),
            "--model",
            &model,
            "serve",
        ],
    );
    pty.wait_for("(`tau serve --print-token` prints it)");
    let screen = pty.screen();
    let opened = screen
        .lines()
        .find_map(|line| line.trim_end().strip_prefix("tau serve: open "))
        .unwrap_or_else(|| panic!("no link on:\n{screen}"));
    assert!(
        opened.starts_with("http://127.0.0.1:") && opened.ends_with(&format!("/#token={token}")),
        "{opened}"
    );
    assert!(
        screen.contains(&format!("tau serve: model {model}")),
        "{screen}"
    );
    // Ctrl-C stops it.
    pty.type_keys("\u{3}");
    pty.finish();
}
