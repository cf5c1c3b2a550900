//! How a routine's call that its exemption does not cover is asked.
//!
//! On its `ask` channel it becomes a stored question, through exactly the path a paused
//! turn's question takes (`tau_core::stored_gated_call`): stored and shown by the gate,
//! decided on the channel with the same compare-and-set, expired by the host's one
//! expirer, checked again and consumed by the gate before the call runs, its outcome
//! recorded. The routine's run is what waits, as a turn would pause. Where nobody can be
//! asked, the call is refused; a person's `tau routines run` asks at the terminal.

use std::sync::Arc;
use std::time::Duration;

use tau_core::StoredAnswers;
use tau_core::approval::{Approver, DurableQuestions};
use tau_protocol::{CardNote, SessionId};
use tau_state::Approvals;

use crate::validate::{AskChannel, Routine};

/// How a call the routine's exemption does not cover is asked.
pub enum Asking<'a> {
    /// In memory by `approver`, up to `timeout`, naming `channel` in its question.
    Now {
        approver: Arc<dyn Approver>,
        channel: String,
        timeout: Option<Duration>,
    },
    /// A stored question on the routine's `ask` channel, shown and answered through
    /// `answers` (the host).
    Stored {
        questions: DurableQuestions,
        answers: &'a dyn StoredAnswers,
    },
}

/// The card's note that names the routine asking and what fires it: tau's words, so that
/// nobody takes a routine's question for one they caused.
pub(crate) fn origin_note(routine: &Routine) -> CardNote {
    CardNote::info(
        "routine",
        format!("{} · {}", routine.name(), routine.origin()),
    )
}

/// Asking on `channel` through a question stored in `store` for `session`, waiting up to
/// `timeout`, shown through `answers`.
pub fn asking_on<'a>(
    answers: &'a dyn StoredAnswers,
    store: Approvals,
    channel: AskChannel,
    session: SessionId,
    timeout: Duration,
) -> Asking<'a> {
    Asking::Stored {
        questions: DurableQuestions {
            store,
            session,
            channel: channel.as_str().to_owned(),
            timeout,
        },
        answers,
    }
}
