//! `tau restore FILE --home NEW`: a backup brought back into a home that holds no state
//! yet. Nothing lands in the home until every file matches its manifest (name, size,
//! SHA-256) and the backup's schema is one this tau knows; then `state.db` is opened (an
//! older one is brought up to date in place) and the audit log must verify there, or
//! everything restored is taken away again.
//!
//! A question that waited when the backup was taken waits again; one whose deadline has
//! passed meanwhile is expired by `tau serve` when it starts, before any channel could
//! answer it, so it never runs.

use std::path::Path;

use tau_home::backup::{
    Manifest, damaged, place, read_manifest, refuse_home_with_state, stage, take_back,
};
use tau_state::{ApprovalState, SCHEMA_VERSION, StateDb};

use crate::context::Context;
use crate::errors::usage;
use tau_home::Home;

/// `tau restore FILE`, into the home `--home` names.
pub(crate) fn restore(ctx: &Context, file: &Path) -> anyhow::Result<String> {
    if let crate::store::ConfiguredStore::Shared(shared) = ctx.store_location()? {
        return Err(usage(format!(
            "tau restore brings back a home whose store is its state.db; this config's store is the PostgreSQL database {}: restore it with PostgreSQL's own tools (pg_restore)",
            tau_core::display(&shared.url)
        )));
    }
    let home = &ctx.home;
    refuse_home_with_state(home)?;
    let source = std::fs::File::open(file)
        .map_err(|e| usage(format!("cannot read {}: {e}", file.display())))?;
    let mut archive = tar::Archive::new(source);
    let mut entries = archive
        .entries()
        .map_err(|e| damaged(file, &format!("it is not a tar ({e})")))?;
    let manifest = read_manifest(file, &mut entries, SCHEMA_VERSION)?;
    ctx.create_home()?;
    let staging = tempfile::Builder::new()
        .prefix(".restore-")
        .tempdir_in(home.root())
        .map_err(|e| anyhow::anyhow!("cannot make a folder in {}: {e}", home.root().display()))?;
    let seen = stage(file, entries, &manifest, staging.path())?;
    let placed = place(staging.path(), home, &seen)?;
    match open_and_verify(home) {
        Ok(summary) => Ok(say(file, home, &manifest, &summary)),
        Err(error) => {
            take_back(home, &placed);
            Err(error)
        }
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
    let (report, intact) = tau_audit::verify_log(&home.audit_log(), &state)?;
    if !intact {
        return Err(anyhow::anyhow!(
            "the restored audit log does not verify, so nothing was restored: {}",
            report.trim_end()
        ));
    }
    let now = jiff::Timestamp::now();
    let waiting = state.approvals().approvals(Some(ApprovalState::Pending))?;
    let summary = Summary {
        sessions: state.sessions().list_sessions()?.len(),
        overdue: waiting.iter().filter(|row| row.deadline <= now).count(),
        waiting: waiting.len(),
        grants: state.grants().grants(Some(now))?.len(),
        routines: state.routines().stored_routines()?.len(),
        devices: state.devices().devices()?.len(),
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
