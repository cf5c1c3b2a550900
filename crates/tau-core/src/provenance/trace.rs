//! Tracing a call's argument values back to the first text of the conversation that held
//! them: each whole string value, and each run in it that reads as an identifier (an
//! address, a URL or host, an account number, a path), matched after folding
//! ([`super::fold`]) in one multi-pattern pass over the ledger.

use aho_corasick::{AhoCorasick, MatchKind};
use serde_json::Value;
use tau_protocol::{Source, TracedValue};

use super::fold::fold;
use super::ledger::{Ledger, SEPARATOR};

/// A run shorter than this (in characters, folded) is too common to say where it came from.
pub const MIN_RUN_CHARS: usize = 6;
/// A whole value longer than this is traced by its runs alone.
const MAX_WHOLE_CHARS: usize = 512;
/// Pieces of an identifier shorter than this are not looked for on their own.
const MIN_PIECE_CHARS: usize = 3;
/// At most this many runs are traced per call: a huge argument is traced by its first.
pub const MAX_RUNS: usize = 512;

/// One run of an argument to trace.
#[derive(Debug, Clone)]
struct Run {
    argument: String,
    value: String,
    folded: String,
    /// Indexes into the pattern list of the run's pieces, when it has two or more.
    pieces: Vec<usize>,
    whole: usize,
}

/// What the trace found, argument by argument.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Traced {
    /// Values that first appeared in outside text.
    pub flagged: Vec<TracedValue>,
    /// Values the person typed, or a trusted source held, first.
    pub typed: Vec<TracedValue>,
}

/// Traces every run of `arguments` back to the ledger's texts.
pub fn trace(ledger: &Ledger, arguments: &Value) -> Traced {
    let mut runs = Vec::new();
    let mut patterns: Vec<String> = Vec::new();
    collect(arguments, &mut String::new(), &mut runs, &mut patterns);
    if runs.is_empty() || ledger.is_empty() {
        return Traced::default();
    }
    let Ok(matcher) = AhoCorasick::builder()
        .match_kind(MatchKind::Standard)
        .build(&patterns)
    else {
        return Traced::default();
    };
    // The first place each pattern appears: overlapping matches come in order of their
    // end, so a pattern's first match is its earliest.
    let mut first: Vec<Option<usize>> = vec![None; patterns.len()];
    let mut left = patterns.len();
    for found in matcher.find_overlapping_iter(&ledger.text) {
        let Some(slot) = first.get_mut(found.pattern().as_usize()) else {
            continue;
        };
        if slot.is_none() {
            *slot = Some(found.start());
            left -= 1;
            if left == 0 {
                break;
            }
        }
    }
    let source_of = |pattern: usize| {
        first
            .get(pattern)
            .copied()
            .flatten()
            .and_then(|at| ledger.source_at(at))
    };
    let mut traced = Traced::default();
    for run in runs {
        let (source, assembled) = match source_of(run.whole) {
            Some(source) => (source.clone(), false),
            None => match assembled_from(&run, &source_of) {
                Some(source) => (source.clone(), true),
                None => continue,
            },
        };
        let value = TracedValue {
            argument: run.argument,
            value: run.value,
            source,
            assembled,
        };
        let list = if value.source.is_untrusted() {
            &mut traced.flagged
        } else {
            &mut traced.typed
        };
        if !list
            .iter()
            .any(|v| v.argument == value.argument && v.value == value.value)
        {
            list.push(value);
        }
    }
    traced
}

/// The source of a run found only in pieces, when every piece first appeared in outside
/// text: the model put the value together from what it read.
fn assembled_from<'a>(
    run: &Run,
    source_of: &dyn Fn(usize) -> Option<&'a Source>,
) -> Option<&'a Source> {
    if run.pieces.len() < 2 {
        return None;
    }
    let mut first = None;
    for &piece in &run.pieces {
        let source = source_of(piece)?;
        if !source.is_untrusted() {
            return None;
        }
        first.get_or_insert(source);
    }
    first
}

fn collect(value: &Value, pointer: &mut String, runs: &mut Vec<Run>, patterns: &mut Vec<String>) {
    match value {
        Value::String(text) => runs_of(text, pointer, runs, patterns),
        Value::Number(number) => runs_of(&number.to_string(), pointer, runs, patterns),
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                let len = pointer.len();
                pointer.push('/');
                pointer.push_str(&index.to_string());
                collect(item, pointer, runs, patterns);
                pointer.truncate(len);
            }
        }
        Value::Object(map) => {
            for (key, item) in map {
                let len = pointer.len();
                pointer.push('/');
                pointer.push_str(&key.replace('~', "~0").replace('/', "~1"));
                collect(item, pointer, runs, patterns);
                pointer.truncate(len);
            }
        }
        Value::Bool(_) | Value::Null => {}
    }
}

fn runs_of(text: &str, pointer: &str, runs: &mut Vec<Run>, patterns: &mut Vec<String>) {
    let whole = text.trim();
    if whole.chars().count() <= MAX_WHOLE_CHARS {
        add_run(whole, pointer, runs, patterns);
    }
    for word in text.split(|c: char| c.is_whitespace() || "\"'`<>()[]{},;|".contains(c)) {
        let word = word.trim_end_matches(['.', ':', '!', '?']);
        if word != whole && reads_as_identifier(word) {
            add_run(word, pointer, runs, patterns);
        }
    }
}

/// A word with a digit or the punctuation of addresses, hosts, paths and accounts.
fn reads_as_identifier(word: &str) -> bool {
    word.chars()
        .any(|c| c.is_numeric() || "@./:\\_-+#=%&?~".contains(c))
}

fn add_run(value: &str, pointer: &str, runs: &mut Vec<Run>, patterns: &mut Vec<String>) {
    if runs.len() >= MAX_RUNS {
        return;
    }
    let folded: String = fold(value).chars().filter(|c| *c != SEPARATOR).collect();
    if folded.chars().count() < MIN_RUN_CHARS
        || runs
            .iter()
            .any(|r| r.folded == folded && r.argument == pointer)
    {
        return;
    }
    let whole = pattern(&folded, patterns);
    let pieces: Vec<usize> = folded
        .split(|c: char| !c.is_alphanumeric())
        .filter(|piece| piece.chars().count() >= MIN_PIECE_CHARS)
        .map(|piece| pattern(piece, patterns))
        .collect();
    runs.push(Run {
        argument: pointer.to_owned(),
        value: value.to_owned(),
        folded,
        pieces,
        whole,
    });
}

/// The index of `text` in the pattern list, added when new.
fn pattern(text: &str, patterns: &mut Vec<String>) -> usize {
    match patterns.iter().position(|p| p == text) {
        Some(index) => index,
        None => {
            patterns.push(text.to_owned());
            patterns.len() - 1
        }
    }
}
