//! The guides' sample cards are what tau prints: every line of a sample marked
//! `<!-- each line is one tau prints: DIR ... -->` must be a line of one of the insta
//! snapshots under those folders, so a card whose words change leaves no stale sample.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

const MARKER: &str = "<!-- each line is one tau prints: ";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A snapshot's line as a reader sees it: a TUI frame's quotes, Telegram's markup and
/// entities and its buttons' callback data taken off, the spaces at either end too.
fn as_read(line: &str) -> String {
    let line = line
        .strip_prefix('"')
        .and_then(|l| l.strip_suffix('"'))
        .unwrap_or(line);
    let mut out = String::new();
    let mut in_tag = false;
    for c in line.chars() {
        match c {
            '<' if !in_tag => in_tag = true,
            '>' if in_tag => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    let mut out = out
        .replace("&gt;", ">")
        .replace("&lt;", "<")
        .replace("&amp;", "&");
    while let Some(at) = out.find(" → v1:") {
        let end = out[at..].find(']').map_or(out.len(), |e| at + e);
        out.replace_range(at..end, "");
    }
    out.trim().to_owned()
}

fn snapshot_lines(dir: &Path, into: &mut BTreeSet<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            snapshot_lines(&path, into);
        } else if path.extension().is_some_and(|e| e == "snap") {
            let text = std::fs::read_to_string(&path).unwrap();
            // The header is the YAML between the first two `---` lines.
            let body = text.splitn(3, "---\n").nth(2).unwrap_or(&text);
            into.extend(body.lines().map(as_read));
        }
    }
}

/// Every marked sample of `text`: the folders it names and its lines.
fn samples(text: &str) -> Vec<(Vec<String>, Vec<String>)> {
    let mut found = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let Some(dirs) = line.strip_prefix(MARKER) else {
            continue;
        };
        let dirs = dirs.trim_end_matches("-->").split_whitespace();
        assert_eq!(lines.next(), Some("```"), "a sample follows its marker");
        let body = lines
            .by_ref()
            .take_while(|l| *l != "```")
            .map(str::to_owned)
            .collect();
        found.push((dirs.map(str::to_owned).collect(), body));
    }
    found
}

#[test]
fn every_line_of_a_guides_sample_card_is_one_tau_prints() {
    let mut checked = 0;
    for entry in std::fs::read_dir(root().join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "md") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for (dirs, body) in samples(&text) {
            let mut known = BTreeSet::new();
            for dir in &dirs {
                snapshot_lines(&root().join(dir), &mut known);
            }
            for line in body.iter().map(|l| l.trim()).filter(|l| !l.is_empty()) {
                assert!(
                    known.contains(line),
                    "{}: {line:?} is not a line tau prints (no snapshot under {dirs:?} has it)",
                    path.display()
                );
            }
            checked += 1;
        }
    }
    // The terminal's, the TUI's and Telegram's cards at least.
    assert!(checked >= 3, "{checked} samples marked");
}

#[test]
fn a_stale_line_is_found() {
    let mut known = BTreeSet::new();
    snapshot_lines(&root().join("crates/tau-terminal"), &mut known);
    assert!(known.contains("│ tool       run_command"));
    assert!(
        !known.contains(
            "│ ↻ A grant covers exactly this call, in this conversation, for 24 h: the ↩"
        )
    );
    assert_eq!(
        as_read("[Approve → v1:a:ap_01] [Reject → v1:r:ap_01]"),
        "[Approve] [Reject]"
    );
    assert_eq!(
        as_read("<b>⚠ Approval needed · tier 2</b>"),
        "⚠ Approval needed · tier 2"
    );
    assert_eq!(as_read("\"  ║ tier    2   ║  \""), "║ tier    2   ║");
}
