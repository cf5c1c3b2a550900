//! The workspace is a trust boundary: the file and command tools may change anything in
//! it, a tier-1 `write_file` without a question. So it must hold nothing tau trusts and
//! not the person's home: not the root, not `$HOME`, not tau's home or its files, not the
//! config file in use (or, when there is none, where tau would look for one). Paths are compared resolved (symlinks followed, also those whose
//! target does not exist yet); "holds" means the path is the workspace or below it. A
//! workspace inside tau's home (the default `home/workspace`) is fine.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use crate::errors::usage;
use crate::paths::{Env, Home, config_path};

/// Symlinks followed before giving up on resolving a path.
const MAX_LINKS: u32 = 40;

/// Refuses a workspace that holds something tau trusts, with one error naming the key.
/// `config` is the file the config was read from, if any.
pub(crate) fn check_workspace(
    workspace: &Path,
    home: &Home,
    config: Option<&Path>,
    env: Env<'_>,
) -> anyhow::Result<()> {
    let resolved = resolve(workspace);
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
    // A config file that does not exist yet would be read once a tool wrote it.
    if let Some(file) = config
        .map(Path::to_owned)
        .or_else(|| config_path(None, env).map(|(path, _)| path))
    {
        protected.push(("the config file", file));
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
        let file = config.map_or_else(|| "tau.toml".to_owned(), |c| c.display().to_string());
        return Err(usage(format!(
            "{file}: tools.workspace: '{}' {relation} {what}{shown}, which tools that write files must not reach; give the tools a folder of their own",
            workspace.display()
        )));
    }
    Ok(())
}

/// `path` made absolute with every symlink followed, also where the rest of the path does
/// not exist yet (like `realpath -m`): `..` applies to what a component resolved to.
pub(crate) fn resolve(path: &Path) -> PathBuf {
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
        match check_workspace(workspace, &Home::at(home), config, &env) {
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
        let _ = resolve(&root.join("a/c"));
    }
}
