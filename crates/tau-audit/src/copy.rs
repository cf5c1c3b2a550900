//! The log up to a head, copied for `tau backup`. The appender writes a line before it
//! moves the anchor past it, so every line up to the head a `state.db` copy anchors is in
//! the file already, whatever is appended meanwhile: the copy ends exactly where that
//! `state.db` says it does, and the chain verifies in the copy.

use std::fs::OpenOptions;
use std::io::{self, BufRead, BufReader, Write};
use std::path::Path;

use crate::log::{Head, line_hash};
use crate::record::AuditLine;

/// Why the log could not be copied up to a head.
#[derive(Debug, thiserror::Error)]
pub enum CopyError {
    #[error("cannot read the audit log: {0}")]
    Open(#[source] io::Error),
    #[error(transparent)]
    Io(#[from] io::Error),
    #[error("{path} has lines but state.db anchors none of them; `tau audit verify` says more")]
    Unanchored { path: String },
    #[error(
        "{path} is missing, and state.db says entry {seq} was written; `tau audit verify` says more"
    )]
    Missing { path: String, seq: u64 },
    #[error("{path} ends before entry {seq}, which state.db anchors; `tau audit verify` says more")]
    Short { path: String, seq: u64 },
    #[error("entry {seq} of {path} is not the line state.db anchors; `tau audit verify` says more")]
    NotAnchored { path: String, seq: u64 },
}

/// Writes the lines of the log at `path` up to and including entry `head.seq` to `out`,
/// and returns how many. The entry must hash to `head.hash`. Without a head (nothing was
/// ever anchored) the log must be missing or empty.
pub fn copy_to_head(
    path: &Path,
    head: Option<&Head>,
    out: &mut impl Write,
) -> Result<u64, CopyError> {
    let shown = || path.display().to_string();
    let file = match tau_home::private::open(path, OpenOptions::new().read(true)) {
        Ok(file) => Some(file),
        Err(error) if error.kind() == io::ErrorKind::NotFound => None,
        Err(error) => return Err(CopyError::Open(error)),
    };
    let Some(head) = head else {
        let empty = match &file {
            Some(file) => file.metadata()?.len() == 0,
            None => true,
        };
        if empty {
            return Ok(0);
        }
        return Err(CopyError::Unanchored { path: shown() });
    };
    let Some(file) = file else {
        return Err(CopyError::Missing {
            path: shown(),
            seq: head.seq,
        });
    };
    let mut reader = BufReader::new(file);
    let mut line = Vec::new();
    let mut lines = 0;
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line)? == 0 || !line.ends_with(b"\n") {
            return Err(CopyError::Short {
                path: shown(),
                seq: head.seq,
            });
        }
        out.write_all(&line)?;
        lines += 1;
        let body = line.strip_suffix(b"\n").unwrap_or(&line);
        if AuditLine::parse(body).seq() == Some(head.seq) {
            if line_hash(body) != head.hash {
                return Err(CopyError::NotAnchored {
                    path: shown(),
                    seq: head.seq,
                });
            }
            return Ok(lines);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::AuditLog;
    use crate::log::tests::state_beside;
    use pretty_assertions::assert_eq;
    use tau_core::AuditEvent;

    #[test]
    fn the_copy_ends_at_the_head_whatever_follows_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let state = state_beside(&path);
        let log = AuditLog::open(&path, "s", state.audit_anchor()).unwrap();
        for max_turns in 0..3 {
            log.append(&AuditEvent::TurnLimit { max_turns }).unwrap();
        }
        let head = state.audit_anchor().audit_head().unwrap().unwrap();
        log.append(&AuditEvent::TurnLimit { max_turns: 9 }).unwrap();
        let mut copy = Vec::new();
        assert_eq!(copy_to_head(&path, Some(&head), &mut copy).unwrap(), 3);
        let all = std::fs::read(&path).unwrap();
        assert!(all.starts_with(&copy) && all.len() > copy.len());
        assert_eq!(copy.iter().filter(|b| **b == b'\n').count(), 3);

        let forged = Head {
            seq: 2,
            hash: "0".repeat(64),
        };
        let error = copy_to_head(&path, Some(&forged), &mut Vec::new()).unwrap_err();
        assert!(error.to_string().starts_with("entry 2 of "), "{error}");
        let beyond = Head {
            seq: 9,
            hash: head.hash.clone(),
        };
        assert!(copy_to_head(&path, Some(&beyond), &mut Vec::new()).is_err());
        assert_eq!(
            copy_to_head(&dir.path().join("none"), None, &mut Vec::new()).unwrap(),
            0
        );
        assert!(copy_to_head(&path, None, &mut Vec::new()).is_err());
    }
}
