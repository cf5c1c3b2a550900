//! A backup read back into a home that holds no state yet. Nothing lands in the home
//! until every file matches its manifest (name, size, SHA-256) and the backup's schema is
//! one this tau knows; the binary then opens `state.db` and verifies the audit log there,
//! or takes everything placed away again ([`take_back`]).

use std::collections::BTreeSet;
use std::fs::OpenOptions;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use super::{
    AUDIT_LOG, BackupError, CHAT_HISTORY, FILES, FORMAT, FORMAT_VERSION, MANIFEST,
    MANIFEST_MAX_BYTES, Manifest, PUSH_KEY, STATE_DB, WEB_TOKEN, hash_reader,
};
use crate::home::Home;

/// Writes every entry after the manifest into `staging`, each checked against the
/// manifest (listed, once, a plain file, its size and SHA-256), and every listed file
/// there; returns their names.
pub fn stage<R: Read>(
    file: &Path,
    entries: tar::Entries<'_, R>,
    manifest: &Manifest,
    staging: &Path,
) -> Result<BTreeSet<String>, BackupError> {
    let mut seen = BTreeSet::new();
    for entry in entries {
        let mut entry = entry.map_err(|e| damaged(file, &e.to_string()))?;
        let name = entry
            .path()
            .map_err(|e| damaged(file, &e.to_string()))?
            .to_str()
            .map(str::to_owned)
            .unwrap_or_default();
        let Some(expected) = manifest.files.iter().find(|f| f.path == name) else {
            return Err(damaged(
                file,
                &format!(
                    "it holds {:?}, which its manifest does not list",
                    tau_core::display(&name)
                ),
            ));
        };
        if !seen.insert(name.clone()) || entry.header().entry_type() != tar::EntryType::Regular {
            return Err(damaged(
                file,
                &format!("{name} is there twice, or is not a plain file"),
            ));
        }
        let staged = staging.join(&name);
        let mut out =
            crate::private::open(&staged, OpenOptions::new().create_new(true).write(true))?;
        let mut tee = Tee {
            from: &mut entry,
            to: &mut out,
        };
        let (bytes, sha256) = hash_reader(&mut tee)?;
        out.sync_all()?;
        if bytes != expected.bytes || sha256 != expected.sha256 {
            return Err(damaged(
                file,
                &format!(
                    "{name} has {bytes} bytes with SHA-256 {sha256}; its manifest says {} bytes with {}",
                    expected.bytes, expected.sha256
                ),
            ));
        }
    }
    if let Some(missing) = manifest.files.iter().find(|f| !seen.contains(&f.path)) {
        return Err(damaged(file, &format!("{} is missing", missing.path)));
    }
    Ok(seen)
}

/// Refuses a home that holds any file tau keeps its state in: a restore never mixes two
/// homes, and never replaces one.
pub fn refuse_home_with_state(home: &Home) -> Result<(), BackupError> {
    let mut held = Vec::new();
    for path in state_files(home) {
        if std::fs::symlink_metadata(&path).is_ok() {
            held.push(
                path.file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
            );
        }
    }
    if held.is_empty() {
        return Ok(());
    }
    Err(BackupError::HomeHasState {
        home: home.root().to_owned(),
        held: held.join(", "),
    })
}

/// Every file of a home that holds state, SQLite's own beside `state.db` among them.
fn state_files(home: &Home) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = ["", "-wal", "-shm", "-journal"]
        .iter()
        .map(|suffix| home.root().join(format!("{STATE_DB}{suffix}")))
        .collect();
    files.extend([
        home.audit_log(),
        home.web_token(),
        home.chat_history(),
        home.mcp_token(),
        home.push_key(),
    ]);
    files
}

/// The first entry, `manifest.json`: a backup of this format, of a version and a schema
/// this tau knows, listing only files a backup may hold.
/// `known_schema` is the newest schema step this tau knows.
pub fn read_manifest<R: Read>(
    file: &Path,
    entries: &mut tar::Entries<'_, R>,
    known_schema: i64,
) -> Result<Manifest, BackupError> {
    let mut first = entries
        .next()
        .ok_or_else(|| damaged(file, "it is empty"))?
        .map_err(|e| damaged(file, &e.to_string()))?;
    let name = first
        .path()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    if name != MANIFEST || first.size() > MANIFEST_MAX_BYTES {
        return Err(damaged(
            file,
            "it does not start with a tau backup's manifest",
        ));
    }
    let mut text = Vec::new();
    first.read_to_end(&mut text)?;
    let value: serde_json::Value = serde_json::from_slice(&text)
        .map_err(|e| damaged(file, &format!("its manifest does not read: {e}")))?;
    let text_of = |key: &str| value.get(key).and_then(serde_json::Value::as_str);
    if text_of("format") != Some(FORMAT) {
        return Err(damaged(file, "it is not a tau backup"));
    }
    let version = value
        .get("version")
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(0);
    if version > u64::from(FORMAT_VERSION) {
        return Err(BackupError::NewerFormat {
            file: file.to_owned(),
            tau: tau_core::display(text_of("tau").unwrap_or("?")),
            version,
            this: env!("CARGO_PKG_VERSION").to_owned(),
        });
    }
    let manifest: Manifest = serde_json::from_value(value)
        .map_err(|e| damaged(file, &format!("its manifest does not read: {e}")))?;
    if manifest.schema > known_schema {
        return Err(BackupError::NewerSchema {
            file: file.to_owned(),
            tau: tau_core::display(&manifest.tau),
            schema: manifest.schema,
            known: known_schema,
            this: env!("CARGO_PKG_VERSION").to_owned(),
        });
    }
    if let Some(odd) = manifest
        .files
        .iter()
        .find(|f| !FILES.contains(&f.path.as_str()))
    {
        return Err(damaged(
            file,
            &format!(
                "its manifest lists {:?}, which no backup holds",
                tau_core::display(&odd.path)
            ),
        ));
    }
    if !manifest.files.iter().any(|f| f.path == STATE_DB) {
        return Err(damaged(file, "it holds no state.db"));
    }
    Ok(manifest)
}

/// A backup that does not read as one; exit 2.
pub fn damaged(file: &Path, why: &str) -> BackupError {
    BackupError::Damaged {
        file: file.to_owned(),
        why: why.to_owned(),
    }
}

/// Moves the staged files into the home (none of them is there: see
/// [`refuse_home_with_state`]); `state.db` last, so nothing opens a home without its log.
pub fn place(
    staging: &Path,
    home: &Home,
    names: &BTreeSet<String>,
) -> Result<Vec<PathBuf>, BackupError> {
    let mut placed = Vec::new();
    for (name, dest) in [
        (AUDIT_LOG, home.audit_log()),
        (WEB_TOKEN, home.web_token()),
        (CHAT_HISTORY, home.chat_history()),
        (PUSH_KEY, home.push_key()),
        (STATE_DB, home.state_db()),
    ] {
        if !names.contains(name) {
            continue;
        }
        if let Err(error) = std::fs::rename(staging.join(name), &dest) {
            take_back(home, &placed);
            return Err(BackupError::Move {
                name,
                home: home.root().to_owned(),
                error,
            });
        }
        placed.push(dest);
    }
    Ok(placed)
}

/// Removes what a failed restore placed, and what opening `state.db` made beside it. Only
/// after its connection is closed: the home held none of these before.
pub fn take_back(home: &Home, placed: &[PathBuf]) {
    let sqlite_files = ["-wal", "-shm"]
        .iter()
        .map(|suffix| home.root().join(format!("{STATE_DB}{suffix}")));
    for path in placed.iter().cloned().chain(sqlite_files) {
        let _ = std::fs::remove_file(path);
    }
}

/// A reader that writes what it reads to `to`.
struct Tee<'a, R: Read, W: io::Write> {
    from: &'a mut R,
    to: &'a mut W,
}

impl<R: Read, W: io::Write> Read for Tee<'_, R, W> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let read = self.from.read(buf)?;
        self.to.write_all(buf.get(..read).unwrap_or_default())?;
        Ok(read)
    }
}
