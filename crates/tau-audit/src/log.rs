//! `audit.jsonl`: every agent event, one JSON object a line, appended and flushed as it
//! happens. Each line carries its number (`seq`) and the SHA-256 of the line before it
//! (`prev`), so `tau audit verify` finds the first line that was edited, dropped or moved;
//! the chain's head is also anchored in `state.db`, so a dropped tail, an edited last line
//! or an emptied file show too.
//!
//! Several processes append to one log (a `tau chat` per session, `tau mcp`, `tau serve`
//! with every conversation's lines tagged by its session): an append
//! holds an exclusive lock on the file while it writes the line, syncs it and then moves
//! the anchor. A process that dies between the two leaves the anchor exactly one line
//! behind; `verify` accepts that one line and says it is not anchored yet, and the next
//! append anchors it. Anything else that disagrees with the anchor is reported.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use tau_core::{AuditEvent, EventSubscriber};
use tau_state::AuditAnchor;

use crate::record::AuditLine;

pub(crate) use tau_state::AuditHead as Head;

/// The `prev` of the first line.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";
const TAIL_CHUNK: u64 = 4096;

pub fn line_hash(line: &[u8]) -> String {
    Sha256::digest(line)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The `state.db` beside the log at `path`, as a home has it (tests open it there).
#[cfg(test)]
pub(crate) fn anchor_db(path: &Path) -> PathBuf {
    path.with_file_name("state.db")
}

/// Appends events for one session; safe to share between threads and processes.
pub struct AuditLog {
    path: PathBuf,
    session: String,
    open: Mutex<Open>,
}

struct Open {
    file: File,
    anchor: AuditAnchor,
    /// What this process last wrote: the file's length after it, and the head. When the
    /// file still has that length under the lock, nobody else appended, and the tail need
    /// not be read again.
    last: Option<(u64, Head)>,
}

impl AuditLog {
    /// Opens (creating, 0600) the log at `path`, anchored in `anchor` (the home's
    /// `state.db`).
    pub fn open(path: &Path, session: &str, anchor: AuditAnchor) -> io::Result<Self> {
        let file = tau_home::private::open(
            path,
            OpenOptions::new().create(true).read(true).append(true),
        )?;
        Ok(Self {
            path: path.to_owned(),
            session: session.to_owned(),
            open: Mutex::new(Open {
                file,
                anchor,
                last: None,
            }),
        })
    }

    pub fn append(&self, event: &AuditEvent) -> io::Result<()> {
        self.append_as(&self.session, event)
    }

    /// Appends a line of `session` (a hub writes every conversation's events to one log).
    pub fn append_as(&self, session: &str, event: &AuditEvent) -> io::Result<()> {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let Open { file, anchor, last } = &mut *open;
        file.lock()?;
        let result = self.append_locked(file, anchor, last, session, event);
        if result.is_err() {
            *last = None;
        }
        let unlocked = file.unlock();
        result.and(unlocked)
    }

    fn append_locked(
        &self,
        file: &mut File,
        anchor: &AuditAnchor,
        last: &mut Option<(u64, Head)>,
        session: &str,
        event: &AuditEvent,
    ) -> io::Result<()> {
        let len = file.seek(SeekFrom::End(0))?;
        let ((seq, prev), ends_with_newline) = match last.as_ref() {
            // Nothing was appended since this process's own last line.
            Some((written, head)) if *written == len => ((head.seq + 1, head.hash.clone()), true),
            _ => {
                let (tail, ends_with_newline) = last_line(file)?;
                let head = anchor.audit_head().map_err(io::Error::other)?;
                let announced = anchor.audit_announced().map_err(io::Error::other)?;
                (
                    continue_from(head.as_ref(), announced.as_ref(), tail.as_deref()),
                    ends_with_newline,
                )
            }
        };
        let mut object = Map::new();
        object.insert("seq".into(), Value::from(seq));
        object.insert("at".into(), Value::from(jiff::Timestamp::now().to_string()));
        object.insert("session".into(), Value::from(session));
        object.insert("prev".into(), Value::from(prev));
        if let Ok(Value::Object(fields)) = serde_json::to_value(event) {
            object.extend(fields);
        }
        let body = serde_json::to_vec(&Value::Object(object))?;
        let mut line = if ends_with_newline {
            Vec::new()
        } else {
            b"\n".to_vec()
        };
        line.extend_from_slice(&body);
        line.push(b'\n');
        let head = Head {
            seq,
            hash: line_hash(&body),
        };
        // Announced before it is written: a line past the anchor that nobody announced was
        // not written by tau, and is never anchored (see `continue_from`).
        anchor
            .announce_audit_line(&head)
            .map_err(io::Error::other)?;
        // Written before the anchor moves past it: a killed process leaves the line in the
        // file (the kernel has it) and at most this one line unanchored. Syncing each line to
        // the disk as well would cost more than the rest of a tool call; a power loss can
        // cost the last lines, and `verify` then reports the cut.
        file.write_all(&line)?;
        if matches!(event, AuditEvent::TurnEnd { .. }) {
            // Once a turn, as the session store flushes: what the turn did is on the disk.
            file.sync_data()?;
        }
        if let AuditEvent::ToolCall {
            approval_id: Some(_),
            ..
        } = event
        {
            tau_core::failpoint::reach(tau_core::failpoint::AUDIT_LINE);
        }
        anchor.set_audit_head(&head).map_err(io::Error::other)?;
        *last = Some((len + line.len() as u64, head));
        Ok(())
    }
}

/// The `seq` and `prev` of the next line, from the anchored head, the line last announced
/// and the file's last line.
fn continue_from(
    head: Option<&Head>,
    announced: Option<&Head>,
    last: Option<&[u8]>,
) -> (u64, String) {
    let from_file = || match last {
        None => (1, GENESIS.to_owned()),
        Some(line) => (
            AuditLine::parse(line).seq().unwrap_or(0) + 1,
            line_hash(line),
        ),
    };
    // 1. nothing anchored yet: a new log, or one written before anchoring -> the file
    let Some(head) = head else {
        return from_file();
    };
    let last_read = last.map(AuditLine::parse);
    let last_seq = last_read.as_ref().and_then(AuditLine::seq);
    let last_hash = last.map(line_hash);
    // 2. the file ends at the anchor -> the file
    if last_seq == Some(head.seq) && last_hash.as_deref() == Some(head.hash.as_str()) {
        return from_file();
    }
    // 3. one line past the anchor that follows it and was announced: a process stopped
    //    between writing and anchoring -> the file
    let last_prev = last_read
        .as_ref()
        .and_then(|line| line.entry()?.prev.as_deref());
    let was_announced = announced
        .is_some_and(|a| Some(a.seq) == last_seq && Some(a.hash.as_str()) == last_hash.as_deref());
    if last_seq == Some(head.seq + 1) && last_prev == Some(head.hash.as_str()) && was_announced {
        return from_file();
    }
    // 4. anything else (lines dropped, edited, emptied, added, one line nobody announced):
    //    the anchor, so the gap stays in the chain for `verify` to find instead of being
    //    papered over
    tracing::warn!(
        anchored = head.seq,
        "the audit log does not end where state.db's anchor says; continuing from the anchor"
    );
    (head.seq + 1, head.hash.clone())
}

/// The last line's bytes (without its newline) and whether the file ends with a newline.
fn last_line(file: &mut File) -> io::Result<(Option<Vec<u8>>, bool)> {
    let len = file.seek(SeekFrom::End(0))?;
    if len == 0 {
        return Ok((None, true));
    }
    let mut tail = Vec::new();
    let mut start = len;
    loop {
        let step = TAIL_CHUNK.min(start);
        start -= step;
        file.seek(SeekFrom::Start(start))?;
        let mut chunk = vec![0; usize::try_from(step).unwrap_or(0)];
        file.read_exact(&mut chunk)?;
        chunk.extend_from_slice(&tail);
        tail = chunk;
        let body = tail.strip_suffix(b"\n").unwrap_or(&tail);
        if let Some(cut) = body.iter().rposition(|b| *b == b'\n') {
            let ends = tail.ends_with(b"\n");
            return Ok((body.get(cut + 1..).map(<[u8]>::to_vec), ends));
        }
        if start == 0 {
            let ends = tail.ends_with(b"\n");
            return Ok((Some(body.to_vec()), ends));
        }
    }
}

/// One session's events on a shared log: what a hub subscribes for each conversation.
pub struct SessionAudit {
    pub log: std::sync::Arc<AuditLog>,
    pub session: String,
}

impl EventSubscriber for SessionAudit {
    fn on_event(&self, event: &AuditEvent) {
        if let Err(error) = self.log.append_as(&self.session, event) {
            tracing::error!(path = %self.log.path.display(), %error, "cannot append to the audit log");
        }
    }
}

impl EventSubscriber for AuditLog {
    fn on_event(&self, event: &AuditEvent) {
        if let Err(error) = self.append(event) {
            tracing::error!(path = %self.path.display(), %error, "cannot append to the audit log");
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::verdict::Verdict;
    use crate::verify::verify;
    use pretty_assertions::assert_eq;

    /// The `state.db` beside the log, with a connection of its own (as another process).
    pub(crate) fn state_beside(path: &Path) -> tau_state::StateDb {
        tau_state::StateDb::open(&anchor_db(path)).unwrap()
    }

    fn write_events(path: &Path, n: u32) {
        let log = AuditLog::open(path, "s", state_beside(path).audit_anchor()).unwrap();
        for max_turns in 0..n {
            log.append(&AuditEvent::TurnLimit { max_turns }).unwrap();
        }
    }

    fn lines(path: &Path) -> Vec<String> {
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    fn head(path: &Path) -> Option<Head> {
        state_beside(path).audit_anchor().audit_head().unwrap()
    }

    #[test]
    fn each_line_chains_to_the_one_before_and_the_last_is_anchored() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        write_events(&path, 3);
        // A second writer continues the same chain.
        write_events(&path, 1);
        let all = lines(&path);
        assert_eq!(all.len(), 4);
        let first: Value = serde_json::from_str(&all[0]).unwrap();
        assert_eq!(
            (
                first["seq"].as_u64(),
                first["prev"].as_str(),
                first["type"].as_str()
            ),
            (Some(1), Some(GENESIS), Some("turn_limit"))
        );
        let fourth: Value = serde_json::from_str(&all[3]).unwrap();
        assert_eq!(
            fourth["prev"].as_str().unwrap(),
            line_hash(all[2].as_bytes())
        );
        assert_eq!(
            head(&path),
            Some(Head {
                seq: 4,
                hash: line_hash(all[3].as_bytes())
            })
        );
        assert_eq!(
            verify(&path, Some(&state_beside(&path))).unwrap(),
            Verdict::Intact { lines: 4 }
        );
    }

    #[test]
    fn writers_with_their_own_handles_never_interleave_or_fork_the_chain() {
        // Each writer opens the log and the database itself, as separate processes do;
        // the file lock is per open file, so threads stand in for processes here.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        std::thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(|| write_events(&path, 25));
            }
        });
        assert_eq!(
            verify(&path, Some(&state_beside(&path))).unwrap(),
            Verdict::Intact { lines: 100 }
        );
    }

    #[test]
    fn where_the_next_line_continues_from() {
        let line = |seq: u64, prev: &str| format!(r#"{{"seq":{seq},"prev":"{prev}"}}"#);
        let l3 = line(3, "h2");
        let h3 = line_hash(l3.as_bytes());
        let l4 = line(4, &h3);
        let forged = format!(r#"{{"seq":4,"prev":"{h3}","forged":true}}"#);
        let anchored = |seq: u64, hash: &str| Head {
            seq,
            hash: hash.to_owned(),
        };
        // (what, the anchored head, the file's last line, the next seq and prev); the line
        // announced last is always l4.
        type Case<'a> = (&'a str, Option<Head>, Option<&'a str>, (u64, String));
        let cases: Vec<Case<'_>> = vec![
            ("a new log", None, None, (1, GENESIS.to_owned())),
            (
                "a log from before anchoring",
                None,
                Some(&l3),
                (4, h3.clone()),
            ),
            (
                "at the anchor",
                Some(anchored(3, &h3)),
                Some(&l3),
                (4, h3.clone()),
            ),
            (
                "one line past it",
                Some(anchored(3, &h3)),
                Some(&l4),
                (5, line_hash(l4.as_bytes())),
            ),
            ("emptied", Some(anchored(3, &h3)), None, (4, h3.clone())),
            (
                "tail dropped",
                Some(anchored(9, "h9")),
                Some(&l3),
                (10, "h9".to_owned()),
            ),
            (
                "last line edited",
                Some(anchored(3, "other")),
                Some(&l3),
                (4, "other".to_owned()),
            ),
            (
                "a cut line",
                Some(anchored(3, &h3)),
                Some("{\"seq\":4,"),
                (4, h3.clone()),
            ),
            (
                "one line past it that nobody announced",
                Some(anchored(3, &h3)),
                Some(&forged),
                (4, h3.clone()),
            ),
        ];
        let announced = anchored(4, &line_hash(l4.as_bytes()));
        for (what, head, last, expected) in cases {
            assert_eq!(
                continue_from(head.as_ref(), Some(&announced), last.map(str::as_bytes)),
                expected,
                "{what}"
            );
        }
    }

    #[test]
    fn the_log_and_state_db_are_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        write_events(&path, 1);
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!((mode(&path), mode(&anchor_db(&path))), (0o600, 0o600));
    }
}
