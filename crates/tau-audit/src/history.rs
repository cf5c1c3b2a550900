//! The audit log as the gate's memory of a person's approvals: what makes a card suggest
//! a grant. Read when a question is built (a person's pace), never written. The log is
//! read once, then only what was appended since: a long-lived `tau serve` asks this for
//! every question, and a question's cost must not grow with the log behind it.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};
use tau_protocol::Ruling;

use jiff::Timestamp;
use tau_core::AuditEvent;
use tau_protocol::{DecidedBy, Decision};

use crate::record::AuditLine;

/// A person's yes to one exact call.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Yes {
    tool: String,
    arguments_sha256: String,
    at: Timestamp,
}

/// What was read of the log so far.
#[derive(Debug, Default)]
struct Read {
    /// The file read (device, inode): another file in its place is read from its start.
    file: Option<(u64, u64)>,
    /// Where the next unread line starts.
    offset: u64,
    yeses: Vec<Yes>,
}

pub struct AuditHistory {
    path: PathBuf,
    read: Mutex<Read>,
}

impl AuditHistory {
    pub fn new(path: PathBuf) -> Self {
        Self {
            path,
            read: Mutex::default(),
        }
    }

    /// Reads the lines appended since the last read. A line still being written (no
    /// newline yet) is left for the next read.
    fn catch_up(&self, read: &mut Read) -> io::Result<()> {
        let mut file = File::open(&self.path)?;
        let meta = file.metadata()?;
        let id = (meta.dev(), meta.ino());
        if read.file != Some(id) || meta.len() < read.offset {
            *read = Read {
                file: Some(id),
                ..Read::default()
            };
        }
        file.seek(SeekFrom::Start(read.offset))?;
        let mut reader = BufReader::new(file);
        let mut line = Vec::new();
        loop {
            line.clear();
            let taken = reader.read_until(b'\n', &mut line)?;
            if taken == 0 || line.last() != Some(&b'\n') {
                return Ok(());
            }
            read.offset += taken as u64;
            if let Some(yes) = yes_of(&line) {
                read.yeses.push(yes);
            }
        }
    }
}

/// The person's yes `line` records, if it records one.
fn yes_of(line: &[u8]) -> Option<Yes> {
    let AuditLine::Entry(entry) = AuditLine::parse(line) else {
        return None;
    };
    let Some(AuditEvent::Approval {
        tool,
        arguments,
        ruling:
            Ruling {
                decision: Decision::Approved,
                decided_by: DecidedBy::Person { .. },
            },
        ..
    }) = entry.event()
    else {
        return None;
    };
    Some(Yes {
        tool: tool.clone(),
        arguments_sha256: tau_state::canonical_arguments(arguments).1,
        at: entry.time()?,
    })
}

impl tau_core::ApprovalHistory for AuditHistory {
    fn approved_at(&self, tool: &str, arguments_sha256: &str, since: Timestamp) -> Vec<Timestamp> {
        let mut read = self.read.lock().unwrap_or_else(PoisonError::into_inner);
        if let Err(error) = self.catch_up(&mut read) {
            // Unreadable history is no history.
            tracing::debug!(%error, "the audit log cannot be read for approvals");
            *read = Read::default();
        }
        read.yeses
            .iter()
            .filter(|y| y.at >= since && y.tool == tool && y.arguments_sha256 == arguments_sha256)
            .map(|y| y.at)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use serde_json::{Value, json};
    use tau_core::ApprovalHistory;

    use super::*;
    use crate::test_lines::{answered, approved, asked};

    fn append(path: &std::path::Path, text: &str) {
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .unwrap();
        file.write_all(text.as_bytes()).unwrap();
    }

    fn lines(values: &[Value]) -> String {
        values.iter().map(|v| format!("{v}\n")).collect()
    }

    fn at(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    #[test]
    fn the_history_finds_a_person_s_yes_to_exactly_this_call_since_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let since = at("2026-11-26T12:00:00Z");
        let mut other_arguments = approved("ap_5", "2026-12-02T10:00:00Z");
        other_arguments["arguments"] = json!({"command": "npm run test "});
        append(
            &path,
            &lines(&[
                approved("ap_0", "2026-11-20T10:00:00Z"),
                approved("ap_1", "2026-12-01T10:00:04Z"),
                asked("ap_2", "run_command", "2026-12-02T09:00:00Z"),
                approved("ap_2", "2026-12-02T10:00:02Z"),
                answered(
                    "ap_3",
                    "run_command",
                    "2026-12-02T11:00:00Z",
                    "approved",
                    "grant",
                ),
                answered(
                    "ap_4",
                    "run_command",
                    "2026-12-02T12:00:00Z",
                    "rejected",
                    "person",
                ),
                other_arguments,
                answered(
                    "ap_6",
                    "device_set",
                    "2026-12-02T13:00:00Z",
                    "approved",
                    "person",
                ),
            ]),
        );
        append(&path, "not json \"type\":\"approval\"\n");
        let sha = tau_state::canonical_arguments(&json!({"command": "npm run test"})).1;
        let history = AuditHistory::new(path);
        assert_eq!(
            history.approved_at("run_command", &sha, since),
            vec![at("2026-12-01T10:00:04Z"), at("2026-12-02T10:00:02Z")]
        );
    }

    #[test]
    fn lines_appended_later_are_read_and_a_half_written_one_once_it_is_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let since = at("2026-11-26T12:00:00Z");
        let sha = tau_state::canonical_arguments(&json!({"command": "npm run test"})).1;
        let history = AuditHistory::new(path.clone());
        // No log yet: no history.
        assert!(history.approved_at("run_command", &sha, since).is_empty());

        append(&path, &lines(&[approved("ap_1", "2026-12-01T10:00:00Z")]));
        let whole = approved("ap_2", "2026-12-02T10:00:00Z").to_string();
        let (first, rest) = whole.split_at(whole.len() / 2);
        append(&path, first);
        assert_eq!(
            history.approved_at("run_command", &sha, since),
            vec![at("2026-12-01T10:00:00Z")]
        );
        append(&path, &format!("{rest}\n"));
        assert_eq!(
            history.approved_at("run_command", &sha, since),
            vec![at("2026-12-01T10:00:00Z"), at("2026-12-02T10:00:00Z")]
        );
        // Each line counted once, however often it is asked.
        assert_eq!(history.approved_at("run_command", &sha, since).len(), 2);
    }

    #[test]
    fn another_file_in_the_log_s_place_is_read_from_its_start() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let since = at("2026-11-26T12:00:00Z");
        let sha = tau_state::canonical_arguments(&json!({"command": "npm run test"})).1;
        append(
            &path,
            &lines(&[
                approved("ap_1", "2026-12-01T10:00:00Z"),
                approved("ap_2", "2026-12-02T10:00:00Z"),
            ]),
        );
        let history = AuditHistory::new(path.clone());
        assert_eq!(history.approved_at("run_command", &sha, since).len(), 2);
        let replaced = dir.path().join("new.jsonl");
        append(
            &replaced,
            &lines(&[approved("ap_9", "2026-12-03T10:00:00Z")]),
        );
        std::fs::rename(&replaced, &path).unwrap();
        assert_eq!(
            history.approved_at("run_command", &sha, since),
            vec![at("2026-12-03T10:00:00Z")]
        );
        std::fs::remove_file(&path).unwrap();
        assert!(history.approved_at("run_command", &sha, since).is_empty());
    }
}
