//! Where tau keeps its state and finds its config.

use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::error::HomeError;
use crate::private;

/// The home directory: `state.db`, `audit.jsonl`, `logs/` (a file a day), `workspace/`, `locks/`,
/// `mcp-token`. The home and its folders are 0700, its files 0600.
///
/// No entry of the home that tau owns may be a symbolic link (see [`Home::refuse_links`]).
#[derive(Debug, Clone)]
pub struct Home {
    root: PathBuf,
}

/// Reads an environment variable; the binary passes the real environment, tests a map.
pub type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The environment a command owns; `Sync` so MCP servers can be started concurrently.
pub type EnvFn = dyn Fn(&str) -> Option<String> + Sync;

impl Home {
    /// `--home`, else `TAU_HOME`, else `$XDG_DATA_HOME/tau`, else `~/.local/share/tau`.
    pub fn resolve(flag: Option<&Path>, env: Env<'_>) -> Result<Self, HomeError> {
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
            None => Err(HomeError::NoHome),
        }
    }

    pub fn at(root: &Path) -> Self {
        Self {
            root: root.to_owned(),
        }
    }

    pub fn state_db(&self) -> PathBuf {
        self.root.join("state.db")
    }

    pub fn audit_log(&self) -> PathBuf {
        self.root.join("audit.jsonl")
    }

    pub fn log_dir(&self) -> PathBuf {
        self.root.join("logs")
    }

    pub fn workspace(&self) -> PathBuf {
        self.root.join("workspace")
    }

    pub fn locks(&self) -> PathBuf {
        self.root.join("locks")
    }

    /// The bearer token `tau mcp --http` generates when the config names none.
    pub fn mcp_token(&self) -> PathBuf {
        self.root.join("mcp-token")
    }

    /// The prompts typed at `tau chat` (see `chat_history`).
    pub fn chat_history(&self) -> PathBuf {
        self.root.join("chat-history")
    }

    /// The token TauBar (`tau serve`) generates for its page and API.
    pub fn web_token(&self) -> PathBuf {
        self.root.join("web-token")
    }

    /// The private key TauBar signs its pushes with (VAPID, RFC 8292): 32 random bytes,
    /// hex, made once, so the devices subscribed with its public key keep receiving.
    pub fn push_key(&self) -> PathBuf {
        self.root.join("push-key")
    }

    /// This home's hub id, random and kept (`token_file`'s format): what a store several
    /// hubs share knows this hub by.
    pub fn hub_id(&self) -> PathBuf {
        self.root.join("hub-id")
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Creates the home and what a run writes into, private: the folders 0700. What exists
    /// with looser modes is tightened; the workspace, the person's folder, only when new,
    /// and only when it is the home's own (`own_workspace`: the config names none
    /// elsewhere). `state.db` is `tau-state`'s to create and protect, when it is first
    /// opened. The entries are checked for links once the home is tightened, so nobody
    /// else can plant one between the check and the use.
    pub fn create(&self, own_workspace: bool) -> Result<(), HomeError> {
        if let Ok(meta) = std::fs::metadata(&self.root)
            && meta.permissions().mode() & 0o1000 != 0
        {
            return Err(HomeError::SharedFolder(self.root.clone()));
        }
        private::create_dir(&self.root).map_err(|error| HomeError::CreateDir { error })?;
        self.refuse_links(own_workspace)?;
        for dir in [self.log_dir(), self.locks()] {
            private::create_dir(&dir).map_err(|error| HomeError::CreateDir { error })?;
        }
        if own_workspace {
            let workspace = self.workspace();
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(private::DIR_MODE)
                .create(&workspace)
                .map_err(|error| HomeError::Create {
                    path: workspace.clone(),
                    error,
                })?;
        }
        Ok(())
    }

    /// The entries tau owns in the home: its files (with SQLite's beside `state.db`), its
    /// folders, everything in `logs/` and `locks/`, and `workspace/` when it is the one in
    /// use (`own_workspace`).
    fn owned_entries(&self, own_workspace: bool) -> Vec<PathBuf> {
        let mut entries: Vec<PathBuf> = ["-wal", "-shm", "-journal"]
            .iter()
            .map(|suffix| self.root.join(format!("state.db{suffix}")))
            .collect();
        entries.extend([
            self.state_db(),
            self.audit_log(),
            self.mcp_token(),
            self.web_token(),
            self.push_key(),
            self.hub_id(),
            self.chat_history(),
            self.log_dir(),
            self.locks(),
        ]);
        if own_workspace {
            entries.push(self.workspace());
        }
        for folder in [self.log_dir(), self.locks()] {
            // A link here is refused by name above; only a real folder is looked into.
            if std::fs::symlink_metadata(&folder).is_ok_and(|m| m.is_dir()) {
                let inside = std::fs::read_dir(&folder).into_iter().flatten();
                entries.extend(inside.flatten().map(|entry| entry.path()));
            }
        }
        entries
    }

    /// Refuses (exit 2) a home in which an entry tau owns is a symbolic link.
    ///
    /// Why every link and not only another user's: a home that was once open to others (a
    /// shared or world-writable folder that tau later tightened) may hold a link someone
    /// else planted, say `workspace -> /home/me/.ssh`, and tau would write through it with
    /// the person's rights: a tier-1 `write_file` into `authorized_keys`. The owner of a
    /// link says little (root can plant one owned by anyone, and a link of the person's
    /// own may still point into a folder others control), while the person never needs
    /// one: a workspace elsewhere is named in `tau.toml` (`[tools] workspace`), and a home
    /// elsewhere with `--home` or `TAU_HOME`. The home itself may be a link: that is the
    /// person's own path to it. A `workspace` link is left alone when the config names
    /// the workspace elsewhere, since tau then never uses it.
    pub fn refuse_links(&self, own_workspace: bool) -> Result<(), HomeError> {
        for entry in self.owned_entries(own_workspace) {
            let Ok(meta) = std::fs::symlink_metadata(&entry) else {
                continue;
            };
            if !meta.file_type().is_symlink() {
                continue;
            }
            let target = std::fs::read_link(&entry)
                .map(|t| tau_core::display(&t.display().to_string()))
                .unwrap_or_else(|_| "somewhere".to_owned());
            let remedy = if entry == self.workspace() {
                "remove it; to keep the workspace elsewhere, name it in tau.toml ([tools] workspace = \"DIR\")"
            } else {
                "remove it; to keep tau's state elsewhere, move the whole home (--home DIR or TAU_HOME)"
            };
            return Err(HomeError::PlantedLink {
                entry: tau_core::display(&entry.display().to_string()),
                target,
                remedy,
            });
        }
        Ok(())
    }
}

/// `--config`, else `$XDG_CONFIG_HOME/tau/tau.toml`, else `~/.config/tau/tau.toml`. The
/// default file may be missing; a file named with `--config` must exist.
pub fn config_path(flag: Option<&Path>, env: Env<'_>) -> Option<(PathBuf, bool)> {
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
    use crate::test_env::env;

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
        let error = Home::at(dir.path()).create(true).unwrap_err();
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
    fn a_link_among_the_home_s_entries_is_refused_and_nothing_is_made_through_it() {
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = dir.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        let home = Home::at(&dir.path().join("home"));
        std::fs::create_dir(home.root()).unwrap();
        std::os::unix::fs::symlink(&elsewhere, home.workspace()).unwrap();
        let error = home.create(true).unwrap_err().to_string();
        assert_eq!(
            error,
            format!(
                "{} is a symbolic link (to {}): tau never follows a link in its home, where someone who could once write the folder may have planted it; remove it; to keep the workspace elsewhere, name it in tau.toml ([tools] workspace = \"DIR\")",
                home.workspace().display(),
                elsewhere.display()
            )
        );
        assert!(!home.log_dir().exists(), "nothing made after the refusal");
        // Not the workspace in use: left alone, and no workspace made.
        home.create(false).unwrap();
        assert!(home.log_dir().is_dir());
        assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
        // A link inside a folder tau owns.
        std::os::unix::fs::symlink(elsewhere.join("x"), home.locks().join("s1.lock")).unwrap();
        let error = home.refuse_links(false).unwrap_err().to_string();
        assert!(
            error.starts_with(&format!(
                "{} is a symbolic link",
                home.locks().join("s1.lock").display()
            )),
            "{error}"
        );
        assert!(
            error.ends_with("move the whole home (--home DIR or TAU_HOME)"),
            "{error}"
        );
    }

    #[test]
    fn the_home_itself_may_be_a_link() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("real")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("real"), dir.path().join("home")).unwrap();
        Home::at(&dir.path().join("home")).create(true).unwrap();
        assert!(dir.path().join("real/workspace").is_dir());
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
