//! Questions whose yes takes a passkey. Once anyone in the home has enrolled one, a yes to
//! a lock-class question (one with a second step) or to a `[tools.step_up]` tool is given
//! on TauBar, with the passkey. A terminal cannot ask for one: its card says so, and a yes
//! or a second step's answer typed there approves nothing (the question stays open for
//! any other answer, which refuses it, or for its end). The terminal's questions live in
//! memory, so TauBar never sees them: the person asks for the call again there.

use std::sync::Arc;

use tau_protocol::ApprovalQuestion;

/// Whether a question's yes takes a passkey now.
pub type TakesPasskey = Arc<dyn Fn(&ApprovalQuestion) -> bool + Send + Sync>;

/// Records a yes typed at the terminal that approved nothing (the audit log's
/// `answer_refused`).
pub type RefusedYes = Arc<dyn Fn(&ApprovalQuestion) + Send + Sync>;

/// What the terminal needs to know of passkeys.
#[derive(Clone)]
pub struct PasskeyQuestions {
    /// Asked once per question, when its card is drawn: a store that cannot say whether
    /// anyone has a passkey answers true.
    pub takes_passkey: TakesPasskey,
    pub refused: RefusedYes,
}

impl PasskeyQuestions {
    /// No question takes a passkey (nobody has one, or tests that are not about them).
    pub fn none() -> Self {
        Self {
            takes_passkey: Arc::new(|_| false),
            refused: Arc::new(|_| {}),
        }
    }
}

impl std::fmt::Debug for PasskeyQuestions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PasskeyQuestions")
    }
}
