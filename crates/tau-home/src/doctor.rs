//! `tau doctor`'s home section: the home and each file tau keeps in it, with its mode
//! against the one tau gives it, and whether it is a link tau refuses. Changes nothing.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::Home;
use crate::private::{DIR_MODE, FILE_MODE};

/// A row's mark (`ok`, `no` for a problem, `--` for nothing there yet), the entry's name
/// and what was found.
pub type DoctorRow = (&'static str, &'static str, String);

impl Home {
    /// `tau doctor`'s home section: its title and a row per entry.
    pub fn doctor_section(&self) -> (String, Vec<DoctorRow>) {
        let entries: [(&'static str, PathBuf, u32); 8] = [
            ("home", self.root().to_owned(), DIR_MODE),
            ("state.db", self.state_db(), FILE_MODE),
            ("audit.jsonl", self.audit_log(), FILE_MODE),
            ("logs", self.log_dir(), DIR_MODE),
            ("locks", self.locks(), DIR_MODE),
            ("web-token", self.web_token(), FILE_MODE),
            ("push-key", self.push_key(), FILE_MODE),
            ("mcp-token", self.mcp_token(), FILE_MODE),
        ];
        let rows = entries
            .into_iter()
            .map(|(name, path, wanted)| match entry(name, &path) {
                Err(_) => ("--", name, "not made yet".to_owned()),
                Ok(meta) if meta.file_type().is_symlink() => (
                    "no",
                    name,
                    "a symbolic link: tau refuses to start until it is removed".to_owned(),
                ),
                Ok(meta) => {
                    let mode = meta.permissions().mode() & 0o777;
                    if mode & !wanted == 0 {
                        ("ok", name, format!("{mode:04o}"))
                    } else {
                        (
                            "no",
                            name,
                            format!(
                                "{mode:04o}: others may read it; tau tightens it to {wanted:04o} when it next opens it"
                            ),
                        )
                    }
                }
            })
            .collect();
        (format!("home {}", self.root().display()), rows)
    }
}

/// What `path` is: the home itself followed (it may be a link, the person's own path to
/// it; see `Home::refuse_links`), every entry in it as it is.
fn entry(name: &str, path: &Path) -> std::io::Result<std::fs::Metadata> {
    if name == "home" {
        std::fs::metadata(path)
    } else {
        std::fs::symlink_metadata(path)
    }
}
