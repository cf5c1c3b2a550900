//! Where tau keeps its state and finds its config.

use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::errors::usage;
use crate::private;

/// The home directory: `state.db`, `audit.jsonl`, `logs/tau.log`, `workspace/`, `locks/`,
/// `mcp-token`. The home and its folders are 0700, its files 0600.
#[derive(Debug, Clone)]
pub(crate) struct Home {
    root: PathBuf,
}

/// Reads an environment variable; the binary passes the real environment, tests a map.
pub(crate) type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The environment a command owns; `Sync` so MCP servers can be started concurrently.
pub(crate) type EnvFn = dyn Fn(&str) -> Option<String> + Sync;

impl Home {
    /// `--home`, else `TAU_HOME`, else `$XDG_DATA_HOME/tau`, else `~/.local/share/tau`.
    pub(crate) fn resolve(flag: Option<&Path>, env: Env<'_>) -> anyhow::Result<Self> {
        if let Some(path) = flag {
            return Ok(Self {
                root: path.to_owned(),
            });
        }
        if let Some(path) = env("TAU_HOME").filter(|p| !p.is_empty()) {
            return Ok(Self {
                root: PathBuf::from(path),
            });
        }
        if let Some(data) = env("XDG_DATA_HOME").filter(|p| !p.is_empty()) {
            return Ok(Self {
                root: PathBuf::from(data).join("tau"),
            });
        }
        match env("HOME").filter(|p| !p.is_empty()) {
            Some(home) => Ok(Self {
                root: PathBuf::from(home).join(".local/share/tau"),
            }),
            None => Err(usage(
                "cannot find a home for tau's state: pass --home DIR or set TAU_HOME",
            )),
        }
    }

    pub(crate) fn at(root: &Path) -> Self {
        Self {
            root: root.to_owned(),
        }
    }

    pub(crate) fn state_db(&self) -> PathBuf {
        self.root.join("state.db")
    }

    pub(crate) fn audit_log(&self) -> PathBuf {
        self.root.join("audit.jsonl")
    }

    pub(crate) fn log_dir(&self) -> PathBuf {
        self.root.join("logs")
    }

    pub(crate) fn workspace(&self) -> PathBuf {
        self.root.join("workspace")
    }

    pub(crate) fn locks(&self) -> PathBuf {
        self.root.join("locks")
    }

    /// The bearer token `tau mcp --http` generates when the config names none.
    pub(crate) fn mcp_token(&self) -> PathBuf {
        self.root.join("mcp-token")
    }

    /// The prompts typed at `tau chat` (see `chat_history`).
    pub(crate) fn chat_history(&self) -> PathBuf {
        self.root.join("chat-history")
    }

    /// The token TauBar (`tau serve`) generates for its page and API.
    pub(crate) fn web_token(&self) -> PathBuf {
        self.root.join("web-token")
    }

    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// Creates the home and what a run writes into, private: the folders 0700. What exists
    /// with looser modes is tightened; the workspace, the person's folder, only when new.
    /// `state.db` is `tau-state`'s to create and protect, when it is first opened.
    pub(crate) fn create(&self) -> anyhow::Result<()> {
        if let Ok(meta) = std::fs::metadata(&self.root)
            && meta.permissions().mode() & 0o1000 != 0
        {
            return Err(usage(format!(
                "cannot keep tau's state in {}: it is a shared folder (sticky bit); pass --home with a folder of your own",
                self.root.display()
            )));
        }
        for dir in [self.root.clone(), self.log_dir(), self.locks()] {
            private::create_dir(&dir).map_err(|e| anyhow::anyhow!("cannot create {e}"))?;
        }
        let workspace = self.workspace();
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(private::DIR_MODE)
            .create(&workspace)
            .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", workspace.display()))?;
        Ok(())
    }
}

/// `--config`, else `$XDG_CONFIG_HOME/tau/tau.toml`, else `~/.config/tau/tau.toml`. The
/// default file may be missing; a file named with `--config` must exist.
pub(crate) fn config_path(flag: Option<&Path>, env: Env<'_>) -> Option<(PathBuf, bool)> {
    if let Some(path) = flag {
        return Some((path.to_owned(), true));
    }
    let base = env("XDG_CONFIG_HOME")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            env("HOME")
                .filter(|p| !p.is_empty())
                .map(|h| PathBuf::from(h).join(".config"))
        })?;
    Some((base.join("tau").join("tau.toml"), false))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |k| map.get(k).cloned()
    }

    #[test]
    fn home_comes_from_the_flag_then_tau_home_then_xdg() {
        let all = env(&[("TAU_HOME", "/t"), ("XDG_DATA_HOME", "/x"), ("HOME", "/h")]);
        assert_eq!(
            Home::resolve(Some(Path::new("/f")), &all).unwrap().root,
            Path::new("/f")
        );
        assert_eq!(Home::resolve(None, &all).unwrap().root, Path::new("/t"));
        assert_eq!(
            Home::resolve(None, &env(&[("XDG_DATA_HOME", "/x")]))
                .unwrap()
                .root,
            Path::new("/x/tau")
        );
        assert_eq!(
            Home::resolve(None, &env(&[("HOME", "/h")])).unwrap().root,
            Path::new("/h/.local/share/tau")
        );
        assert!(Home::resolve(None, &env(&[])).is_err());
    }

    #[test]
    fn a_shared_folder_is_not_made_a_home() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
        let error = Home::at(dir.path()).create().unwrap_err();
        assert_eq!(
            error.to_string(),
            format!(
                "cannot keep tau's state in {}: it is a shared folder (sticky bit); pass --home with a folder of your own",
                dir.path().display()
            )
        );
        let untouched = std::fs::metadata(dir.path()).unwrap().permissions().mode() & 0o7777;
        assert_eq!(untouched, 0o1777);
    }

    #[test]
    fn config_comes_from_the_flag_then_xdg() {
        let e = env(&[("XDG_CONFIG_HOME", "/c"), ("HOME", "/h")]);
        assert_eq!(
            config_path(Some(Path::new("a.toml")), &e),
            Some((PathBuf::from("a.toml"), true))
        );
        assert_eq!(
            config_path(None, &e),
            Some((PathBuf::from("/c/tau/tau.toml"), false))
        );
        assert_eq!(
            config_path(None, &env(&[("HOME", "/h")])),
            Some((PathBuf::from("/h/.config/tau/tau.toml"), false))
        );
    }
}
