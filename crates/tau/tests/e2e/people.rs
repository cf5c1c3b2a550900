//! `tau people`: `[[people]]` checked at start with one line per mistake, `add` and
//! `remove` editing `tau.toml` and keeping every other byte, a person's own TauBar token
//! (kept hashed, replaced, revoked) and a one-time invite link.

use crate::common;

use common::Tau;
use pretty_assertions::assert_eq;

fn people(tau: &Tau, config: &std::path::Path, args: &[&str]) -> common::Run {
    let mut all = vec!["--config", config.to_str().unwrap(), "people"];
    all.extend_from_slice(args);
    tau.run(&all, "")
}

#[test]
fn a_home_without_people_is_one_person_called_owner() {
    let tau = Tau::new();
    let config = tau.config("");
    let run = people(&tau, &config, &["list"]);
    assert_eq!(
        (run.code, run.stdout.as_str(), run.stderr.as_str()),
        (
            0,
            "no [[people]] in tau.toml: tau knows one person, owner (TauBar's token, Telegram's owners, whoever sits at this terminal); add one with `tau people add NAME`\n",
            ""
        )
    );
}

#[test]
fn each_mistake_in_people_is_one_line_naming_its_key() {
    let tau = Tau::new();
    for (text, line) in [
        (
            "[[people]]\nname = \"Ana\"\n",
            "people[0].name: person name \"Ana\" is invalid: use 3 to 32 of a-z, 0-9 and '-'",
        ),
        (
            "[[people]]\nname = \"ana\"\n[[people]]\nname = \"ana\"\n",
            "people[1].name: 'ana' is named twice; each person once",
        ),
        (
            "[[people]]\nname = \"ana\"\ntelegram = 5\n[[people]]\nname = \"bob\"\ntelegram = 5\n",
            "people[1].telegram: Telegram user 5 is already 'ana'; one person each",
        ),
    ] {
        let config = tau.config(text);
        let run = people(&tau, &config, &["list"]);
        assert_eq!(
            (run.code, run.stderr),
            (2, format!("tau: {}: {line}\n", config.display()))
        );
    }
}

#[test]
fn add_and_remove_edit_only_their_block() {
    let tau = Tau::new();
    let before = "# the household\n[ui]\nlanguage = \"en\"  # or tr\n\n[[people]]\nname = \"ana\"\ntelegram = 11\n";
    let config = tau.config(before);
    let run = people(
        &tau,
        &config,
        &["add", "bob", "--telegram", "22", "--unix-user", "bob"],
    );
    assert_eq!(run.stderr, "");
    assert_eq!(
        run.stdout,
        format!(
            "added bob to {}; a running `tau serve` knows them after a restart\n",
            config.display()
        )
    );
    let added = std::fs::read_to_string(&config).unwrap();
    assert_eq!(
        added,
        format!("{before}\n[[people]]\nname = \"bob\"\ntelegram = 22\nunix_user = \"bob\"\n")
    );
    let run = people(&tau, &config, &["add", "cyd", "--telegram", "22"]);
    assert_eq!(
        (run.code, run.stderr),
        (
            2,
            "tau: people[2].telegram: Telegram user 22 is already 'bob'; one person each\n"
                .to_owned()
        )
    );
    assert_eq!(std::fs::read_to_string(&config).unwrap(), added);
    let run = people(&tau, &config, &["list"]);
    assert_eq!(
        run.stdout,
        "ana  telegram 11  TauBar token: none\nbob  telegram 22  unix user bob  TauBar token: none\nTauBar's own token (`tau serve --print-token`) is ana's\n"
    );
    let run = people(&tau, &config, &["remove", "bob"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(std::fs::read_to_string(&config).unwrap(), before);
}

#[test]
fn a_persons_token_is_kept_hashed_replaced_and_revoked() {
    let tau = Tau::new();
    let config = tau.config("[[people]]\nname = \"ana\"\n");
    let first = people(&tau, &config, &["token", "ana"]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    let token = first.stdout.trim().to_owned();
    assert_eq!(token.len(), 64);
    let second = people(&tau, &config, &["token", "ana"]).stdout;
    assert_ne!(second.trim(), token, "a new token replaces the old");
    let db = std::fs::read(tau.home().join("state.db")).unwrap();
    let text = String::from_utf8_lossy(&db);
    assert!(!text.contains(&token) && !text.contains(second.trim()));
    assert_eq!(
        people(&tau, &config, &["list"]).stdout,
        "ana  TauBar token: yes\nTauBar's own token (`tau serve --print-token`) is ana's\n"
    );
    assert_eq!(
        people(&tau, &config, &["token", "ana", "--revoke"]).stdout,
        "ana's TauBar token is revoked\n"
    );
    assert_eq!(
        people(&tau, &config, &["token", "ana", "--revoke"]).stdout,
        "ana had no TauBar token\n"
    );
    let run = people(&tau, &config, &["token", "zed"]);
    assert_eq!(
        (run.code, run.stderr),
        (
            2,
            "tau: no person is called 'zed'; `tau people list` names them\n".to_owned()
        )
    );
}

#[test]
fn an_invite_is_a_link_with_a_secret_after_the_hash() {
    let tau = Tau::new();
    let config = tau.config("[web]\nlisten = \"127.0.0.1:7878\"\n\n[[people]]\nname = \"ana\"\n");
    let run = people(&tau, &config, &["invite", "ana"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let (link, rest) = run.stdout.split_once('\n').unwrap();
    let secret = link.strip_prefix("http://127.0.0.1:7878/enroll#").unwrap();
    assert_eq!(secret.len(), 64);
    assert_eq!(rest, "(for ana, once, within 24 hours)\n");
}

#[test]
fn the_terminal_is_the_unix_users_person_or_says_to_name_one() {
    let tau = Tau::new();
    let config = tau.config(
        "[model]\nspec = \"replay:none.json\"\n\n[[people]]\nname = \"ana\"\nunix_user = \"ana\"\n\n[[people]]\nname = \"bob\"\n",
    );
    let path = config.to_str().unwrap();
    let run = tau.run_env(&["--config", path, "chat"], &[("USER", "root")], "");
    assert_eq!(
        (run.code, run.stderr.as_str()),
        (
            2,
            "tau: tau.toml names several people and none has unix_user = \"root\"; say who you are with --person NAME\n"
        )
    );
    let run = tau.run_env(
        &["--config", path, "chat", "--person", "zed"],
        &[("USER", "ana")],
        "",
    );
    assert_eq!(
        (run.code, run.stderr.as_str()),
        (
            2,
            "tau: no person is called 'zed' in [[people]]; `tau people list` names them\n"
        )
    );
}
