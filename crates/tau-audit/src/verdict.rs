//! What `tau audit verify` finds, and why a line breaks the chain: typed, and said in
//! words by `report.rs`.

use std::fmt;

/// What `tau audit verify` found.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// No log and no anchor: nothing was ever written.
    NoLog,
    Intact {
        lines: u64,
    },
    /// Intact up to the anchor, and one line after it that is not anchored yet.
    IntactLastNotAnchored {
        lines: u64,
    },
    /// The chain holds, but nothing anchors its end.
    Unanchored {
        lines: u64,
    },
    Broken {
        line: u64,
        reason: Broken,
    },
    /// The log ends at `lines` (0: it is empty), the anchor at entry `anchored`.
    Dropped {
        lines: u64,
        anchored: u64,
    },
    /// More than one line after the anchored one.
    Added {
        lines: u64,
        anchored: u64,
    },
    /// The file is gone, the anchor says entry `anchored` was written.
    Missing {
        anchored: u64,
    },
    /// One line past the anchored one that no tau process announced.
    Unannounced {
        line: u64,
    },
    /// The log ends at `lines`, before the head kept elsewhere (`kept`).
    BeforeKeptHead {
        lines: u64,
        kept: u64,
    },
    /// Entry `kept` is not the one the head kept elsewhere names.
    NotKeptHead {
        kept: u64,
    },
}

impl Verdict {
    /// Whether it vouches for the log.
    pub fn intact(&self) -> bool {
        match self {
            Verdict::NoLog | Verdict::Intact { .. } | Verdict::IntactLastNotAnchored { .. } => true,
            Verdict::Unanchored { .. }
            | Verdict::Broken { .. }
            | Verdict::Dropped { .. }
            | Verdict::Added { .. }
            | Verdict::Missing { .. }
            | Verdict::Unannounced { .. }
            | Verdict::BeforeKeptHead { .. }
            | Verdict::NotKeptHead { .. } => false,
        }
    }
}

/// Why line `line` of a [`Verdict::Broken`] breaks the chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Broken {
    /// It is not a JSON object.
    NotAnObject,
    /// Its `seq` is not its place in the file.
    OutOfOrder { expected: u64, found: Option<u64> },
    /// The first line's `prev` is not the genesis hash.
    FirstDoesNotStart,
    /// Its `prev` is not the hash of line `previous`.
    DoesNotFollow { previous: u64 },
    /// It is entry `anchored`, the anchored one, and not the line the anchor hashes.
    NotTheAnchored { anchored: u64 },
}

impl fmt::Display for Broken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotAnObject => f.write_str("not a JSON object: the line was edited or cut"),
            Self::OutOfOrder { expected, found } => {
                let found = found.map_or_else(|| "none".to_owned(), |s| s.to_string());
                write!(
                    f,
                    "expected entry {expected}, found entry {found}: lines were dropped or reordered"
                )
            }
            Self::FirstDoesNotStart => f.write_str(
                "the first line does not start the chain: lines were dropped before it or it was edited",
            ),
            Self::DoesNotFollow { previous } => write!(
                f,
                "it does not follow line {previous}: line {previous} was edited"
            ),
            Self::NotTheAnchored { anchored } => write!(
                f,
                "it does not match the anchor in state.db: line {anchored} was edited"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn each_reason_says_what_was_done_to_the_log() {
        let said: Vec<String> = [
            Broken::NotAnObject,
            Broken::OutOfOrder {
                expected: 2,
                found: Some(3),
            },
            Broken::OutOfOrder {
                expected: 2,
                found: None,
            },
            Broken::FirstDoesNotStart,
            Broken::DoesNotFollow { previous: 2 },
            Broken::NotTheAnchored { anchored: 4 },
        ]
        .iter()
        .map(ToString::to_string)
        .collect();
        assert_eq!(
            said,
            [
                "not a JSON object: the line was edited or cut",
                "expected entry 2, found entry 3: lines were dropped or reordered",
                "expected entry 2, found entry none: lines were dropped or reordered",
                "the first line does not start the chain: lines were dropped before it or it was edited",
                "it does not follow line 2: line 2 was edited",
                "it does not match the anchor in state.db: line 4 was edited",
            ]
        );
    }
}
