//! The approver of a client that cannot ask its user (no elicitation): nobody is asked,
//! so the model is told exactly that, never that the user said no.

use async_trait::async_trait;
use tau_core::{Answer, Approver, ApproverError};
use tau_protocol::ApprovalQuestion;

/// Why the call was refused, for the audit log's `error` line.
pub(crate) const NO_ELICITATION: &str =
    "this MCP client does not support elicitation, so nobody could be asked";

/// What the model reads when a tier-2 call came from a client without elicitation.
pub(crate) fn no_elicitation_text(tool: &str) -> String {
    format!(
        "Tool '{tool}' was not run: it needs the user's approval, and this MCP client cannot ask (it lacks elicitation), so nobody was asked. Tell the user it needs a client with elicitation."
    )
}

/// What a tier-2 tool's description adds in `tools/list`, so the client's model and user
/// know before calling it.
pub(crate) const NEEDS_ELICITATION: &str = "Tier 2: tau asks the user before each call, through MCP elicitation; a client without elicitation is refused.";

pub(crate) struct UnaskableApprover;

#[async_trait]
impl Approver for UnaskableApprover {
    fn name(&self) -> &str {
        "mcp_no_elicitation"
    }

    async fn decide(&self, request: ApprovalQuestion) -> Result<Answer, ApproverError> {
        Err(ApproverError::nobody_asked(
            NO_ELICITATION,
            no_elicitation_text(&request.tool),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn the_texts_the_model_reads_are_byte_exact() {
        assert_eq!(
            no_elicitation_text("run_command"),
            "Tool 'run_command' was not run: it needs the user's approval, and this MCP client cannot ask (it lacks elicitation), so nobody was asked. Tell the user it needs a client with elicitation."
        );
        assert_eq!(
            NEEDS_ELICITATION,
            "Tier 2: tau asks the user before each call, through MCP elicitation; a client without elicitation is refused."
        );
    }
}
