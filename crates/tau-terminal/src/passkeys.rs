//! Questions no yes typed at the terminal approves. Once anyone in the home has enrolled a
//! passkey, a yes to a lock-class question (one with a second step) or to a
//! `[tools.step_up]` tool is given on TauBar, with the passkey: a terminal cannot ask for
//! one. A question whose tool, device or server names `approvers` is theirs alone: a yes
//! from anyone else at the terminal approves nothing either. Such a card says so, and a
//! yes or a second step's answer typed there approves nothing (the question stays open
//! for any other answer, which refuses it, or for its end). The terminal's questions live
//! in memory, so TauBar never sees them: the person asks for the call again there.

use std::sync::Arc;

use tau_protocol::ApprovalQuestion;

/// Whether a question's yes takes a passkey now.
pub type TakesPasskey = Arc<dyn Fn(&ApprovalQuestion) -> bool + Send + Sync>;

/// Why a question is not the terminal person's to answer (its `approvers` name others),
/// as the audit line says it; `None` when it is theirs.
pub type NotYours = Arc<dyn Fn(&ApprovalQuestion) -> Option<String> + Send + Sync>;

/// Records a yes typed at the terminal that approved nothing (the audit log's
/// `answer_refused`): with the reason `NotYours` gave, or none when it takes a passkey.
pub type RefusedYes = Arc<dyn Fn(&ApprovalQuestion, Option<&str>) + Send + Sync>;

/// What the terminal needs to know of questions no yes typed there approves.
#[derive(Clone)]
pub struct PasskeyQuestions {
    /// Asked once per question, when its card is drawn: a store that cannot say whether
    /// anyone has a passkey answers true.
    pub takes_passkey: TakesPasskey,
    /// Asked once per question, when its card is drawn.
    pub not_yours: NotYours,
    pub refused: RefusedYes,
}

impl PasskeyQuestions {
    /// Every question is the person's, and none takes a passkey (nobody has one, or tests
    /// that are not about them).
    pub fn none() -> Self {
        Self {
            takes_passkey: Arc::new(|_| false),
            not_yours: Arc::new(|_| None),
            refused: Arc::new(|_, _| {}),
        }
    }
}

impl std::fmt::Debug for PasskeyQuestions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PasskeyQuestions")
    }
}
