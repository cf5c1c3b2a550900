//! `audit.jsonl`: every agent event, one JSON object a line, appended and flushed as it
//! happens. Each line carries its number (`seq`) and the SHA-256 of the line before it
//! (`prev`), so `tau audit verify` finds the first line that was edited, dropped or moved.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use tau_core::{AuditEvent, EventSubscriber};

/// The `prev` of the first line.
pub(crate) const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";
const TAIL_CHUNK: u64 = 4096;

pub(crate) fn line_hash(line: &[u8]) -> String {
    Sha256::digest(line)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Appends events for one session; safe to share between processes (each append holds
/// an exclusive lock on the file).
pub(crate) struct AuditLog {
    path: PathBuf,
    session: String,
    file: Mutex<File>,
}

impl AuditLog {
    pub(crate) fn open(path: &Path, session: &str) -> std::io::Result<Self> {
        let file = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(path)?;
        Ok(Self {
            path: path.to_owned(),
            session: session.to_owned(),
            file: Mutex::new(file),
        })
    }

    pub(crate) fn append(&self, event: &AuditEvent) -> std::io::Result<()> {
        let mut file = self.file.lock().unwrap_or_else(PoisonError::into_inner);
        file.lock()?;
        let result = append_locked(&mut file, &self.session, event);
        let unlocked = file.unlock();
        result.and(unlocked)
    }
}

fn append_locked(file: &mut File, session: &str, event: &AuditEvent) -> std::io::Result<()> {
    let (last, ends_with_newline) = last_line(file)?;
    let (seq, prev) = match &last {
        None => (1, GENESIS.to_owned()),
        Some(line) => {
            let seq = serde_json::from_slice::<Value>(line)
                .ok()
                .and_then(|v| v.get("seq")?.as_u64())
                .unwrap_or(0);
            (seq + 1, line_hash(line))
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
    let mut line = if ends_with_newline {
        Vec::new()
    } else {
        b"\n".to_vec()
    };
    line.extend(serde_json::to_vec(&Value::Object(object))?);
    line.push(b'\n');
    file.write_all(&line)?;
    file.flush()
}

/// The last line's bytes (without its newline) and whether the file ends with a newline.
fn last_line(file: &mut File) -> std::io::Result<(Option<Vec<u8>>, bool)> {
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

impl EventSubscriber for AuditLog {
    fn on_event(&self, event: &AuditEvent) {
        if let Err(error) = self.append(event) {
            tracing::error!(path = %self.path.display(), %error, "cannot append to the audit log");
        }
    }
}

/// What `tau audit verify` found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    Intact { lines: u64 },
    Broken { line: u64, reason: String },
}

pub(crate) fn verify(path: &Path) -> std::io::Result<Verdict> {
    let reader = BufReader::new(File::open(path)?);
    let mut prev_hash = GENESIS.to_owned();
    let mut count = 0u64;
    for (index, line) in reader.split(b'\n').enumerate() {
        let line = line?;
        let number = index as u64 + 1;
        count = number;
        let Ok(Value::Object(object)) = serde_json::from_slice::<Value>(&line) else {
            return Ok(Verdict::Broken {
                line: number,
                reason: "not a JSON object: the line was edited or cut".into(),
            });
        };
        let seq = object.get("seq").and_then(Value::as_u64);
        if seq != Some(number) {
            let found = seq.map_or_else(|| "none".to_owned(), |s| s.to_string());
            return Ok(Verdict::Broken {
                line: number,
                reason: format!(
                    "expected entry {number}, found entry {found}: lines were dropped or reordered"
                ),
            });
        }
        if object.get("prev").and_then(Value::as_str) != Some(prev_hash.as_str()) {
            let reason = if number == 1 {
                "the first line does not start the chain: lines were dropped before it or it was edited".to_owned()
            } else {
                format!(
                    "it does not follow line {}: line {} was edited",
                    number - 1,
                    number - 1
                )
            };
            return Ok(Verdict::Broken {
                line: number,
                reason,
            });
        }
        prev_hash = line_hash(&line);
    }
    Ok(Verdict::Intact { lines: count })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn write_events(path: &Path, n: u32) {
        let log = AuditLog::open(path, "s").unwrap();
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

    fn rewrite(path: &Path, lines: &[String]) {
        std::fs::write(
            path,
            lines.iter().map(|l| format!("{l}\n")).collect::<String>(),
        )
        .unwrap();
    }

    #[test]
    fn each_line_chains_to_the_one_before() {
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
        assert_eq!(verify(&path).unwrap(), Verdict::Intact { lines: 4 });
    }

    #[test]
    fn an_edited_line_is_found() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        write_events(&path, 4);
        let mut all = lines(&path);
        all[1] = all[1].replace("\"max_turns\":1", "\"max_turns\":9");
        rewrite(&path, &all);
        assert_eq!(
            verify(&path).unwrap(),
            Verdict::Broken {
                line: 3,
                reason: "it does not follow line 2: line 2 was edited".into()
            }
        );
    }

    #[test]
    fn a_dropped_or_reordered_line_is_found() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        write_events(&path, 4);
        let mut all = lines(&path);
        all.remove(1);
        rewrite(&path, &all);
        assert_eq!(
            verify(&path).unwrap(),
            Verdict::Broken {
                line: 2,
                reason: "expected entry 2, found entry 3: lines were dropped or reordered".into()
            }
        );
        let mut all = lines(&path);
        all.swap(0, 1);
        rewrite(&path, &all);
        assert_eq!(
            verify(&path).unwrap(),
            Verdict::Broken {
                line: 1,
                reason: "expected entry 1, found entry 3: lines were dropped or reordered".into()
            }
        );
    }

    #[test]
    fn a_cut_last_line_is_found_and_appending_after_it_starts_a_new_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        write_events(&path, 2);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, &text[..text.len() - 10]).unwrap();
        assert_eq!(
            verify(&path).unwrap(),
            Verdict::Broken {
                line: 2,
                reason: "not a JSON object: the line was edited or cut".into()
            }
        );
        write_events(&path, 1);
        assert_eq!(lines(&path).len(), 3);
    }
}
