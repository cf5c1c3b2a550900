//! The workspace is a trust boundary: the file and command tools may change anything in
//! it, a tier-1 `write_file` without a question. So it must hold nothing tau trusts and
//! not the person's home: not the root, not `$HOME`, not tau's home or its files, not the
//! config file in use, not the one tau reads when started without `--config`, and no
//! program tau starts: the command of every MCP server (found through `PATH` when it is a
//! bare name, so no folder of `PATH` before it may be in the workspace either) and every
//! argument that names a file (an absolute path, or a relative one that names a file).
//! Paths are compared resolved (symlinks followed, also those whose target does not exist
//! yet); "holds" means the path is the workspace or below it. A workspace inside tau's
//! home (the default `home/workspace`) is fine.

use std::collections::{BTreeMap, VecDeque};
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use tau_home::{Env, Home, config_path};

/// A program tau starts: an MCP server's command and its arguments.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(test, derive(serde::Deserialize))]
#[cfg_attr(test, serde(default))]
pub struct StartedProgram {
    pub command: Option<String>,
    pub args: Vec<String>,
}

/// A workspace that holds something tau trusts or starts; a mistake in the config (the
/// binary exits 2), named by its key.
#[derive(Debug, thiserror::Error)]
pub enum BoundaryError {
    #[error(
        "{file}: tools.workspace: '{}' {relation} {what}{shown}, which tools that write files must not reach; give the tools a folder of their own",
        .workspace.display()
    )]
    Holds {
        /// The config file, as named to the person.
        file: String,
        workspace: PathBuf,
        /// `is` or `contains`.
        relation: &'static str,
        what: &'static str,
        /// The protected path, quoted, after a space (nothing for the root).
        shown: String,
    },
    #[error(
        "{file}: {key}: {what}, inside the workspace '{}' (tools.workspace), where a tier-1 write can change what tau starts; keep the programs tau starts out of the workspace",
        .workspace.display()
    )]
    Reaches {
        file: String,
        /// The config key of the program (`mcp.servers.NAME.command`).
        key: String,
        what: String,
        workspace: PathBuf,
    },
}

/// Symlinks followed before giving up on resolving a path.
const MAX_LINKS: u32 = 40;

/// Refuses a workspace that holds something tau trusts or starts (`programs`: the MCP
/// servers, by name), with one error naming the key. `config` is the file the config was
/// read from, if any.
pub fn check_workspace(
    workspace: &Path,
    home: &Home,
    config: Option<&Path>,
    programs: &BTreeMap<String, StartedProgram>,
    env: Env<'_>,
) -> Result<(), BoundaryError> {
    let resolved = resolve(workspace);
    let file = config.map_or_else(|| "tau.toml".to_owned(), |c| c.display().to_string());
    let mut protected: Vec<(&str, PathBuf)> = vec![("the root of the file system", "/".into())];
    if let Some(person) = env("HOME").filter(|h| !h.is_empty()) {
        protected.push(("your home directory", PathBuf::from(person)));
    }
    protected.extend([
        ("tau's home", home.root().to_owned()),
        ("tau's state database", home.state_db()),
        ("tau's audit log", home.audit_log()),
        ("tau's MCP token", home.mcp_token()),
        ("tau's log folder", home.log_dir()),
        ("tau's lock folder", home.locks()),
    ]);
    // A config file that does not exist yet would be read once a tool wrote it; the
    // default one is read by the next plain `tau`, whatever `--config` says now.
    if let Some(file) = config {
        protected.push(("the config file", file.to_owned()));
    }
    if let Some((default, _)) = config_path(None, env) {
        let what = match config {
            Some(_) => "the config file tau reads without --config",
            None => "the config file",
        };
        protected.push((what, default));
    }
    for (what, path) in protected {
        let path = resolve(&path);
        if !path.starts_with(&resolved) {
            continue;
        }
        let relation = if path == resolved { "is" } else { "contains" };
        let shown = if path == Path::new("/") {
            String::new()
        } else {
            format!(" '{}'", path.display())
        };
        return Err(BoundaryError::Holds {
            file,
            workspace: workspace.to_owned(),
            relation,
            what,
            shown,
        });
    }
    check_programs(&resolved, programs, env).map_err(|reach| BoundaryError::Reaches {
        file,
        key: reach.key,
        what: reach.what,
        workspace: workspace.to_owned(),
    })
}

/// A program or file tau starts that the workspace holds.
struct Reach {
    key: String,
    what: String,
}

/// 1. a command with a `/` -> the file it names
/// 2. a bare command -> every `PATH` folder up to the one that has it (all when none has)
/// 3. each argument that is an absolute path or names a file -> that file
fn check_programs(
    resolved: &Path,
    programs: &BTreeMap<String, StartedProgram>,
    env: Env<'_>,
) -> Result<(), Reach> {
    let inside = |path: &Path| resolve(path).starts_with(resolved);
    for (name, server) in programs {
        let Some(command) = &server.command else {
            continue;
        };
        let key = format!("mcp.servers.{name}.command");
        if command.contains('/') {
            if inside(Path::new(command)) {
                return Err(Reach {
                    key,
                    what: format!("'{command}' is '{}'", resolve(Path::new(command)).display()),
                });
            }
        } else {
            let path = env("PATH").unwrap_or_default();
            for folder in path.split(':') {
                // An empty entry is the working directory, as the shell reads it.
                let folder = Path::new(if folder.is_empty() { "." } else { folder });
                if inside(folder) {
                    return Err(Reach {
                        key,
                        what: format!(
                            "'{command}' is looked up in PATH, whose folder '{}' is before any that has it",
                            resolve(folder).display()
                        ),
                    });
                }
                if folder.join(command).is_file() {
                    break;
                }
            }
        }
        for (i, argument) in server.args.iter().enumerate() {
            let path = Path::new(argument);
            let names_file = path.is_absolute() || resolve(path).is_file();
            if names_file && inside(path) {
                return Err(Reach {
                    key: format!("mcp.servers.{name}.args[{i}]"),
                    what: format!("'{argument}' is '{}'", resolve(path).display()),
                });
            }
        }
    }
    Ok(())
}

/// `path` made absolute with every symlink followed, also where the rest of the path does
/// not exist yet (like `realpath -m`): `..` applies to what a component resolved to.
fn resolve(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
    let mut pending: VecDeque<OsString> = names(&absolute);
    let mut out = PathBuf::from("/");
    let mut links = MAX_LINKS;
    while let Some(name) = pending.pop_front() {
        if name == ".." {
            out.pop();
            continue;
        }
        let next = out.join(&name);
        match std::fs::read_link(&next) {
            Ok(target) if links > 0 => {
                links -= 1;
                if target.is_absolute() {
                    out = PathBuf::from("/");
                }
                for name in names(&target).into_iter().rev() {
                    pending.push_front(name);
                }
            }
            _ => out = next,
        }
    }
    out
}

/// The names of `path` in order: normal components and `..`, without the root and `.`.
fn names(path: &Path) -> VecDeque<OsString> {
    path.components()
        .filter_map(|component| match component {
            Component::Normal(name) => Some(name.to_owned()),
            Component::ParentDir => Some(OsString::from("..")),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn refused(workspace: &Path, home: &Path, config: Option<&Path>, person: &str) -> String {
        let env = |name: &str| (name == "HOME").then(|| person.to_owned());
        match check_workspace(workspace, &Home::at(home), config, &BTreeMap::new(), &env) {
            Ok(()) => "fine".to_owned(),
            Err(error) => error
                .to_string()
                .split_once(" which tools")
                .map(|(head, _)| head.to_owned())
                .unwrap_or_default(),
        }
    }

    #[test]
    fn what_the_workspace_may_not_hold() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let person = root.join("me");
        let home = person.join(".local/share/tau");
        std::fs::create_dir_all(home.join("workspace")).unwrap();
        std::fs::create_dir_all(root.join("elsewhere")).unwrap();
        let p = |s: &str| root.join(s);
        let me = person.to_str().unwrap();
        let config = p("me/.config/tau/tau.toml");
        let cases: Vec<(PathBuf, Option<&Path>, String)> = vec![
            (
                "/".into(),
                None,
                "tau.toml: tools.workspace: '/' is the root of the file system,".into(),
            ),
            (
                person.clone(),
                None,
                format!("tau.toml: tools.workspace: '{me}' is your home directory '{me}',"),
            ),
            (
                p("me/./.local/../.local"),
                None,
                format!(
                    "tau.toml: tools.workspace: '{}' contains tau's home '{}',",
                    p("me/./.local/../.local").display(),
                    home.display()
                ),
            ),
            (
                p("me/.config"),
                Some(&config),
                format!(
                    "{}: tools.workspace: '{}' contains the config file '{}',",
                    config.display(),
                    p("me/.config").display(),
                    config.display()
                ),
            ),
            (
                p("me/.config"),
                None,
                format!(
                    "tau.toml: tools.workspace: '{}' contains the config file '{}',",
                    p("me/.config").display(),
                    config.display()
                ),
            ),
            (home.join("workspace"), Some(&config), "fine".into()),
            (home.join("workspace"), None, "fine".into()),
            (p("elsewhere"), Some(&config), "fine".into()),
        ];
        for (workspace, config, expected) in cases {
            assert_eq!(
                refused(&workspace, &home, config, me),
                expected,
                "{}",
                workspace.display()
            );
        }
    }

    #[test]
    fn the_default_config_is_protected_even_when_another_is_in_use() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let person = root.join("me");
        let default = person.join(".config/tau");
        std::fs::create_dir_all(&default).unwrap();
        let other = root.join("other.toml");
        assert_eq!(
            refused(
                &default,
                &root.join("home"),
                Some(&other),
                person.to_str().unwrap()
            ),
            format!(
                "{}: tools.workspace: '{}' contains the config file tau reads without --config '{}',",
                other.display(),
                default.display(),
                default.join("tau.toml").display()
            )
        );
    }

    /// The error for a workspace at `root/ws` and these MCP servers, with `PATH`.
    fn programs_refused(root: &Path, servers: &str, path: &str) -> String {
        #[derive(serde::Deserialize)]
        struct Mcp {
            servers: BTreeMap<String, StartedProgram>,
        }
        let mcp: Mcp = toml::from_str(servers).unwrap();
        let env = |name: &str| (name == "PATH").then(|| path.to_owned());
        let home = Home::at(&root.join("home"));
        match check_workspace(&root.join("ws"), &home, None, &mcp.servers, &env) {
            Ok(()) => "fine".to_owned(),
            Err(error) => error
                .to_string()
                .split_once(", inside the workspace")
                .map(|(head, _)| head.to_owned())
                .unwrap_or_default(),
        }
    }

    #[test]
    fn programs_tau_starts_may_not_be_in_the_workspace() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        for folder in ["ws/bin", "bin"] {
            std::fs::create_dir_all(root.join(folder)).unwrap();
        }
        for file in ["ws/server.py", "ws/bin/srv", "bin/srv", "bin/python3"] {
            std::fs::write(root.join(file), "").unwrap();
        }
        let r = |s: &str| root.join(s).display().to_string();
        let cases = [
            (
                format!(
                    "[servers.a]\ncommand = \"python3\"\nargs = [\"-u\", \"{}\"]\n",
                    r("ws/server.py")
                ),
                r("bin"),
                format!(
                    "tau.toml: mcp.servers.a.args[1]: '{0}' is '{0}'",
                    r("ws/server.py")
                ),
            ),
            (
                format!("[servers.a]\ncommand = \"{}\"\n", r("ws/bin/srv")),
                r("bin"),
                format!(
                    "tau.toml: mcp.servers.a.command: '{0}' is '{0}'",
                    r("ws/bin/srv")
                ),
            ),
            (
                // Not written yet: a tier-1 write would create it.
                format!("[servers.a]\ncommand = \"{}\"\n", r("ws/later")),
                r("bin"),
                format!(
                    "tau.toml: mcp.servers.a.command: '{0}' is '{0}'",
                    r("ws/later")
                ),
            ),
            (
                "[servers.a]\ncommand = \"srv\"\n".to_owned(),
                format!("{}:{}", r("ws/bin"), r("bin")),
                format!(
                    "tau.toml: mcp.servers.a.command: 'srv' is looked up in PATH, whose folder '{}' is before any that has it",
                    r("ws/bin")
                ),
            ),
            (
                // A folder after the one that has it is never reached.
                "[servers.a]\ncommand = \"srv\"\nargs = [\"--zone\", \"Europe/Istanbul\"]\n"
                    .to_owned(),
                format!("{}:{}", r("bin"), r("ws/bin")),
                "fine".to_owned(),
            ),
            (
                format!(
                    "[servers.a]\nurl = \"http://127.0.0.1:1/mcp\"\n[servers.b]\ncommand = \"{}\"\n",
                    r("bin/srv")
                ),
                r("bin"),
                "fine".to_owned(),
            ),
        ];
        for (servers, path, expected) in cases {
            assert_eq!(
                programs_refused(&root, &servers, &path),
                expected,
                "{servers}"
            );
        }
    }

    #[test]
    fn symlinks_are_followed_even_to_missing_targets() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(root.join("home")).unwrap();
        std::fs::create_dir_all(root.join("vault")).unwrap();
        std::os::unix::fs::symlink(
            root.join("vault/later/state.db"),
            root.join("home/state.db"),
        )
        .unwrap();
        std::os::unix::fs::symlink("../vault", root.join("home/link")).unwrap();
        assert_eq!(
            resolve(&root.join("home/state.db")),
            root.join("vault/later/state.db")
        );
        assert_eq!(
            resolve(&root.join("home/link/x/../y")),
            root.join("vault/y")
        );
        assert_eq!(
            refused(&root.join("vault"), &root.join("home"), None, "/nobody"),
            format!(
                "tau.toml: tools.workspace: '{}' contains tau's state database '{}',",
                root.join("vault").display(),
                root.join("vault/later/state.db").display()
            )
        );
    }

    #[test]
    fn a_symlink_loop_ends() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::os::unix::fs::symlink(root.join("b"), root.join("a")).unwrap();
        std::os::unix::fs::symlink(root.join("a"), root.join("b")).unwrap();
        // Resolving returns: once the links allowed are spent the loop's last name
        // stands as it is. `a` and `b` take turns, each of the MAX_LINKS turns followed
        // and the next one kept, so an even number of links ends at `a`.
        assert_eq!(MAX_LINKS % 2, 0);
        assert_eq!(resolve(&root.join("a/c")), root.join("a/c"));
        assert_eq!(resolve(&root.join("b/c")), root.join("b/c"));
        // One link fewer to spend (entered through `x -> a`) ends at the other name.
        std::os::unix::fs::symlink(root.join("a"), root.join("x")).unwrap();
        assert_eq!(resolve(&root.join("x/c")), root.join("b/c"));
    }
}
