//! tau's home in one file (`tau backup`, `tau restore`): the format and everything done
//! to files on the way. The file is a tar: `manifest.json` first ([`Manifest`]: the
//! format's version, the tau that wrote it, the schema step of its `state.db`, the audit
//! head, and each file with its size and SHA-256), then the files. What a backup holds is
//! taken and checked by the binary (a consistent copy of `state.db`, the audit log up to
//! the head that copy anchors); this module stages, describes, writes and reads them.
//!
//! Layout: `mod.rs` the manifest and writing; `restore.rs` reading one back into a home.

mod restore;

use std::fs::OpenOptions;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub use restore::{damaged, place, read_manifest, refuse_home_with_state, stage, take_back};

/// A backup could not be written or read. The cases a person fixes (a backup that is
/// not one, a newer format, a home that is not new) are [`BackupError::is_usage`].
#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    #[error("{} is not a backup tau can restore: {why}; nothing was restored", .file.display())]
    Damaged { file: PathBuf, why: String },
    #[error(
        "{} was written by tau {tau} in backup format {version}; this is tau {this}, which reads format {FORMAT_VERSION}: restore it with that tau or a later one",
        .file.display()
    )]
    NewerFormat {
        file: PathBuf,
        /// The tau that wrote it, as the display function shows it.
        tau: String,
        version: u64,
        this: String,
    },
    #[error(
        "{} was written by tau {tau} with state.db at schema step {schema}; this is tau {this}, which knows steps up to {known}: restore it with tau {tau} or later",
        .file.display()
    )]
    NewerSchema {
        file: PathBuf,
        tau: String,
        schema: i64,
        known: i64,
        this: String,
    },
    #[error(
        "{} already holds tau's state ({held}): a backup is restored only into a new home; name one with --home",
        .home.display()
    )]
    HomeHasState { home: PathBuf, held: String },
    #[error("cannot read {error}")]
    ReadPrivate { error: io::Error },
    #[error("cannot write {}: {error}", .file.display())]
    Write { file: PathBuf, error: io::Error },
    #[error("cannot move {name} into {}: {error}", .home.display())]
    Move {
        name: &'static str,
        home: PathBuf,
        error: io::Error,
    },
    #[error(transparent)]
    Io(#[from] io::Error),
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

impl BackupError {
    /// A backup that is not one, a newer one, or a home that is not new: exit 2.
    pub fn is_usage(&self) -> bool {
        match self {
            Self::Damaged { .. }
            | Self::NewerFormat { .. }
            | Self::NewerSchema { .. }
            | Self::HomeHasState { .. } => true,
            Self::ReadPrivate { .. }
            | Self::Write { .. }
            | Self::Move { .. }
            | Self::Io(_)
            | Self::Json(_) => false,
        }
    }
}

/// What a backup says it is.
pub const FORMAT: &str = "tau-backup";
/// The format's version this tau writes and reads.
pub const FORMAT_VERSION: u32 = 1;
/// The manifest's name in the tar; always its first entry.
pub const MANIFEST: &str = "manifest.json";
/// The most a manifest may take.
pub const MANIFEST_MAX_BYTES: u64 = 1 << 20;

/// The files a backup may hold, by their name in the home.
pub const STATE_DB: &str = "state.db";
pub const AUDIT_LOG: &str = "audit.jsonl";
pub const WEB_TOKEN: &str = "web-token";
pub const CHAT_HISTORY: &str = "chat-history";
/// The key TauBar signs its pushes with: the devices subscribed with its public half are
/// reached only as long as it stays.
pub const PUSH_KEY: &str = "push-key";
pub const FILES: [&str; 5] = [STATE_DB, AUDIT_LOG, WEB_TOKEN, CHAT_HISTORY, PUSH_KEY];

/// `manifest.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Always `tau-backup`.
    pub format: String,
    /// The format's version ([`FORMAT_VERSION`]).
    pub version: u32,
    /// The tau that wrote it.
    pub tau: String,
    /// The schema step of its `state.db`.
    pub schema: i64,
    pub created_at: String,
    /// The audit log's head the copy ends at (`None`: nothing was ever written).
    pub audit_head: Option<ManifestHead>,
    pub files: Vec<ManifestFile>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManifestHead {
    pub seq: u64,
    pub hash: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManifestFile {
    /// Its name in the home and in the tar.
    pub path: String,
    pub bytes: u64,
    pub sha256: String,
}

/// Copies the home's private file `source` to `dest` (0600) when it exists; never through
/// a link.
pub fn copy_private(source: &Path, dest: &Path) -> Result<bool, BackupError> {
    let mut from = match crate::private::open(source, OpenOptions::new().read(true)) {
        Ok(file) => file,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(error) => return Err(BackupError::ReadPrivate { error }),
    };
    let mut to = crate::private::open(dest, OpenOptions::new().create_new(true).write(true))?;
    io::copy(&mut from, &mut to)?;
    to.sync_all()?;
    Ok(true)
}

/// A staged file's size and SHA-256.
pub fn describe(path: &Path, name: &str) -> Result<ManifestFile, BackupError> {
    let mut file = std::fs::File::open(path)?;
    let (bytes, sha256) = hash_reader(&mut file)?;
    Ok(ManifestFile {
        path: name.to_owned(),
        bytes,
        sha256,
    })
}

/// How many bytes `reader` gave and their SHA-256, in hex.
pub(crate) fn hash_reader(reader: &mut impl Read) -> io::Result<(u64, String)> {
    let mut hasher = Sha256::new();
    let mut buffer = vec![0; 64 * 1024];
    let mut bytes = 0u64;
    loop {
        let read = reader.read(&mut buffer)?;
        if read == 0 {
            break;
        }
        hasher.update(buffer.get(..read).unwrap_or_default());
        bytes += read as u64;
    }
    Ok((bytes, hex(&hasher.finalize())))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Writes the tar (the manifest, then each staged file) through a private file in the
/// same folder, renamed to `file` once complete and on the disk; returns its size.
pub fn write_tar(file: &Path, manifest: &Manifest, staging: &Path) -> Result<u64, BackupError> {
    let dir = folder_of(file);
    let failed = |error: io::Error| BackupError::Write {
        file: file.to_owned(),
        error,
    };
    let partial = tempfile::Builder::new()
        .prefix(".tau-backup-")
        .tempfile_in(&dir)
        .map_err(failed)?;
    let mut tar = tar::Builder::new(partial);
    let now = jiff::Timestamp::now().as_second().max(0).unsigned_abs();
    let body = serde_json::to_vec_pretty(manifest)?;
    append(&mut tar, MANIFEST, body.len() as u64, now, body.as_slice()).map_err(failed)?;
    for entry in &manifest.files {
        let source = std::fs::File::open(staging.join(&entry.path))?;
        append(&mut tar, &entry.path, entry.bytes, now, source).map_err(failed)?;
    }
    let partial = tar.into_inner().map_err(failed)?;
    partial.as_file().sync_all().map_err(failed)?;
    let size = partial.as_file().metadata().map_err(failed)?.len();
    partial
        .persist_noclobber(file)
        .map_err(|e| failed(e.error))?;
    Ok(size)
}

/// The folder `file` is in (`.` for a bare name).
pub fn folder_of(file: &Path) -> PathBuf {
    match file.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_owned(),
        _ => PathBuf::from("."),
    }
}

/// One regular file in the tar, private, owned by nobody in particular.
fn append<W: Write>(
    tar: &mut tar::Builder<W>,
    name: &str,
    size: u64,
    mtime: u64,
    data: impl Read,
) -> io::Result<()> {
    let mut header = tar::Header::new_gnu();
    header.set_entry_type(tar::EntryType::Regular);
    header.set_size(size);
    header.set_mode(0o600);
    header.set_mtime(mtime);
    header.set_cksum();
    tar.append_data(&mut header, name, data)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn the_manifest_reads_back_as_written() {
        let manifest = Manifest {
            format: FORMAT.to_owned(),
            version: FORMAT_VERSION,
            tau: "0.1.0".to_owned(),
            schema: 9,
            created_at: "2026-12-02T10:00:00Z".to_owned(),
            audit_head: Some(ManifestHead {
                seq: 3,
                hash: "ab".repeat(32),
            }),
            files: vec![ManifestFile {
                path: STATE_DB.to_owned(),
                bytes: 4096,
                sha256: "cd".repeat(32),
            }],
        };
        let text = serde_json::to_string(&manifest).unwrap();
        assert_eq!(serde_json::from_str::<Manifest>(&text).unwrap(), manifest);
        assert_eq!(
            hash_reader(&mut &b"abc"[..]).unwrap(),
            (
                3,
                "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad".to_owned()
            )
        );
    }
}
