//! Where tau keeps its state and finds its config.

use std::path::{Path, PathBuf};

use crate::errors::usage;

/// The home directory: `state.db`, `audit.jsonl`, `logs/tau.log`, `workspace/`, `locks/`.
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

    /// Creates the directories a chat writes into.
    pub(crate) fn create(&self) -> anyhow::Result<()> {
        for dir in [
            self.root.clone(),
            self.log_dir(),
            self.workspace(),
            self.locks(),
        ] {
            std::fs::create_dir_all(&dir)
                .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
        }
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
