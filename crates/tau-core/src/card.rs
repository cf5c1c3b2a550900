//! What tau writes on a tier-2 question's card, beyond the tool's effect line.
//!
//! A [`CardWriter`] knows something the model cannot write: a sandbox's policy, a device
//! registry, an analysis of the arguments. Writers are registered on the
//! [`ToolCatalog`](crate::ToolCatalog), so every gate built on it (a conversation's, the
//! MCP server's, a routine's) puts the same card in front of the person.

use serde_json::Value;
use tau_protocol::CallCard;

/// Adds tau's own words about one call to its card.
///
/// Runs for tier-2 calls to registered tools, right before the question is asked. A writer
/// never refuses a call (the gate decides that); one that cannot say what it should adds a
/// warning note saying so.
pub trait CardWriter: Send + Sync {
    fn write(&self, tool: &str, arguments: &Value, card: &mut CallCard);
}

impl<F: Fn(&str, &Value, &mut CallCard) + Send + Sync> CardWriter for F {
    fn write(&self, tool: &str, arguments: &Value, card: &mut CallCard) {
        self(tool, arguments, card);
    }
}
