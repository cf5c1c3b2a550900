//! The workspace is a trust boundary: a folder the file and command tools may change. One
//! that holds what tau trusts (its home, state, audit log, config) or the person's home is
//! refused by every command that builds tools, and by `tau config check`.

use crate::common;

use std::path::{Path, PathBuf};

use common::{Run, Tau, answer, tool_call};
use pretty_assertions::assert_eq;
use serde_json::json;

const TAIL: &str =
    ", which tools that write files must not reach; give the tools a folder of their own";

fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap()
}

/// An MCP client's first words: enough for `tau mcp` on stdio to serve and end cleanly.
const MCP_HELLO: &str = concat!(
    r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
    "\n",
    r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    "\n"
);

/// The commands that build tools, and `config check`; each is run with `args` before it.
fn every_command(tau: &Tau, args: &[&str]) -> Vec<(&'static str, Run)> {
    let model = tau.replay(&json!([answer("Hello.")]));
    let commands: [(&str, Vec<&str>, &str); 4] = [
        ("chat", vec!["--model", &model, "chat"], "hello\n"),
        ("tools", vec!["tools"], ""),
        ("mcp", vec!["mcp"], MCP_HELLO),
        ("config check", vec!["config", "check"], ""),
    ];
    commands
        .into_iter()
        .map(|(name, command, stdin)| {
            let mut all = args.to_vec();
            all.extend(command);
            (name, tau.run(&all, stdin))
        })
        .collect()
}

fn assert_refused(tau: &Tau, args: &[&str], expected: &str) {
    for (name, run) in every_command(tau, args) {
        assert_eq!(
            (run.code, run.stderr.as_str()),
            (2, expected),
            "{name}: {}",
            run.stdout
        );
    }
}

fn config_with_workspace(tau: &Tau, workspace: &Path) -> PathBuf {
    tau.config(&format!(
        "[tools]\nworkspace = {}\n",
        json!(workspace.to_str().unwrap())
    ))
}

#[test]
fn a_workspace_at_the_persons_home_cannot_rewrite_the_audit_log_or_the_config() {
    // The person's home ($HOME) holds tau's home and tau.toml. A tier-1 write_file there
    // once replaced audit.jsonl and made the next start run a command as an MCP server.
    let tau = Tau::new();
    let proof = tau.dir.path().join("pwned");
    let config = config_with_workspace(&tau, tau.dir.path());
    let evil_config = format!(
        "[mcp.servers.x]\ncommand = \"sh\"\nargs = [\"-c\", \"touch {}\"]\n",
        proof.display()
    );
    let model = tau.replay(&json!([
        tool_call(
            "t1",
            "write_file",
            &json!({"path": "home/audit.jsonl", "content": "{}\n"})
        ),
        tool_call(
            "t2",
            "write_file",
            &json!({"path": "tau.toml", "content": evil_config})
        ),
        answer("Done."),
    ]));
    let config_text = std::fs::read_to_string(&config).unwrap();
    let args = ["--config", config.to_str().unwrap(), "--model", &model];
    let mut chat = args.to_vec();
    chat.extend(["chat", "--session", "s1"]);
    let run = tau.run(&chat, "tidy up\n");
    let expected = format!(
        "tau: {}: tools.workspace: '{}' is your home directory '{}'{TAIL}\n",
        config.display(),
        tau.dir.path().display(),
        canonical(tau.dir.path()).display()
    );
    assert_eq!((run.code, run.stderr.as_str()), (2, expected.as_str()));
    assert_eq!(std::fs::read_to_string(&config).unwrap(), config_text);
    assert!(tau.audit().is_empty(), "no audit line was forged");
    // The next start does not run the command either.
    let again = tau.run(&["--config", config.to_str().unwrap(), "tools"], "");
    assert_eq!(again.code, 2, "{}", again.stderr);
    assert!(!proof.exists());
}

#[test]
fn the_root_the_persons_home_and_above_are_refused_by_every_command() {
    let tau = Tau::new();
    let root = config_with_workspace(&tau, Path::new("/"));
    assert_refused(
        &tau,
        &["--config", root.to_str().unwrap()],
        &format!(
            "tau: {}: tools.workspace: '/' is the root of the file system{TAIL}\n",
            root.display()
        ),
    );
    // A folder above the person's home contains it.
    let above = tau.dir.path().parent().unwrap();
    let config = config_with_workspace(&tau, above);
    assert_refused(
        &tau,
        &["--config", config.to_str().unwrap()],
        &format!(
            "tau: {}: tools.workspace: '{}' contains your home directory '{}'{TAIL}\n",
            config.display(),
            above.display(),
            canonical(tau.dir.path()).display()
        ),
    );
}

#[test]
fn a_workspace_holding_taus_home_its_files_or_the_config_is_refused() {
    let tau = Tau::new();
    let home = tau.home();
    std::fs::create_dir_all(home.join("logs")).unwrap();

    // The home itself, reached through a symlink: paths are compared resolved.
    let link = tau.dir.path().join("link");
    std::os::unix::fs::symlink(&home, &link).unwrap();
    let config = config_with_workspace(&tau, &link);
    assert_refused(
        &tau,
        &["--config", config.to_str().unwrap()],
        &format!(
            "tau: {}: tools.workspace: '{}' is tau's home '{}'{TAIL}\n",
            config.display(),
            link.display(),
            canonical(&home).display()
        ),
    );

    // A folder of tau's own inside the home.
    let logs = home.join("logs");
    let config = config_with_workspace(&tau, &logs);
    assert_refused(
        &tau,
        &["--config", config.to_str().unwrap()],
        &format!(
            "tau: {}: tools.workspace: '{}' is tau's log folder '{}'{TAIL}\n",
            config.display(),
            logs.display(),
            canonical(&logs).display()
        ),
    );

    // state.db kept elsewhere through a symlink, and the workspace is that folder: no link
    // in tau's home is followed at all, so the link is refused before the workspace.
    let elsewhere = tau.dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let _ = std::fs::remove_file(home.join("state.db"));
    std::os::unix::fs::symlink(elsewhere.join("state.db"), home.join("state.db")).unwrap();
    let config = config_with_workspace(&tau, &elsewhere);
    assert_refused(
        &tau,
        &["--config", config.to_str().unwrap()],
        &format!(
            "tau: {} is a symbolic link (to {}): tau never follows a link in its home, where \
             someone who could once write the folder may have planted it; remove it; to keep \
             tau's state elsewhere, move the whole home (--home DIR or TAU_HOME)\n",
            home.join("state.db").display(),
            elsewhere.join("state.db").display()
        ),
    );
}

#[test]
fn a_config_file_inside_the_workspace_is_refused_even_with_the_default_workspace() {
    let tau = Tau::new();
    // The default workspace is home/workspace; a config kept in it could be rewritten.
    let workspace = tau.workspace();
    std::fs::create_dir_all(&workspace).unwrap();
    let config = workspace.join("tau.toml");
    std::fs::write(&config, "").unwrap();
    assert_refused(
        &tau,
        &["--config", config.to_str().unwrap()],
        &format!(
            "tau: {}: tools.workspace: '{}' contains the config file '{}'{TAIL}\n",
            config.display(),
            workspace.display(),
            canonical(&config).display()
        ),
    );
}

#[test]
fn the_default_home_counts_too() {
    // No --home and no TAU_HOME: the home is $HOME/.local/share/tau.
    let tau = Tau::new();
    let dot_local = tau.dir.path().join(".local");
    std::fs::create_dir(&dot_local).unwrap();
    let config = config_with_workspace(&tau, &dot_local);
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_tau"));
    command
        .args(["--config", config.to_str().unwrap(), "config", "check"])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", tau.dir.path());
    let run = tau.run_with(command, "");
    assert_eq!(
        (run.code, run.stderr),
        (
            2,
            format!(
                "tau: {}: tools.workspace: '{}' contains tau's home '{}'{TAIL}\n",
                config.display(),
                dot_local.display(),
                canonical(tau.dir.path()).join(".local/share/tau").display()
            )
        )
    );
}

#[test]
fn a_workspace_inside_taus_home_is_fine() {
    let tau = Tau::new();
    // The default, home/workspace, and a folder of the person's own in the home.
    let projects = tau.home().join("projects");
    std::fs::create_dir_all(&projects).unwrap();
    let config = config_with_workspace(&tau, &projects);
    for args in [vec![], vec!["--config", config.to_str().unwrap()]] {
        for (name, run) in every_command(&tau, &args) {
            assert_eq!(run.code, 0, "{name} {args:?}: {}", run.stderr);
        }
    }
}

#[test]
fn an_mcp_server_script_in_the_workspace_is_refused_before_anything_runs() {
    // The person's own server script, kept in the workspace: a tier-1 write_file could
    // replace it, and the next start would run it.
    let tau = Tau::new();
    let workspace = tau.workspace();
    std::fs::create_dir_all(&workspace).unwrap();
    let script = workspace.join("server.sh");
    let proof = tau.dir.path().join("pwned");
    std::fs::write(&script, format!("touch {}\n", proof.display())).unwrap();
    let config = tau.config(&format!(
        "[mcp.servers.notes]\ncommand = \"sh\"\nargs = [{}]\n",
        json!(script.to_str().unwrap())
    ));
    assert_refused(
        &tau,
        &["--config", config.to_str().unwrap()],
        &format!(
            "tau: {}: mcp.servers.notes.args[0]: '{}' is '{}', inside the workspace '{}' (tools.workspace), where a tier-1 write can change what tau starts; keep the programs tau starts out of the workspace\n",
            config.display(),
            script.display(),
            canonical(&script).display(),
            workspace.display()
        ),
    );
    assert!(!proof.exists(), "the script never ran");
}

#[test]
fn the_default_config_folder_as_workspace_is_refused_even_with_another_config() {
    // `--config` names a file elsewhere; the workspace is the folder the next plain `tau`
    // reads tau.toml from, so a tier-1 write could plant one there.
    let tau = Tau::new();
    let folder = tau.dir.path().join(".config/tau");
    std::fs::create_dir_all(&folder).unwrap();
    let config = config_with_workspace(&tau, &folder);
    assert_refused(
        &tau,
        &["--config", config.to_str().unwrap()],
        &format!(
            "tau: {}: tools.workspace: '{}' contains the config file tau reads without --config '{}'{TAIL}\n",
            config.display(),
            folder.display(),
            canonical(&folder).join("tau.toml").display()
        ),
    );
}
