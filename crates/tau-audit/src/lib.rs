//! tau-audit: the one owner of `audit.jsonl`, tau's record of what it did.
//!
//! Owns the file: the writer (each line chained to the one before by its hash, its head
//! anchored in `state.db`, announced before it is written), the one typed reader every
//! consumer folds over ([`AuditLine`]), and what is read from it: `tau audit verify` and
//! `head` and what they print, the copy up to a head for a backup, the head sent to a
//! witness, the grants the gate confirms against, a person's past approvals for the
//! card's suggestion, the answers `tau serve` confirms stored approvals against, `tau
//! grants stats` and TauBar's history of decisions. It sits above `tau-core` (whose
//! [`tau_core::AuditEvent`] is what a line records) and `tau-state` (the anchor's table);
//! it knows no channel, no command line and no home beyond the paths it is given.
//!
//! Layout
//! - `log.rs`: [`AuditLog`], the appender, and [`SessionAudit`]
//! - `record.rs`: [`AuditLine`], the typed reader
//! - `verify.rs`: the chain and its end against the anchor
//! - `verdict.rs`: [`Verdict`], what verify finds, and [`Broken`], why a line breaks it
//! - `report.rs`: what `tau audit verify` and `tau audit head` print
//! - `copy.rs`: the log up to a head (`tau backup`)
//! - `witness.rs`: `[audit] witness`, and what it is told
//! - `grants.rs`: [`AuditGrants`], what the log records of grants
//! - `history.rs`: [`AuditHistory`], a person's approvals read back
//! - `answers.rs`: the recorded answers
//! - `grant_stats.rs`: `tau grants stats`
//! - `decisions.rs`: [`AuditDecisions`], TauBar's history of decisions

mod answers;
mod copy;
mod decisions;
mod grant_stats;
mod grants;
mod history;
mod log;
mod record;
mod report;
#[cfg(test)]
mod test_lines;
mod verdict;
mod verify;
mod witness;

pub use answers::recorded_answers;
pub use copy::{CopyError, copy_to_head};
pub use decisions::AuditDecisions;
pub use grant_stats::grant_stats;
pub use grants::{AuditGrants, LedgerError};
pub use history::AuditHistory;
pub use log::{AuditLog, GENESIS, SessionAudit, line_hash};
pub use record::{AuditLine, Entry, Event, Lines, fold_events, fold_lines, open_lines};
pub use report::{
    HeadError, ReportError, anchored_head, format_head, head_report, parse_head, verify_log,
    verify_report,
};
pub use verdict::{Broken, Verdict};
pub use verify::{verify, verify_from};
pub use witness::{AuditConfig, Witness, witness_message};
