//! `tau backup FILE` and `tau restore FILE`: tau's home in one file, taken beside a running
//! `tau serve` and brought back into a new home, on this machine or another.
//!
//! The file is a tar: `manifest.json` first ([`Manifest`]: the format's version, the tau
//! that wrote it, the schema step of its `state.db`, the audit head, and each file with its
//! size and SHA-256), then the files. What goes in: `state.db` (a consistent copy, taken
//! with SQLite's `VACUUM INTO` on tau's own connection while others write), `audit.jsonl`
//! up to the head that copy anchors (so the chain verifies in the copy: it is checked
//! before the file is written), TauBar's `web-token` and the `chat-history`. What never
//! goes in: a model's key or any other secret (they live in the environment, not the
//! home), `mcp-token` (`tau mcp --http` makes a new one), the logs, the locks, the
//! workspace (the person's own files; copy them like any others).
//!
//! Layout: `mod.rs` the manifest and `tau backup`, `restore.rs` `tau restore`.

mod restore;

use std::fs::OpenOptions;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::context::Context;
use crate::errors::usage;

pub(crate) use restore::restore;

/// What a backup says it is.
const FORMAT: &str = "tau-backup";
/// The format's version this tau writes and reads.
const FORMAT_VERSION: u32 = 1;
/// The manifest's name in the tar; always its first entry.
const MANIFEST: &str = "manifest.json";
/// The most a manifest may take.
const MANIFEST_MAX_BYTES: u64 = 1 << 20;

/// The files a backup may hold, by their name in the home.
const STATE_DB: &str = "state.db";
const AUDIT_LOG: &str = "audit.jsonl";
const WEB_TOKEN: &str = "web-token";
const CHAT_HISTORY: &str = "chat-history";
const FILES: [&str; 4] = [STATE_DB, AUDIT_LOG, WEB_TOKEN, CHAT_HISTORY];

/// `manifest.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Manifest {
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
pub(crate) struct ManifestHead {
    pub seq: u64,
    pub hash: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ManifestFile {
    /// Its name in the home and in the tar.
    pub path: String,
    pub bytes: u64,
    pub sha256: String,
}

/// `tau backup FILE`.
pub(crate) fn backup(ctx: &Context, file: &Path) -> anyhow::Result<String> {
    if std::fs::symlink_metadata(file).is_ok() {
        return Err(usage(format!(
            "{} exists: tau never writes a backup over a file; name a new one",
            file.display()
        )));
    }
    let state = ctx.existing_state()?.ok_or_else(|| {
        usage(format!(
            "{} holds no state.db: there is nothing to back up",
            ctx.home.root().display()
        ))
    })?;
    // Beside the backup, on its file system: the copy may be large, and is private (0700).
    let staging = tempfile::Builder::new()
        .prefix(".tau-backup-")
        .tempdir_in(folder_of(file))
        .map_err(|e| {
            anyhow::anyhow!(
                "cannot make a folder for the copy beside {}: {e}",
                file.display()
            )
        })?;
    // 1. state.db as it stands at one commit; its anchor says where the log's copy ends.
    let db_copy = staging.path().join(STATE_DB);
    state.copy_to(&db_copy)?;
    let copied = tau_state::StateDb::open(&db_copy)?;
    let head = copied.audit_head()?;
    let schema = copied.schema_version()?;
    // 2. the log up to that head, then the chain checked in the copy.
    let log_copy = staging.path().join(AUDIT_LOG);
    let mut log_out =
        tau_home::private::open(&log_copy, OpenOptions::new().create_new(true).write(true))?;
    let lines = crate::audit::copy_to_head(&ctx.home.audit_log(), head.as_ref(), &mut log_out)?;
    log_out.sync_all()?;
    drop(log_out);
    let (report, intact) = crate::audit::verify_log(&log_copy, &copied)?;
    if !intact {
        return Err(anyhow::anyhow!(
            "the copy of the audit log does not verify, so no backup was written: {}",
            report.trim_end()
        ));
    }
    drop(copied);
    if staging.path().join(format!("{STATE_DB}-wal")).exists() {
        return Err(anyhow::anyhow!(
            "the copy of state.db kept a write-ahead log; no backup was written"
        ));
    }
    // 3. the small files, as they are.
    let mut names = vec![STATE_DB];
    if head.is_some() {
        names.push(AUDIT_LOG);
    }
    for (name, source) in [
        (WEB_TOKEN, ctx.home.web_token()),
        (CHAT_HISTORY, ctx.home.chat_history()),
    ] {
        if copy_private(&source, &staging.path().join(name))? {
            names.push(name);
        }
    }
    let mut files = Vec::new();
    for name in names {
        files.push(describe(&staging.path().join(name), name)?);
    }
    let manifest = Manifest {
        format: FORMAT.to_owned(),
        version: FORMAT_VERSION,
        tau: env!("CARGO_PKG_VERSION").to_owned(),
        schema,
        created_at: jiff::Timestamp::now().to_string(),
        audit_head: head.as_ref().map(|h| ManifestHead {
            seq: h.seq,
            hash: h.hash.clone(),
        }),
        files,
    };
    let written = write_tar(file, &manifest, staging.path())?;
    let mut out = format!(
        "backed up {} into {} ({written} bytes): state.db at schema step {schema}",
        ctx.home.root().display(),
        file.display()
    );
    match &head {
        Some(head) => out.push_str(&format!(
            ", the audit log's {} up to {}",
            tau_core::counted(
                usize::try_from(lines).unwrap_or(usize::MAX),
                "line",
                "lines"
            ),
            crate::audit::format_head(head)
        )),
        None => out.push_str(", no audit log yet"),
    }
    for entry in &manifest.files {
        if entry.path == WEB_TOKEN || entry.path == CHAT_HISTORY {
            out.push_str(&format!(", {}", entry.path));
        }
    }
    out.push_str(
        "\nit holds TauBar's token and your conversations: keep it where only you can read it\n",
    );
    Ok(out)
}

/// Copies the home's private file `source` to `dest` (0600) when it exists; never through
/// a link.
fn copy_private(source: &Path, dest: &Path) -> anyhow::Result<bool> {
    let mut from = match tau_home::private::open(source, OpenOptions::new().read(true)) {
        Ok(file) => file,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(error) => return Err(anyhow::anyhow!("cannot read {error}")),
    };
    let mut to = tau_home::private::open(dest, OpenOptions::new().create_new(true).write(true))?;
    io::copy(&mut from, &mut to)?;
    to.sync_all()?;
    Ok(true)
}

/// A staged file's size and SHA-256.
fn describe(path: &Path, name: &str) -> anyhow::Result<ManifestFile> {
    let mut file = std::fs::File::open(path)?;
    let (bytes, sha256) = hash_reader(&mut file)?;
    Ok(ManifestFile {
        path: name.to_owned(),
        bytes,
        sha256,
    })
}

/// How many bytes `reader` gave and their SHA-256, in hex.
fn hash_reader(reader: &mut impl Read) -> io::Result<(u64, String)> {
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
fn write_tar(file: &Path, manifest: &Manifest, staging: &Path) -> anyhow::Result<u64> {
    let dir = folder_of(file);
    let failed = |e: io::Error| anyhow::anyhow!("cannot write {}: {e}", file.display());
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
fn folder_of(file: &Path) -> PathBuf {
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
