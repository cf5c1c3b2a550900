//! No entry tau owns in its home is followed when it is a symbolic link: a home that was
//! once open to others may hold one they planted (`workspace -> ~/.ssh`), and tau would
//! write through it with the person's rights. Such a home is refused with one line naming
//! the link, before anything is made or written; a workspace kept elsewhere is named in
//! `tau.toml`, and then the home's own `workspace/` is neither used nor made.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use common::{Tau, answer, tool_call};
use pretty_assertions::assert_eq;
use serde_json::json;

/// A model that writes `note.txt` into the workspace (a tier-1 call: no question).
fn writer(tau: &Tau) -> String {
    tau.replay(&json!([
        tool_call(
            "t1",
            "write_file",
            &json!({"path": "note.txt", "content": "from the model"})
        ),
        answer("Written."),
    ]))
}

/// A home open to everyone (as one that was world-writable before tau first ran), with a
/// link at `entry` to `target`.
fn planted(tau: &Tau, entry: &str, target: &Path) -> PathBuf {
    let home = tau.home();
    std::fs::create_dir_all(home.join(entry).parent().unwrap()).unwrap();
    std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o777)).unwrap();
    let link = home.join(entry);
    std::os::unix::fs::symlink(target, &link).unwrap();
    link
}

/// Every name in `dir`, sorted, with what each file holds.
fn contents(dir: &Path) -> Vec<(String, String)> {
    let mut found: Vec<(String, String)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let path = e.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            (
                path.file_name().unwrap().to_string_lossy().into_owned(),
                text,
            )
        })
        .collect();
    found.sort();
    found
}

fn refusal(link: &Path, target: &Path, remedy: &str) -> String {
    format!(
        "{} is a symbolic link (to {}): tau never follows a link in its home, where someone who could once write the folder may have planted it; {remedy}",
        link.display(),
        target.display()
    )
}

const WORKSPACE_REMEDY: &str =
    "remove it; to keep the workspace elsewhere, name it in tau.toml ([tools] workspace = \"DIR\")";
const HOME_REMEDY: &str =
    "remove it; to keep tau's state elsewhere, move the whole home (--home DIR or TAU_HOME)";

#[test]
fn a_planted_workspace_link_is_refused_and_nothing_is_written_through_it() {
    let tau = Tau::new();
    let victim = tau.dir.path().join("victim");
    std::fs::create_dir(&victim).unwrap();
    std::fs::write(victim.join("authorized_keys"), "mine\n").unwrap();
    let link = planted(&tau, "workspace", &victim);
    let said = format!("tau: {}\n", refusal(&link, &victim, WORKSPACE_REMEDY));
    let model = writer(&tau);

    let chat = tau.run(&["--model", &model, "chat"], "write it\n");
    assert_eq!((chat.code, chat.stderr.as_str()), (2, said.as_str()));
    assert_eq!(
        contents(&victim),
        vec![("authorized_keys".to_owned(), "mine\n".to_owned())]
    );
    // Nothing was made in the home either: it holds the link alone.
    assert_eq!(
        contents(&tau.home()),
        vec![("workspace".to_owned(), String::new())]
    );
    // tau serve and tau config check refuse it with the same line, tau doctor says it.
    let config = tau.serve_config("");
    let args = ["--config", config.to_str().unwrap(), "--model", &model];
    for command in ["serve", "config check"] {
        let run = tau.run(
            &[&args[..], &command.split(' ').collect::<Vec<_>>()].concat(),
            "",
        );
        assert_eq!(
            (run.code, run.stderr.as_str()),
            (2, said.as_str()),
            "{command}"
        );
    }
    let doctor = tau.run(&[&args[..], &["doctor"]].concat(), "");
    assert_eq!(doctor.code, 1, "{}", doctor.stdout);
    assert!(
        doctor.stdout.contains(&format!(
            "\n  no  checks       {}\n",
            said.strip_prefix("tau: ").unwrap().trim_end()
        )),
        "{}",
        doctor.stdout
    );
    assert_eq!(contents(&victim).len(), 1);
    // A command that reads only the home never touches the workspace: it goes on.
    let listed = tau.run(&["sessions", "list"], "");
    assert_eq!(
        (listed.code, listed.stdout.as_str()),
        (0, "no sessions yet\n")
    );

    // Removed, tau makes its own workspace and writes there.
    std::fs::remove_file(&link).unwrap();
    let chat = tau.run(&["--model", &model, "chat"], "write it\n");
    assert_eq!(chat.code, 0, "{}", chat.stderr);
    assert_eq!(
        std::fs::read_to_string(tau.workspace().join("note.txt")).unwrap(),
        "from the model"
    );
    assert_eq!(common::mode(&tau.home()), 0o700);
    assert_eq!(contents(&victim).len(), 1);
}

#[test]
fn a_workspace_named_in_the_config_leaves_the_home_s_own_alone() {
    let tau = Tau::new();
    let victim = tau.dir.path().join("victim");
    std::fs::create_dir(&victim).unwrap();
    let mine = tau.dir.path().join("mine");
    std::fs::create_dir(&mine).unwrap();
    let link = planted(&tau, "workspace", &victim);
    let config = tau.config(&format!("[tools]\nworkspace = \"{}\"\n", mine.display()));
    let model = writer(&tau);
    let chat = tau.run(
        &[
            "--config",
            config.to_str().unwrap(),
            "--model",
            &model,
            "chat",
        ],
        "write it\n",
    );
    assert_eq!(chat.code, 0, "{}", chat.stderr);
    assert_eq!(
        contents(&mine),
        vec![("note.txt".to_owned(), "from the model".to_owned())]
    );
    assert!(contents(&victim).is_empty());
    assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
}

#[test]
fn the_home_s_workspace_is_not_made_when_the_config_names_another() {
    let tau = Tau::new();
    let mine = tau.dir.path().join("mine");
    std::fs::create_dir(&mine).unwrap();
    let config = tau.config(&format!("[tools]\nworkspace = \"{}\"\n", mine.display()));
    let model = writer(&tau);
    let config = config.to_str().unwrap();
    let chat = tau.run(
        &["--config", config, "--model", &model, "chat"],
        "write it\n",
    );
    assert_eq!(chat.code, 0, "{}", chat.stderr);
    let tools = tau.run(&["--config", config, "tools"], "");
    assert_eq!(tools.code, 0, "{}", tools.stderr);
    // Every command that makes or reads the home, the hub's token among them.
    for args in [
        &["routines", "list"][..],
        &["devices", "list"],
        &["grants", "list"],
        &["serve", "--print-token"],
        &["doctor"],
    ] {
        let mut all = vec!["--config", config];
        all.extend_from_slice(args);
        let run = tau.run(&all, "");
        assert!(!tau.workspace().exists(), "{args:?}: {}", run.stderr);
    }
    assert!(tau.home().join("state.db").exists());
    assert!(!tau.workspace().exists(), "{}", tau.workspace().display());
    assert!(mine.join("note.txt").exists());
}

#[test]
fn a_planted_link_at_any_file_tau_owns_is_refused_and_its_target_untouched() {
    for entry in [
        "state.db",
        "state.db-wal",
        "audit.jsonl",
        "logs",
        "logs/tau.log",
        "locks/s1.lock",
        "web-token",
        "push-key",
        "chat-history",
    ] {
        let tau = Tau::new();
        let target = tau.dir.path().join("theirs");
        std::fs::write(&target, "theirs\n").unwrap();
        let link = planted(&tau, entry, &target);
        let said = format!("tau: {}\n", refusal(&link, &target, HOME_REMEDY));
        let model = writer(&tau);
        let chat = tau.run(
            &["--model", &model, "chat", "--session", "s1"],
            "write it\n",
        );
        assert_eq!(
            (chat.code, chat.stderr.as_str()),
            (2, said.as_str()),
            "{entry}"
        );
        // Read-only commands too: they would read (and SQLite write beside) someone else's file.
        let listed = tau.run(&["sessions", "list"], "");
        assert_eq!(
            (listed.code, listed.stderr.as_str()),
            (2, said.as_str()),
            "{entry}"
        );
        assert_eq!(
            std::fs::read_to_string(&target).unwrap(),
            "theirs\n",
            "{entry}"
        );
        assert!(!tau.workspace().exists(), "{entry}");
    }
}
