//! `tau backup FILE` and `tau restore FILE`: tau's home in one file, taken beside a running
//! `tau serve` and brought back into a new home, on this machine or another.
//!
//! The file is a tar: `manifest.json` first ([`Manifest`]: the format's version, the tau
//! that wrote it, the schema step of its `state.db`, the audit head, and each file with its
//! size and SHA-256), then the files. What goes in: `state.db` (a consistent copy, taken
//! with SQLite's `VACUUM INTO` on tau's own connection while others write), `audit.jsonl`
//! up to the head that copy anchors (so the chain verifies in the copy: it is checked
//! before the file is written), TauBar's `web-token`, the `push-key` it signs pushes with (so
//! the devices subscribed to it keep being reached) and the `chat-history`. What never
//! goes in: a model's key or any other secret (they live in the environment, not the
//! home), `mcp-token` (`tau mcp --http` makes a new one), the logs, the locks, the
//! workspace (the person's own files; copy them like any others).
//!
//! Layout: `mod.rs` `tau backup`, `restore.rs` `tau restore`; the file's format, staging
//! and writing are `tau_home::backup`'s.

mod restore;

use std::fs::OpenOptions;
use std::path::Path;

use tau_home::backup::{
    AUDIT_LOG, CHAT_HISTORY, FORMAT, FORMAT_VERSION, Manifest, ManifestHead, PUSH_KEY, STATE_DB,
    WEB_TOKEN, copy_private, describe, folder_of, write_tar,
};

use crate::context::Context;
use crate::errors::usage;
use crate::store::ConfiguredStore;

pub(crate) use restore::restore;

/// `tau backup FILE`.
pub(crate) fn backup(ctx: &Context, file: &Path) -> anyhow::Result<String> {
    if let ConfiguredStore::Shared(shared) = ctx.store_location()? {
        return Err(usage(format!(
            "tau backup copies a home whose store is its state.db; this one's is the PostgreSQL database {}: back it up with PostgreSQL's own tools (pg_dump -Fc), and keep this home's audit.jsonl and hub-id with it",
            tau_core::display(&shared.url)
        )));
    }
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
    let head = copied.audit_anchor().audit_head()?;
    let schema = copied.schema_version()?;
    // 2. the log up to that head, then the chain checked in the copy.
    let log_copy = staging.path().join(AUDIT_LOG);
    let mut log_out =
        tau_home::private::open(&log_copy, OpenOptions::new().create_new(true).write(true))?;
    let lines = tau_audit::copy_to_head(&ctx.home.audit_log(), head.as_ref(), &mut log_out)?;
    log_out.sync_all()?;
    drop(log_out);
    let (report, intact) = tau_audit::verify_log(&log_copy, &copied)?;
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
        (PUSH_KEY, ctx.home.push_key()),
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
            tau_audit::format_head(head)
        )),
        None => out.push_str(", no audit log yet"),
    }
    for entry in &manifest.files {
        if [WEB_TOKEN, CHAT_HISTORY, PUSH_KEY].contains(&entry.path.as_str()) {
            out.push_str(&format!(", {}", entry.path));
        }
    }
    out.push_str(
        "\nit holds TauBar's token and your conversations: keep it where only you can read it\n",
    );
    Ok(out)
}
