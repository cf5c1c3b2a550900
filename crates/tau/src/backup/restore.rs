//! `tau restore FILE --home NEW`: a backup brought back into a home that holds no state
//! yet. Nothing lands in the home until every file matches its manifest (name, size,
//! SHA-256) and the backup's schema is one this tau knows; then `state.db` is opened (an
//! older one is brought up to date in place) and the audit log must verify there, or
//! everything restored is taken away again.
//!
//! A question that waited when the backup was taken waits again; one whose deadline has
//! passed meanwhile is expired by `tau serve` when it starts, before any channel could
//! answer it, so it never runs.

use std::collections::BTreeSet;
use std::fs::OpenOptions;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use tau_state::{ApprovalState, SCHEMA_VERSION, StateDb};

use super::{
    AUDIT_LOG, CHAT_HISTORY, FILES, FORMAT, FORMAT_VERSION, MANIFEST, MANIFEST_MAX_BYTES, Manifest,
    STATE_DB, WEB_TOKEN, hash_reader,
};
use crate::context::Context;
use crate::errors::usage;
use tau_home::Home;

/// `tau restore FILE`, into the home `--home` names.
pub(crate) fn restore(ctx: &Context, file: &Path) -> anyhow::Result<String> {
    let home = &ctx.home;
    refuse_home_with_state(home)?;
    let source = std::fs::File::open(file)
        .map_err(|e| usage(format!("cannot read {}: {e}", file.display())))?;
    let mut archive = tar::Archive::new(source);
    let mut entries = archive
        .entries()
        .map_err(|e| damaged(file, &format!("it is not a tar ({e})")))?;
    let manifest = read_manifest(file, &mut entries)?;
    ctx.create_home()?;
    let staging = tempfile::Builder::new()
        .prefix(".restore-")
        .tempdir_in(home.root())
        .map_err(|e| anyhow::anyhow!("cannot make a folder in {}: {e}", home.root().display()))?;
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
        let staged = staging.path().join(&name);
        let mut out =
            tau_home::private::open(&staged, OpenOptions::new().create_new(true).write(true))?;
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
    let placed = place(staging.path(), home, &seen)?;
    match open_and_verify(home) {
        Ok(summary) => Ok(say(file, home, &manifest, &summary)),
        Err(error) => {
            take_back(home, &placed);
            Err(error)
        }
    }
}

/// Refuses a home that holds any file tau keeps its state in: a restore never mixes two
/// homes, and never replaces one.
fn refuse_home_with_state(home: &Home) -> anyhow::Result<()> {
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
    Err(usage(format!(
        "{} already holds tau's state ({}): a backup is restored only into a new home; name one with --home",
        home.root().display(),
        held.join(", ")
    )))
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
    ]);
    files
}

/// The first entry, `manifest.json`: a backup of this format, of a version and a schema
/// this tau knows, listing only files a backup may hold.
fn read_manifest<R: Read>(
    file: &Path,
    entries: &mut tar::Entries<'_, R>,
) -> anyhow::Result<Manifest> {
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
        return Err(usage(format!(
            "{} was written by tau {} in backup format {version}; this is tau {}, which reads format {FORMAT_VERSION}: restore it with that tau or a later one",
            file.display(),
            tau_core::display(text_of("tau").unwrap_or("?")),
            env!("CARGO_PKG_VERSION")
        )));
    }
    let manifest: Manifest = serde_json::from_value(value)
        .map_err(|e| damaged(file, &format!("its manifest does not read: {e}")))?;
    if manifest.schema > SCHEMA_VERSION {
        return Err(usage(format!(
            "{} was written by tau {} with state.db at schema step {}; this is tau {}, which knows steps up to {SCHEMA_VERSION}: restore it with tau {} or later",
            file.display(),
            tau_core::display(&manifest.tau),
            manifest.schema,
            env!("CARGO_PKG_VERSION"),
            tau_core::display(&manifest.tau),
        )));
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
fn damaged(file: &Path, why: &str) -> anyhow::Error {
    usage(format!(
        "{} is not a backup tau can restore: {why}; nothing was restored",
        file.display()
    ))
}

/// Moves the staged files into the home (none of them is there: see
/// [`refuse_home_with_state`]); `state.db` last, so nothing opens a home without its log.
fn place(staging: &Path, home: &Home, names: &BTreeSet<String>) -> anyhow::Result<Vec<PathBuf>> {
    let mut placed = Vec::new();
    for (name, dest) in [
        (AUDIT_LOG, home.audit_log()),
        (WEB_TOKEN, home.web_token()),
        (CHAT_HISTORY, home.chat_history()),
        (STATE_DB, home.state_db()),
    ] {
        if !names.contains(name) {
            continue;
        }
        if let Err(error) = std::fs::rename(staging.join(name), &dest) {
            take_back(home, &placed);
            return Err(anyhow::anyhow!(
                "cannot move {name} into {}: {error}",
                home.root().display()
            ));
        }
        placed.push(dest);
    }
    Ok(placed)
}

/// Removes what a failed restore placed, and what opening `state.db` made beside it. Only
/// after its connection is closed: the home held none of these before.
fn take_back(home: &Home, placed: &[PathBuf]) {
    let sqlite_files = ["-wal", "-shm"]
        .iter()
        .map(|suffix| home.root().join(format!("{STATE_DB}{suffix}")));
    for path in placed.iter().cloned().chain(sqlite_files) {
        let _ = std::fs::remove_file(path);
    }
}

/// What the restored home holds.
struct Summary {
    sessions: usize,
    waiting: usize,
    overdue: usize,
    grants: usize,
    routines: usize,
    devices: usize,
    audit: String,
}

/// Opens the restored `state.db` (bringing an older one up to date), checks the audit log
/// against its anchor, and counts what came back.
fn open_and_verify(home: &Home) -> anyhow::Result<Summary> {
    let state = StateDb::open(&home.state_db())?;
    let (report, intact) = crate::audit::verify_log(&home.audit_log(), &state)?;
    if !intact {
        return Err(anyhow::anyhow!(
            "the restored audit log does not verify, so nothing was restored: {}",
            report.trim_end()
        ));
    }
    let now = jiff::Timestamp::now();
    let waiting = state.approvals(Some(ApprovalState::Pending))?;
    let summary = Summary {
        sessions: state.list_sessions()?.len(),
        overdue: waiting.iter().filter(|row| row.deadline <= now).count(),
        waiting: waiting.len(),
        grants: state.grants(Some(now))?.len(),
        routines: state.stored_routines()?.len(),
        devices: state.devices()?.len(),
        audit: report.trim_end().to_owned(),
    };
    state.flush()?;
    Ok(summary)
}

fn say(file: &Path, home: &Home, manifest: &Manifest, summary: &Summary) -> String {
    use tau_core::counted;
    let mut out = format!(
        "restored {} (tau {}, {}) into {}: {}, {}, {}, {} made in conversations, {}\n{}\n",
        file.display(),
        tau_core::display(&manifest.tau),
        tau_core::display(&manifest.created_at),
        home.root().display(),
        counted(summary.sessions, "session", "sessions"),
        counted(summary.waiting, "waiting question", "waiting questions"),
        counted(summary.grants, "live grant", "live grants"),
        counted(summary.routines, "routine", "routines"),
        counted(summary.devices, "device", "devices"),
        summary.audit,
    );
    if summary.overdue > 0 {
        let (overdue, are, them) = if summary.overdue == 1 {
            ("waiting question is", "its", "it")
        } else {
            ("waiting questions are", "their", "them")
        };
        out.push_str(&format!(
            "{} {overdue} past {are} deadline: tau serve expires {them} when it starts, and {} never run{}\n",
            summary.overdue,
            if summary.overdue == 1 { "it" } else { "they" },
            if summary.overdue == 1 { "s" } else { "" },
        ));
    }
    out
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
