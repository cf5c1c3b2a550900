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

    /// The token TauBar (`tau serve`) generates for its page and API.
    pub(crate) fn web_token(&self) -> PathBuf {
        self.root.join("web-token")
    }

    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// Creates the home and what a run writes into, private: the folders 0700, `state.db`
    /// 0600 (SQLite gives its `-wal` and `-shm` files the database's mode). What exists
    /// with looser modes is tightened; the workspace, the person's folder, only when new.
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
        self.prepare_state_db()?;
        Ok(())
    }

    /// Makes `state.db` a private file before SQLite opens it, and tightens its `-wal` and
    /// `-shm` files, which SQLite creates with the database's own mode. It runs each time
    /// one more table of `state.db` is opened, so an existing file is never opened here
    /// (see [`private::ensure_database`]).
    pub(crate) fn prepare_state_db(&self) -> anyhow::Result<PathBuf> {
        let db = self.state_db();
        private::ensure_database(&db).map_err(|e| anyhow::anyhow!("cannot create {e}"))?;
        for suffix in ["-wal", "-shm"] {
            let mut name = db.clone().into_os_string();
            name.push(suffix);
            private::tighten_file(Path::new(&name))
                .map_err(|e| anyhow::anyhow!("cannot protect {e}"))?;
        }
        Ok(db)
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

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn sqlite_gives_its_wal_and_shm_files_the_private_mode_of_state_db() {
        use tau_agent::{SessionId, SessionRepository, SqliteSessions};
        let dir = tempfile::tempdir().unwrap();
        let home = Home::at(&dir.path().join("home"));
        home.create().unwrap();
        let store = SqliteSessions::open(&home.state_db()).unwrap();
        store
            .ensure_session(&SessionId::parse("s1").unwrap())
            .unwrap();
        let files = ["state.db", "state.db-wal", "state.db-shm"];
        assert_eq!(
            files.map(|f| mode(&home.root.join(f))),
            [0o600, 0o600, 0o600]
        );
        // A second start tightens what a looser umask or a copy left behind.
        for file in files {
            std::fs::set_permissions(home.root.join(file), std::fs::Permissions::from_mode(0o644))
                .unwrap();
        }
        home.create().unwrap();
        assert_eq!(
            files.map(|f| mode(&home.root.join(f))),
            [0o600, 0o600, 0o600]
        );
        drop(store);
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
