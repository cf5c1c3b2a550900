//! Once anyone has enrolled a passkey, a yes to a lock-class question (or to a tool listed
//! in `[tools.step_up]`) is given on TauBar, with one: TauBar checks the assertion and
//! answers [`Reply::Passkey`]. A yes on any other channel (a Telegram button, a typed word)
//! approves nothing; it is refused with [`PasskeyElsewhere`]'s line, which names where to
//! confirm, and recorded as `answer_refused`.

use tau_protocol::CallCard;
use tau_state::{ApprovalRow, ApprovalState, StateDb};

use crate::Reply;

/// Which questions take a passkey, and where TauBar is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PasskeyStep {
    /// TauBar's address (`http://localhost:7878/`), for the line that says where to
    /// confirm; `None` when TauBar does not run.
    pub taubar: Option<String>,
    /// Tools whose yes takes a passkey besides lock-class devices (`[tools.step_up]`).
    pub tools: Vec<String>,
}

/// The `answer_refused` line's `reason` for a yes given where no passkey can be asked.
pub const PASSKEY_ELSEWHERE_REASON: &str = "a yes where no passkey can be asked";

/// A yes that needs a passkey, given on a channel that cannot ask for one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.line())]
pub struct PasskeyElsewhere {
    /// Where to confirm: TauBar, at the conversation the question waits in.
    pub link: Option<String>,
}

impl PasskeyElsewhere {
    /// What the person reads: nothing was approved, and where to confirm.
    pub fn line(&self) -> String {
        match &self.link {
            Some(link) => format!(
                "this question takes a passkey: nothing was approved here; confirm it on TauBar: {link}"
            ),
            None => {
                "this question takes a passkey: nothing was approved here; confirm it on TauBar"
                    .to_owned()
            }
        }
    }
}

impl PasskeyStep {
    /// Whether a yes `reply` to `row` needs a passkey it did not bring: a pending
    /// question of a lock-class device or a listed tool, while anyone has a passkey, and
    /// a yes that is not TauBar's checked one. `Err` when the store cannot say (then the
    /// yes is refused: a store that fails never lowers the step).
    pub(crate) fn refuses(&self, state: &StateDb, row: &ApprovalRow, reply: &Reply) -> bool {
        let plain_yes = match reply {
            Reply::Approve | Reply::Confirm(_) | Reply::ApproveWithGrant(_) => true,
            Reply::Passkey | Reply::Reject => false,
        };
        if !plain_yes || row.state != ApprovalState::Pending {
            return false;
        }
        self.takes_passkey(state, &row.tool, &row.card)
    }

    /// Whether a yes to a call of `tool` with `card` takes a passkey now: a lock-class
    /// device's or a listed tool's, while anyone has one. A store that cannot say answers
    /// `true`: a failure never lowers the step.
    pub(crate) fn takes_passkey(&self, state: &StateDb, tool: &str, card: &CallCard) -> bool {
        if card.confirm.is_none() && !self.tools.iter().any(|listed| listed == tool) {
            return false;
        }
        state.passkeys().any().unwrap_or_else(|error| {
            tracing::error!(%error, "passkeys could not be read; a passkey is asked for");
            true
        })
    }

    /// The gate's view of the step: with it, no grant covers a call that takes a passkey,
    /// a grant made before the first one was enrolled included.
    pub fn for_gate(&self, state: StateDb) -> std::sync::Arc<dyn tau_core::StepUp> {
        std::sync::Arc::new(GateStep {
            step: self.clone(),
            state,
        })
    }

    /// The refusal for `row`: TauBar's link to the conversation it waits in.
    pub(crate) fn elsewhere(&self, row: &ApprovalRow) -> PasskeyElsewhere {
        PasskeyElsewhere {
            link: self
                .taubar
                .as_ref()
                .map(|base| format!("{base}#session={}", row.session.as_str())),
        }
    }
}

/// [`PasskeyStep`] as a conversation's gate asks it, over the store that keeps passkeys.
struct GateStep {
    step: PasskeyStep,
    state: StateDb,
}

impl tau_core::StepUp for GateStep {
    fn takes_passkey(&self, tool: &str, card: &CallCard) -> bool {
        self.step.takes_passkey(&self.state, tool, card)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn the_refusal_says_nothing_was_approved_and_where_to_confirm() {
        assert_eq!(
            PasskeyElsewhere {
                link: Some("http://localhost:7878/#session=web-1".into())
            }
            .to_string(),
            "this question takes a passkey: nothing was approved here; confirm it on TauBar: http://localhost:7878/#session=web-1"
        );
        assert_eq!(
            PasskeyElsewhere { link: None }.to_string(),
            "this question takes a passkey: nothing was approved here; confirm it on TauBar"
        );
        assert_eq!(
            PASSKEY_ELSEWHERE_REASON,
            "a yes where no passkey can be asked"
        );
    }
}
