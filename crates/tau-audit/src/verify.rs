//! `tau audit verify`: the chain line by line, then its end against the anchor, and with
//! `--from SEQ:HASH` against a head kept elsewhere.
//!
//! The rule: every line up to the anchored one must chain and the anchored one must hash
//! to the anchor; at most one line may follow it (written by a process that stopped
//! before anchoring it), and only when it was announced in `state.db` before it was
//! written; it is reported as not anchored. A log shorter than the anchor, a last line
//! that is not the anchored one, a line nobody announced or a log without an anchor is
//! never called intact. A head kept elsewhere must be in the log: entry SEQ is there and
//! hashes to HASH, so nothing up to it was cut, edited or recomputed, whatever `state.db`
//! says now.

use std::fs::File;
use std::io::{self, BufReader, ErrorKind};
use std::path::Path;

use tau_state::StateDb;

use crate::log::{GENESIS, Head, line_hash};
use crate::record::{AuditLine, Lines};
use crate::verdict::{Broken, Verdict};

/// Checks the log at `path` against the anchor in `state` (the home's `state.db`; `None`
/// when there is none). Holds a shared lock on the log, so no append is half done while it
/// reads.
pub fn verify(path: &Path, state: Option<&StateDb>) -> io::Result<Verdict> {
    verify_from(path, state, None)
}

/// [`verify`], and first that the log holds `kept` (a head kept elsewhere): its entry
/// `kept.seq` is there and hashes to `kept.hash`. The genesis head (`0:000…`) is in every
/// log.
pub fn verify_from(
    path: &Path,
    state: Option<&StateDb>,
    kept: Option<&Head>,
) -> io::Result<Verdict> {
    let file = match File::open(path) {
        Ok(file) => Some(file),
        Err(error) if error.kind() == ErrorKind::NotFound => None,
        Err(error) => return Err(error),
    };
    if let Some(file) = &file {
        file.lock_shared()?;
    }
    let (head, announced) = read_head(state)?;
    // The genesis head is in every log; any other entry 0 is in none.
    if let Some(kept) = kept.filter(|k| k.seq == 0 && k.hash != GENESIS) {
        return Ok(Verdict::NotKeptHead { kept: kept.seq });
    }
    let kept = kept.filter(|k| k.seq > 0);
    let Some(file) = file else {
        return Ok(match (kept, head) {
            (Some(kept), _) => Verdict::BeforeKeptHead {
                lines: 0,
                kept: kept.seq,
            },
            (None, Some(head)) => Verdict::Missing { anchored: head.seq },
            (None, None) => Verdict::NoLog,
        });
    };
    let at = [head.as_ref().map(|h| h.seq), kept.map(|k| k.seq)];
    let chain = match walk(&file, at)? {
        Ok(chain) => chain,
        Err(broken) => return Ok(broken),
    };
    // A head kept elsewhere comes first: a restored state.db agrees with a cut log.
    if let Some(kept) = kept {
        if chain.lines < kept.seq {
            return Ok(Verdict::BeforeKeptHead {
                lines: chain.lines,
                kept: kept.seq,
            });
        }
        if chain.hash_at(kept.seq) != Some(kept.hash.as_str()) {
            return Ok(Verdict::NotKeptHead { kept: kept.seq });
        }
    }
    Ok(judge(&chain, head.as_ref(), announced.as_ref()))
}

/// The anchored head and the line announced last.
fn read_head(state: Option<&StateDb>) -> io::Result<(Option<Head>, Option<Head>)> {
    match state {
        Some(state) => Ok((
            state
                .audit_anchor()
                .audit_head()
                .map_err(io::Error::other)?,
            state
                .audit_anchor()
                .audit_announced()
                .map_err(io::Error::other)?,
        )),
        None => Ok((None, None)),
    }
}

/// What the walk saw of a chain that held.
struct Chain {
    lines: u64,
    /// The hashes of the lines asked for (the anchored one, the kept head), when there.
    hashes: Vec<(u64, String)>,
    /// The hash of the last line.
    last: Option<String>,
}

impl Chain {
    fn hash_at(&self, seq: u64) -> Option<&str> {
        self.hashes
            .iter()
            .find(|(at, _)| *at == seq)
            .map(|(_, hash)| hash.as_str())
    }
}

/// Walks the chain, keeping the hashes of the lines numbered in `at`; `Err` is the first
/// broken line.
fn walk(file: &File, at: [Option<u64>; 2]) -> io::Result<Result<Chain, Verdict>> {
    let mut prev_hash = GENESIS.to_owned();
    let mut lines = 0u64;
    let mut hashes = Vec::new();
    for (index, line) in Lines::new(BufReader::new(file)).enumerate() {
        let (line, read) = line?;
        let number = index as u64 + 1;
        lines = number;
        let broken = |reason: Broken| {
            Ok(Err(Verdict::Broken {
                line: number,
                reason,
            }))
        };
        let AuditLine::Entry(entry) = read else {
            return broken(Broken::NotAnObject);
        };
        if entry.seq != Some(number) {
            return broken(Broken::OutOfOrder {
                expected: number,
                found: entry.seq,
            });
        }
        if entry.prev.as_deref() != Some(prev_hash.as_str()) {
            return broken(if number == 1 {
                Broken::FirstDoesNotStart
            } else {
                Broken::DoesNotFollow {
                    previous: number - 1,
                }
            });
        }
        prev_hash = line_hash(&line);
        if at.contains(&Some(number)) {
            hashes.push((number, prev_hash.clone()));
        }
    }
    let last = (lines > 0).then_some(prev_hash);
    Ok(Ok(Chain {
        lines,
        hashes,
        last,
    }))
}

/// The end of a chain that held, against the anchor and the line announced last.
fn judge(chain: &Chain, head: Option<&Head>, announced: Option<&Head>) -> Verdict {
    let lines = chain.lines;
    // 1. no anchor: an empty log is intact, any other cannot be vouched for
    let Some(head) = head else {
        return if lines == 0 {
            Verdict::Intact { lines }
        } else {
            Verdict::Unanchored { lines }
        };
    };
    // 2. shorter than the anchor: its end was dropped (or all of it)
    if lines < head.seq {
        return Verdict::Dropped {
            lines,
            anchored: head.seq,
        };
    }
    // 3. the anchored line is not the one anchored: edited
    if chain.hash_at(head.seq) != Some(head.hash.as_str()) {
        return Verdict::Broken {
            line: head.seq,
            reason: Broken::NotTheAnchored { anchored: head.seq },
        };
    }
    // 4. it ends at the anchor, or one announced line after it (a process stopped before
    //    anchoring); a line after it that nobody announced was written by someone else
    let was_announced =
        announced.is_some_and(|a| a.seq == lines && Some(a.hash.as_str()) == chain.last.as_deref());
    match lines - head.seq {
        0 => Verdict::Intact { lines },
        1 if was_announced => Verdict::IntactLastNotAnchored { lines },
        1 => Verdict::Unannounced { line: lines },
        _ => Verdict::Added {
            lines,
            anchored: head.seq,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::{AuditLog, anchor_db};
    use pretty_assertions::assert_eq;
    use serde_json::Value;
    use std::path::PathBuf;
    use tau_core::AuditEvent;

    fn log() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        (dir, path)
    }

    fn write_events(path: &Path, n: u32) {
        let log = AuditLog::open(path, "s", anchor(path).audit_anchor()).unwrap();
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

    fn anchor(path: &Path) -> StateDb {
        StateDb::open(&anchor_db(path)).unwrap()
    }

    /// `tau audit verify` as the command runs it: the home's `state.db` if there is one.
    fn verify(path: &Path) -> io::Result<Verdict> {
        super::verify(
            path,
            StateDb::open_existing(&anchor_db(path)).unwrap().as_ref(),
        )
    }

    fn verify_from(path: &Path, kept: Option<&Head>) -> io::Result<Verdict> {
        super::verify_from(
            path,
            StateDb::open_existing(&anchor_db(path)).unwrap().as_ref(),
            kept,
        )
    }

    #[test]
    fn an_edited_line_is_found() {
        let (_dir, path) = log();
        write_events(&path, 4);
        let mut all = lines(&path);
        all[1] = all[1].replace("\"max_turns\":1", "\"max_turns\":9");
        rewrite(&path, &all);
        assert_eq!(
            verify(&path).unwrap(),
            Verdict::Broken {
                line: 3,
                reason: Broken::DoesNotFollow { previous: 2 }
            }
        );
    }

    #[test]
    fn a_dropped_or_reordered_line_is_found() {
        let (_dir, path) = log();
        write_events(&path, 4);
        let mut all = lines(&path);
        all.remove(1);
        rewrite(&path, &all);
        assert_eq!(
            verify(&path).unwrap(),
            Verdict::Broken {
                line: 2,
                reason: Broken::OutOfOrder {
                    expected: 2,
                    found: Some(3)
                }
            }
        );
        let mut all = lines(&path);
        all.swap(0, 1);
        rewrite(&path, &all);
        assert_eq!(
            verify(&path).unwrap(),
            Verdict::Broken {
                line: 1,
                reason: Broken::OutOfOrder {
                    expected: 1,
                    found: Some(3)
                }
            }
        );
    }

    #[test]
    fn a_cut_last_line_is_found_and_appending_after_it_starts_a_new_line() {
        let (_dir, path) = log();
        write_events(&path, 2);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, &text[..text.len() - 10]).unwrap();
        assert_eq!(
            verify(&path).unwrap(),
            Verdict::Broken {
                line: 2,
                reason: Broken::NotAnObject
            }
        );
        write_events(&path, 1);
        assert_eq!(lines(&path).len(), 3);
        assert_eq!(
            verify(&path).unwrap(),
            Verdict::Broken {
                line: 2,
                reason: Broken::NotAnObject
            }
        );
    }

    #[test]
    fn the_end_of_the_log_is_checked_against_the_anchor() {
        let (_dir, path) = log();
        assert_eq!(verify(&path).unwrap(), Verdict::NoLog);
        write_events(&path, 4);
        assert_eq!(verify(&path).unwrap(), Verdict::Intact { lines: 4 });
        let all = lines(&path);

        rewrite(&path, &all[..3]);
        assert_eq!(
            verify(&path).unwrap(),
            Verdict::Dropped {
                lines: 3,
                anchored: 4
            }
        );
        std::fs::write(&path, "").unwrap();
        assert_eq!(
            verify(&path).unwrap(),
            Verdict::Dropped {
                lines: 0,
                anchored: 4
            }
        );
        let mut edited = all.clone();
        edited[3] = edited[3].replace("\"max_turns\":3", "\"max_turns\":0");
        rewrite(&path, &edited);
        assert_eq!(
            verify(&path).unwrap(),
            Verdict::Broken {
                line: 4,
                reason: Broken::NotTheAnchored { anchored: 4 }
            }
        );
        std::fs::remove_file(&path).unwrap();
        assert_eq!(verify(&path).unwrap(), Verdict::Missing { anchored: 4 });
    }

    #[test]
    fn one_line_past_the_anchor_is_a_stop_before_anchoring_and_the_next_append_anchors_it() {
        let (_dir, path) = log();
        write_events(&path, 3);
        let behind = anchor(&path).audit_anchor().audit_head().unwrap().unwrap();
        write_events(&path, 1);
        // The process stopped after writing line 4 and before anchoring it.
        anchor(&path)
            .audit_anchor()
            .set_audit_head(&behind)
            .unwrap();
        assert_eq!(
            verify(&path).unwrap(),
            Verdict::IntactLastNotAnchored { lines: 4 }
        );
        write_events(&path, 1);
        assert_eq!(verify(&path).unwrap(), Verdict::Intact { lines: 5 });

        // Two lines past it are not a stopped process; an edited anchored line never passes.
        let behind = anchor(&path).audit_anchor().audit_head().unwrap().unwrap();
        write_events(&path, 2);
        anchor(&path)
            .audit_anchor()
            .set_audit_head(&behind)
            .unwrap();
        assert_eq!(
            verify(&path).unwrap(),
            Verdict::Added {
                lines: 7,
                anchored: 5
            }
        );
        let mut all = lines(&path);
        all.truncate(5);
        all[4] = all[4].replace("\"max_turns\":0", "\"max_turns\":7");
        rewrite(&path, &all);
        assert_eq!(
            verify(&path).unwrap(),
            Verdict::Broken {
                line: 5,
                reason: Broken::NotTheAnchored { anchored: 5 }
            }
        );
    }

    #[test]
    fn a_log_without_an_anchor_is_not_vouched_for() {
        let (_dir, path) = log();
        write_events(&path, 2);
        std::fs::remove_file(anchor_db(&path)).unwrap();
        assert_eq!(verify(&path).unwrap(), Verdict::Unanchored { lines: 2 });
        std::fs::write(&path, "").unwrap();
        assert_eq!(verify(&path).unwrap(), Verdict::Intact { lines: 0 });
        assert!(!anchor_db(&path).exists(), "verify creates nothing");
    }

    /// Recomputes `seq` and `prev` of every line, as someone who rewrites the log does.
    fn rechain(lines: &[String]) -> Vec<String> {
        let mut prev = GENESIS.to_owned();
        let mut out = Vec::new();
        for (i, line) in lines.iter().enumerate() {
            let mut value: Value = serde_json::from_str(line).unwrap();
            value["seq"] = Value::from(i as u64 + 1);
            value["prev"] = Value::from(prev.clone());
            let text = value.to_string();
            prev = line_hash(text.as_bytes());
            out.push(text);
        }
        out
    }

    fn head_of(path: &Path) -> Head {
        anchor(path).audit_anchor().audit_head().unwrap().unwrap()
    }

    #[test]
    fn a_line_nobody_announced_is_never_anchored() {
        let (_dir, path) = log();
        write_events(&path, 3);
        let mut all = lines(&path);
        let forged = rechain(
            &[
                all.clone(),
                vec![r#"{"type":"tool_call","forged":true}"#.to_owned()],
            ]
            .concat(),
        );
        all.push(forged[3].clone());
        rewrite(&path, &all);
        assert_eq!(verify(&path).unwrap(), Verdict::Unannounced { line: 4 });
        // The next append goes on from the anchor: the forged line stays visible.
        write_events(&path, 1);
        assert_eq!(
            verify(&path).unwrap(),
            Verdict::Broken {
                line: 5,
                reason: Broken::OutOfOrder {
                    expected: 5,
                    found: Some(4)
                }
            }
        );
    }

    #[test]
    fn a_head_kept_elsewhere_catches_a_cut_log_with_its_anchor_restored() {
        let (_dir, path) = log();
        write_events(&path, 3);
        let old = head_of(&path);
        write_events(&path, 3);
        let kept = head_of(&path);
        assert_eq!(
            verify_from(&path, Some(&kept)).unwrap(),
            Verdict::Intact { lines: 6 }
        );
        assert_eq!(
            verify_from(&path, Some(&old)).unwrap(),
            Verdict::Intact { lines: 6 }
        );
        // Cut back to 3 lines, and state.db's anchor set back to match them.
        rewrite(&path, &lines(&path)[..3]);
        anchor(&path).audit_anchor().set_audit_head(&old).unwrap();
        anchor(&path)
            .audit_anchor()
            .announce_audit_line(&old)
            .unwrap();
        assert_eq!(verify(&path).unwrap(), Verdict::Intact { lines: 3 });
        assert_eq!(
            verify_from(&path, Some(&kept)).unwrap(),
            Verdict::BeforeKeptHead { lines: 3, kept: 6 }
        );
        std::fs::remove_file(&path).unwrap();
        assert_eq!(
            verify_from(&path, Some(&kept)).unwrap(),
            Verdict::BeforeKeptHead { lines: 0, kept: 6 }
        );
    }

    #[test]
    fn a_head_kept_elsewhere_catches_a_recomputed_chain() {
        let (_dir, path) = log();
        write_events(&path, 4);
        let kept = head_of(&path);
        let mut all = lines(&path);
        all[1] = all[1].replace("\"max_turns\":1", "\"max_turns\":9");
        let all = rechain(&all);
        rewrite(&path, &all);
        let head = Head {
            seq: 4,
            hash: line_hash(all[3].as_bytes()),
        };
        anchor(&path).audit_anchor().set_audit_head(&head).unwrap();
        anchor(&path)
            .audit_anchor()
            .announce_audit_line(&head)
            .unwrap();
        assert_eq!(verify(&path).unwrap(), Verdict::Intact { lines: 4 });
        assert_eq!(
            verify_from(&path, Some(&kept)).unwrap(),
            Verdict::NotKeptHead { kept: 4 }
        );
        // The genesis head is in every log.
        let genesis = Head {
            seq: 0,
            hash: GENESIS.to_owned(),
        };
        assert_eq!(
            verify_from(&path, Some(&genesis)).unwrap(),
            Verdict::Intact { lines: 4 }
        );
        let not_genesis = Head {
            seq: 0,
            hash: "ab".repeat(32),
        };
        assert_eq!(
            verify_from(&path, Some(&not_genesis)).unwrap(),
            Verdict::NotKeptHead { kept: 0 }
        );
    }
}
