//! The one reader of `audit.jsonl`: a line parses into an [`AuditLine`], and everything
//! that reads the log (verify, the copy up to a head, grants, a person's approvals, the
//! recorded answers, grant stats, TauBar's decisions) folds over those. Nothing else looks
//! at the bytes of a line or at its `type`.
//!
//! A line is the chain's fields the writer adds (`seq`, `at`, `session`, `prev`) with the
//! event's own fields beside them in one object. An event this build does not know (a
//! newer tau's, or one written behind tau's back) is still a chained line: it reads as
//! [`Event::Unknown`], so verify walks past it and no consumer takes it for another.

use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::Path;

use jiff::Timestamp;
use serde_json::Value;
use tau_core::AuditEvent;

/// One line of the log, read.
#[derive(Debug, Clone, PartialEq)]
pub enum AuditLine {
    /// A JSON object: a line of the chain (whether or not it chains).
    Entry(Entry),
    /// Not a JSON object: edited or cut.
    Damaged,
}

/// A line that is a JSON object: the chain's fields and the event.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The line's number in the chain; `None` when it has none (or not a number).
    pub seq: Option<u64>,
    /// The hash of the line before it, as the line says.
    pub prev: Option<String>,
    /// When it was written (RFC 3339), as the line says.
    pub at: Option<String>,
    /// The conversation it belongs to. A grant's use names its own session, and that is
    /// the one the line keeps.
    pub session: Option<String>,
    pub event: Event,
}

/// What a line records.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    Known(Box<AuditEvent>),
    /// A line kind this build does not read (or a known kind whose fields do not read):
    /// its `type` when it has a text one.
    Unknown {
        kind: Option<String>,
    },
}

impl AuditLine {
    /// Reads one line (without its newline).
    pub fn parse(line: &[u8]) -> Self {
        let Ok(Value::Object(object)) = serde_json::from_slice::<Value>(line) else {
            return Self::Damaged;
        };
        // The chain's fields, read leniently: a field of the wrong type is a missing one.
        let text = |key: &str| object.get(key).and_then(Value::as_str).map(str::to_owned);
        let (seq, prev, at, session) = (
            object.get("seq").and_then(Value::as_u64),
            text("prev"),
            text("at"),
            text("session"),
        );
        let kind = text("type");
        let event = match serde_json::from_value::<AuditEvent>(Value::Object(object)) {
            Ok(event) => Event::Known(Box::new(event)),
            Err(_) => Event::Unknown { kind },
        };
        Self::Entry(Entry {
            seq,
            prev,
            at,
            session,
            event,
        })
    }

    /// The line's entry, when it is one.
    pub fn entry(&self) -> Option<&Entry> {
        match self {
            Self::Entry(entry) => Some(entry),
            Self::Damaged => None,
        }
    }

    /// The entry's `seq`, when the line has one.
    pub fn seq(&self) -> Option<u64> {
        self.entry().and_then(|entry| entry.seq)
    }
}

impl Entry {
    /// The event, when this build knows its kind.
    pub fn event(&self) -> Option<&AuditEvent> {
        match &self.event {
            Event::Known(event) => Some(event),
            Event::Unknown { .. } => None,
        }
    }

    /// When it was written, when the line says so in a form that reads.
    pub fn time(&self) -> Option<Timestamp> {
        self.at.as_deref()?.parse().ok()
    }
}

/// The lines of a log, in order: each line's bytes (for hashing) and what it reads as.
pub struct Lines<R> {
    inner: io::Split<R>,
}

impl<R: BufRead> Lines<R> {
    pub fn new(reader: R) -> Self {
        Self {
            inner: reader.split(b'\n'),
        }
    }
}

impl<R: BufRead> Iterator for Lines<R> {
    type Item = io::Result<(Vec<u8>, AuditLine)>;

    fn next(&mut self) -> Option<Self::Item> {
        let line = self.inner.next()?;
        Some(line.map(|bytes| {
            let read = AuditLine::parse(&bytes);
            (bytes, read)
        }))
    }
}

/// The lines of the log at `path`; `None` when there is no log.
pub fn open_lines(path: &Path) -> io::Result<Option<Lines<BufReader<File>>>> {
    match File::open(path) {
        Ok(file) => Ok(Some(Lines::new(BufReader::new(file)))),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(error),
    }
}

/// Folds every entry of the known kinds in the log at `path` into `fold`; damaged and
/// unknown lines take no part. No log is no entries.
pub fn fold_events(path: &Path, mut fold: impl FnMut(&Entry, &AuditEvent)) -> io::Result<()> {
    let Some(lines) = open_lines(path)? else {
        return Ok(());
    };
    fold_lines(lines, |entry, event| fold(entry, event))
}

/// [`fold_events`] over `lines` already open.
pub fn fold_lines<R: BufRead>(
    lines: Lines<R>,
    mut fold: impl FnMut(&Entry, &AuditEvent),
) -> io::Result<()> {
    for line in lines {
        let (_, line) = line?;
        if let AuditLine::Entry(entry) = &line
            && let Event::Known(event) = &entry.event
        {
            fold(entry, event);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn a_line_reads_as_its_chain_fields_and_its_event() {
        let line = br#"{"seq":3,"at":"2026-12-01T10:00:00Z","session":"s","prev":"ab","type":"turn_limit","max_turns":4}"#;
        assert_eq!(
            AuditLine::parse(line),
            AuditLine::Entry(Entry {
                seq: Some(3),
                prev: Some("ab".into()),
                at: Some("2026-12-01T10:00:00Z".into()),
                session: Some("s".into()),
                event: Event::Known(Box::new(AuditEvent::TurnLimit { max_turns: 4 })),
            })
        );
    }

    #[test]
    fn unknown_kinds_wrong_fields_and_damaged_lines_are_told_apart() {
        let unknown = AuditLine::parse(br#"{"seq":1,"type":"from_the_future","x":1}"#);
        assert_eq!(
            unknown.entry().map(|e| e.event.clone()),
            Some(Event::Unknown {
                kind: Some("from_the_future".into())
            })
        );
        // A known kind missing its fields is not taken for that kind.
        let partial = AuditLine::parse(br#"{"seq":"two","type":"approval","tool":"x"}"#);
        assert_eq!(partial.seq(), None);
        assert_eq!(
            partial.entry().map(|e| e.event.clone()),
            Some(Event::Unknown {
                kind: Some("approval".into())
            })
        );
        for damaged in [&b"{\"seq\":4,"[..], b"[1,2]", b"", b"not json"] {
            assert_eq!(AuditLine::parse(damaged), AuditLine::Damaged);
        }
    }
}
