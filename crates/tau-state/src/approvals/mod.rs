//! Durable questions: a tier-2 call that waits for a person's answer, stored so it
//! outlives the process that asked it.
//!
//! Every change is a compare-and-set in one statement (`... WHERE state = 'pending'`,
//! `... WHERE consumed_at IS NULL`), committed durably (flushed to the disk) before it
//! returns, so two answers racing in two processes still have exactly one winner, an
//! answer survives a power cut, and an approval is let through exactly once.
//!
//! Layout: `row.rs` what a question is; `columns.rs` how a row is stored and read back;
//! `read.rs` the [`ApprovalReader`](crate::ApprovalReader)'s lookups and lists;
//! `lifecycle.rs` a question stored, shown, let through, closed and settled;
//! `decide.rs` the compare-and-set an answer or an expiry goes through; `dispatch.rs` the
//! yes given in memory recorded as its call is let through; `check.rs` the start-up
//! cross-check; `recheck.rs` the check a stored yes passes before its call runs;
//! `turn_holder.rs` which of several hubs resumes a question's turn.

mod check;
mod columns;
mod decide;
mod dispatch;
mod lifecycle;
mod read;
mod recheck;
mod row;
mod turn_holder;

pub use check::{RecordedAnswer, Untrusted, cross_check, needs_check};
pub use recheck::{CallToRun, Recheck, recheck};
pub use row::{
    Answered, ApprovalRow, ApprovalState, CallOutcome, NewApproval, canonical_arguments,
};

#[cfg(test)]
mod tests;
