//! `tau audit verify [--from SEQ:HASH]` and `tau audit head`: what they print, and whether
//! the log is vouched for (exit 0) or not (exit 1).
//!
//! A head is `SEQ:HASH`: the number of the chain's last anchored entry and the SHA-256 of
//! its line. Kept somewhere the log's writers cannot reach (a note, another machine, a
//! message tau sent to Telegram), it lets `verify --from` prove later that the log still
//! holds it, whatever `state.db` says then.

use std::path::Path;

use tau_state::{StateDb, StateError};

use crate::grants::AuditGrants;
use crate::log::{GENESIS, Head};
use crate::verdict::Verdict;
use crate::verify::{verify, verify_from};

/// The log or its anchor could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error(transparent)]
    Read(#[from] std::io::Error),
    #[error(transparent)]
    State(#[from] StateError),
}

/// A `--from` that is not a head as `tau audit head` prints it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "--from: {shown} is not a head: write it as `tau audit head` prints it, SEQ:HASH (a number, a colon and 64 lowercase hex digits)"
)]
pub struct HeadError {
    /// The text given, quoted as the display function shows it.
    shown: String,
}

/// `SEQ:HASH` of `head`.
pub fn format_head(head: &Head) -> String {
    format!("{}:{}", head.seq, head.hash)
}

/// A head as `tau audit head` prints it.
pub fn parse_head(text: &str) -> Result<Head, HeadError> {
    let parsed = text.trim().split_once(':').and_then(|(seq, hash)| {
        let hex = hash.len() == 64 && hash.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        let digits = !seq.is_empty() && seq.bytes().all(|b| b.is_ascii_digit());
        (hex && digits).then(|| {
            seq.parse().ok().map(|seq| Head {
                seq,
                hash: hash.to_owned(),
            })
        })?
    });
    parsed.ok_or_else(|| HeadError {
        shown: format!("{:?}", tau_core::display(text)),
    })
}

/// `tau audit head` of the log at `path` anchored in `state` (the home's `state.db`, if
/// there is one): the head of an intact log, or the report of why there is none, and
/// whether there is one.
pub fn head_report(path: &Path, state: Option<&StateDb>) -> Result<(String, bool), ReportError> {
    let verdict = verify(path, state)?;
    if !verdict.intact() {
        let report = report(&verdict, path, None);
        return Ok((
            format!("no head: the log cannot be vouched for; {report}"),
            false,
        ));
    }
    let head = anchored_head(state)?.unwrap_or_else(|| Head {
        seq: 0,
        hash: GENESIS.to_owned(),
    });
    Ok((format!("{}\n", format_head(&head)), true))
}

/// The anchored head in `state` (the home's `state.db`), if any.
pub fn anchored_head(state: Option<&StateDb>) -> Result<Option<Head>, StateError> {
    match state {
        Some(state) => state.audit_anchor().audit_head(),
        None => Ok(None),
    }
}

/// What `tau audit verify` says of the log at `path` anchored in `state` (the chain and its
/// end; grants aside), and whether it vouches for it.
pub fn verify_log(path: &Path, state: &StateDb) -> Result<(String, bool), ReportError> {
    let verdict = verify(path, Some(state))?;
    Ok((report(&verdict, path, None), verdict.intact()))
}

/// The report of `tau audit verify [--from kept]` of the log at `path` anchored in `state`
/// (the home's `state.db`, if there is one), and whether it vouches for the whole log.
pub fn verify_report(
    path: &Path,
    state: Option<&StateDb>,
    kept: Option<&Head>,
) -> Result<(String, bool), ReportError> {
    let verdict = verify_from(path, state, kept)?;
    let mut text = report(&verdict, path, kept);
    let mut intact = verdict.intact();
    if intact && let Some(state) = state {
        let untrusted = untrusted_grants(path, state)?;
        intact = untrusted.is_empty();
        text.push_str(&untrusted);
    }
    Ok((text, intact))
}

/// One line for each grant in `state.db` not revoked whose row is not what the intact
/// log at `path` records of it (written or changed behind tau's back): such a grant
/// covers no call, and `tau serve` revokes it when it starts.
fn untrusted_grants(path: &Path, state: &StateDb) -> Result<String, StateError> {
    let rows: Vec<_> = state
        .grants()
        .grants(None)?
        .into_iter()
        .filter(|grant| grant.revoked_at.is_none())
        .collect();
    if rows.is_empty() {
        return Ok(String::new());
    }
    let recorded = AuditGrants::new(path.to_owned(), state.clone())
        .all()
        .map_err(|why| why.to_string());
    let mut out = String::new();
    for grant in rows {
        let record = match &recorded {
            Ok(all) => Ok(all.get(&grant.id)),
            Err(why) => Err(why.as_str()),
        };
        if let Err(why) = tau_state::cross_check_grant(&grant, record) {
            out.push_str(&format!(
                "grant {} ({} {}) in state.db is not what tau wrote, and covers no call: {why}\n",
                grant.id,
                tau_core::display(&grant.tool),
                tau_core::display(&tau_core::sorted_json(&grant.arguments)),
            ));
        }
    }
    Ok(out)
}

fn lines_were(n: u64) -> String {
    if n == 1 {
        "1 line was".to_owned()
    } else {
        format!("{n} lines were")
    }
}

fn report(verdict: &Verdict, path: &Path, kept: Option<&Head>) -> String {
    let extends = kept.map_or_else(String::new, |k| {
        format!(", and it holds the head you kept (entry {})", k.seq)
    });
    match verdict {
        Verdict::NoLog => format!("no audit log yet at {}\n", path.display()),
        Verdict::Intact { lines } => format!("audit log intact: {lines} lines{extends}\n"),
        Verdict::IntactLastNotAnchored { lines } => format!(
            "audit log intact: {lines} lines{extends}; the last one is not anchored in state.db yet (tau stopped between writing and anchoring it; the next entry anchors it)\n"
        ),
        Verdict::Unanchored { lines } => format!(
            "audit log chain intact for {lines} lines, but state.db holds no anchor for it: lines dropped from its end would not show\n"
        ),
        Verdict::Broken { line, reason } => {
            format!("audit log broken at line {line}: {reason}\n")
        }
        Verdict::Dropped { lines: 0, anchored } => format!(
            "audit log broken: it is empty, but state.db's anchor says entry {anchored} was written: it was emptied\n"
        ),
        Verdict::Dropped { lines: n, anchored } => format!(
            "audit log broken after line {n}: state.db's anchor says entry {anchored} was written: the last {} dropped\n",
            lines_were(anchored - n)
        ),
        Verdict::Added { lines: n, anchored } => format!(
            "audit log broken after line {anchored}: state.db's anchor says it is the last: {} added behind tau's back\n",
            lines_were(n - anchored)
        ),
        Verdict::Missing { anchored } => format!(
            "audit log missing at {}, but state.db's anchor says entry {anchored} was written: it was deleted\n",
            path.display()
        ),
        Verdict::Unannounced { line } => format!(
            "audit log broken at line {line}: it follows the anchored line, but no tau process announced it in state.db before writing it: it was added behind tau's back\n"
        ),
        Verdict::BeforeKeptHead { lines, kept } => format!(
            "audit log broken: it ends at line {lines}, before entry {kept} of the head you kept: it was cut back (and state.db with it, if its anchor agrees)\n"
        ),
        Verdict::NotKeptHead { kept } => format!(
            "audit log broken at line {kept}: it is not the entry of the head you kept (its hash differs): the log was rewritten up to there\n"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn a_head_is_a_number_a_colon_and_64_hex_digits() {
        let hash = "ab".repeat(32);
        assert_eq!(
            parse_head(&format!("12:{hash}\n")).unwrap(),
            Head {
                seq: 12,
                hash: hash.clone()
            }
        );
        for bad in [
            String::new(),
            "12".to_owned(),
            format!("12:{}", &hash[1..]),
            format!("-1:{hash}"),
            format!("x:{hash}"),
            format!("12:{}", hash.to_uppercase()),
            format!("99999999999999999999999:{hash}"),
            "\u{1b}[2J".to_owned(),
        ] {
            let error = parse_head(&bad).unwrap_err().to_string();
            assert!(error.starts_with("--from: "), "{bad:?}: {error}");
            assert!(!error.contains('\u{1b}'), "{error}");
        }
    }
}
