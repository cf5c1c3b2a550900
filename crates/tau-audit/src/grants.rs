//! What `audit.jsonl` records of grants, for the gate (and `tau serve`'s start, and `tau
//! audit verify`): a grant covers a call only as the verified chain records it. The log is
//! vouched for once as `tau audit verify` does (the chain, its end against the anchor in
//! `state.db`), then read on from where it was left, each new line checked to follow the
//! one before, so a use costs the lines written since the last one. A log that is broken,
//! or changes behind tau's back, confirms no grant.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};
use tau_protocol::GrantId;

use tau_core::{GrantLedger, fold_grant_line};
use tau_state::{RecordedGrant, StateDb};

use crate::log::{GENESIS, Head, line_hash};
use crate::record::AuditLine;
use crate::verdict::Verdict;
use crate::verify::verify;

/// Why the log confirms no grant now.
#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    #[error("cannot read the audit log: {0}")]
    Read(#[source] io::Error),
    #[error("cannot lock the audit log: {0}")]
    Lock(#[source] io::Error),
    #[error("the audit log cannot be vouched for ({0:?}): `tau audit verify` says why")]
    NotVouchedFor(Verdict),
    #[error("cannot read the audit log's anchor in state.db")]
    Anchor,
    #[error("the audit log changed behind tau's back after entry {0}: `tau audit verify` says how")]
    Changed(u64),
    #[error("the audit log does not end where state.db's anchor says: `tau audit verify` says why")]
    NotAtAnchor,
}

/// The grant lines of one home's audit log, read as far as it was written.
pub struct AuditGrants {
    path: PathBuf,
    state: StateDb,
    read: Mutex<Option<ReadSoFar>>,
}

/// The verified chain up to `offset`: its last line's `seq` and hash, and the grants it
/// records.
struct ReadSoFar {
    offset: u64,
    seq: u64,
    hash: String,
    grants: BTreeMap<GrantId, RecordedGrant>,
}

impl AuditGrants {
    pub fn new(path: PathBuf, state: StateDb) -> Self {
        Self {
            path,
            state,
            read: Mutex::new(None),
        }
    }

    /// Every grant the log records, read up to its end now.
    pub fn all(&self) -> Result<BTreeMap<GrantId, RecordedGrant>, LedgerError> {
        self.with_read(|read| read.grants.clone())
    }

    fn with_read<T>(&self, then: impl FnOnce(&ReadSoFar) -> T) -> Result<T, LedgerError> {
        let mut read = self.read.lock().unwrap_or_else(PoisonError::into_inner);
        // Taken out while it is read on: after an error it stays out, and the log is
        // vouched for again from the start next time.
        match self.catch_up(read.take()) {
            Ok(so_far) => Ok(then(read.insert(so_far))),
            Err(error) => {
                tracing::error!(path = %self.path.display(), %error, "the audit log confirms no grant");
                Err(error)
            }
        }
    }

    fn catch_up(&self, read: Option<ReadSoFar>) -> Result<ReadSoFar, LedgerError> {
        let file = match File::open(&self.path) {
            Ok(file) => Some(file),
            Err(error) if error.kind() == io::ErrorKind::NotFound => None,
            Err(error) => return Err(LedgerError::Read(error)),
        };
        let mut so_far = match read {
            Some(so_far) => so_far,
            None => {
                let verdict = verify(&self.path, Some(&self.state)).map_err(LedgerError::Read)?;
                if !verdict.intact() {
                    return Err(LedgerError::NotVouchedFor(verdict));
                }
                ReadSoFar {
                    offset: 0,
                    seq: 0,
                    hash: GENESIS.to_owned(),
                    grants: BTreeMap::new(),
                }
            }
        };
        let Some(mut file) = file else {
            // No log: only an empty one was vouched for.
            return Ok(so_far);
        };
        file.lock_shared().map_err(LedgerError::Lock)?;
        // Read under the lock: no append is half done, so the log ends at the anchor (or
        // at the line announced past it, when a process stopped before anchoring it).
        let tail = read_from(&mut file, so_far.offset);
        let ends = (
            self.state.audit_anchor().audit_head(),
            self.state.audit_anchor().audit_announced(),
        );
        let _ = file.unlock();
        let tail = tail.map_err(LedgerError::Read)?;
        let (Ok(head), Ok(announced)) = ends else {
            return Err(LedgerError::Anchor);
        };
        // Only whole lines: one being written is read next time.
        let whole = tail
            .iter()
            .rposition(|b| *b == b'\n')
            .map_or(0, |end| end + 1);
        for line in tail.get(..whole).unwrap_or_default().split(|b| *b == b'\n') {
            if line.is_empty() {
                continue;
            }
            follow(&mut so_far, line)?;
        }
        so_far.offset += whole as u64;
        let at = |end: Option<Head>| {
            end.is_some_and(|end| end.seq == so_far.seq && end.hash == so_far.hash)
        };
        if so_far.seq > 0 && !at(head) && !at(announced) {
            return Err(LedgerError::NotAtAnchor);
        }
        Ok(so_far)
    }
}

/// The log's bytes from `offset` to its end; shorter than `offset` is an error.
fn read_from(file: &mut File, offset: u64) -> io::Result<Vec<u8>> {
    let len = file.seek(SeekFrom::End(0))?;
    if len < offset {
        return Err(io::Error::other(
            "it is shorter than when it was last read: lines were dropped",
        ));
    }
    file.seek(SeekFrom::Start(offset))?;
    let mut tail = Vec::new();
    file.read_to_end(&mut tail)?;
    Ok(tail)
}

/// Takes `line` as the next of the chain read `so_far`, folding it when it is a grant's.
fn follow(so_far: &mut ReadSoFar, line: &[u8]) -> Result<(), LedgerError> {
    let AuditLine::Entry(entry) = AuditLine::parse(line) else {
        return Err(LedgerError::Changed(so_far.seq));
    };
    if entry.seq != Some(so_far.seq + 1) || entry.prev.as_deref() != Some(so_far.hash.as_str()) {
        return Err(LedgerError::Changed(so_far.seq));
    }
    so_far.seq += 1;
    so_far.hash = line_hash(line);
    if let Some(event) = entry.event() {
        fold_grant_line(&mut so_far.grants, event);
    }
    Ok(())
}

impl GrantLedger for AuditGrants {
    fn recorded(&self, id: &GrantId) -> Result<Option<RecordedGrant>, String> {
        self.with_read(|read| read.grants.get(id).cloned())
            .map_err(|error| error.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::tests::state_beside;
    use crate::log::{AuditLog, anchor_db};
    use jiff::Timestamp;
    use pretty_assertions::assert_eq;
    use serde_json::json;
    use tau_core::AuditEvent;
    use tau_protocol::{DecidedBy, Grant, GrantScope, SessionId, Tier};

    fn grant(id: &str) -> Grant {
        let arguments = json!({"command": "make -s"});
        Grant {
            id: GrantId::parse(id).unwrap(),
            tool: "run_command".into(),
            tier: Tier::Physical,
            schema_sha256: "0".repeat(64),
            arguments_sha256: tau_state::canonical_arguments(&arguments).1,
            arguments,
            card_sha256: "1".repeat(64),
            workspace_sha256: Some("2".repeat(64)),
            scope: GrantScope::Conversation,
            channel: "terminal".into(),
            session: SessionId::parse("s1").unwrap(),
            person: None,
            created_by: DecidedBy::person("terminal"),
            approval_id: None,
            created_at: Timestamp::now().to_string(),
            expires_at: Timestamp::now().to_string(),
            uses: 0,
            max_uses: None,
            last_used_at: None,
            revoked_at: None,
            revoked_by: None,
        }
    }

    #[test]
    fn grant_lines_are_read_as_the_chain_grows_and_a_rewrite_confirms_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let ledger = AuditGrants::new(path.clone(), state_beside(&path));
        let id = GrantId::parse("gr_1").unwrap();
        assert_eq!(ledger.recorded(&id), Ok(None));
        let log = AuditLog::open(&path, "s1", state_beside(&path).audit_anchor()).unwrap();
        log.append(&AuditEvent::TurnLimit { max_turns: 1 }).unwrap();
        log.append(&AuditEvent::GrantCreated(grant("gr_1")))
            .unwrap();
        let recorded = ledger.recorded(&id).unwrap().unwrap();
        assert_eq!((recorded.uses, recorded.revoked), (0, false));
        log.append(&AuditEvent::GrantUsed {
            grant_id: id.clone(),
            tool: "run_command".into(),
            tool_use_id: "t1".into(),
            session: "s1".into(),
            channel: "terminal".into(),
            use_number: 1,
            max_uses: None,
        })
        .unwrap();
        log.append(&AuditEvent::GrantPinned {
            grant_id: id.clone(),
            tool: "run_command".into(),
            tool_use_id: "t1".into(),
            workspace_sha256: "3".repeat(64),
        })
        .unwrap();
        let recorded = ledger.recorded(&id).unwrap().unwrap();
        assert_eq!(
            (recorded.uses, recorded.workspace_sha256),
            (1, Some("3".repeat(64)))
        );
        // A grant_created line written behind tau's back, its chain recomputed: the
        // anchor in state.db does not name it, and a new reader confirms nothing.
        let mut text = std::fs::read_to_string(&path).unwrap();
        let last = text.lines().last().unwrap().to_owned();
        let mut forged = serde_json::to_value(AuditEvent::GrantCreated(grant("gr_2"))).unwrap();
        forged["seq"] = json!(5);
        forged["prev"] = json!(line_hash(last.as_bytes()));
        text.push_str(&format!("{forged}\n"));
        std::fs::write(&path, text).unwrap();
        let fresh = AuditGrants::new(path.clone(), StateDb::open(&anchor_db(&path)).unwrap());
        assert!(fresh.recorded(&id).is_err());
        // The reader that read on before: the line follows the chain, but the log no
        // longer ends at the anchor.
        assert!(ledger.recorded(&id).is_err());
        // An edited earlier line breaks the chain.
        let lines: Vec<String> = std::fs::read_to_string(&path)
            .unwrap()
            .lines()
            .map(|l| l.replace("\"max_turns\":1", "\"max_turns\":2"))
            .collect();
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        let reread = AuditGrants::new(path.clone(), state_beside(&path));
        assert!(reread.recorded(&id).is_err());
    }
}
