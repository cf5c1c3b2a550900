//! What the gate knows about a tool: its standing (unknown, known with a tier, or
//! untrustworthy), and the catalog's answers the ladder asks for on the way.

use serde_json::Value;
use tau_protocol::{CallCard, Tier};

/// What the gate knows about a tool name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Standing {
    Unknown,
    Known {
        tier: Tier,
        effect: String,
    },
    /// Registered, but its tier can no longer be trusted.
    Invalid {
        reason: String,
    },
}

/// Where the gate looks tools up; the catalog implements it.
pub trait TierLookup: Send + Sync {
    fn standing(&self, tool: &str) -> Standing;

    /// The tool's provenance rule: whether what it returns is trusted, and whether a call
    /// is asked once the conversation read outside text. The default: a local tool whose
    /// results are outside text.
    fn provenance_rule(&self, _tool: &str) -> crate::provenance::ProvenanceRule {
        crate::provenance::ProvenanceRule::default()
    }

    /// SHA-256 of the tool's input schema as it is now; `None` (the default) means no
    /// grant can ever cover a call to it.
    fn schema_sha256(&self, _tool: &str) -> Option<String> {
        None
    }

    /// For a tool that runs the workspace's files, the workspace's tree now; `None` (the
    /// default) for any other tool.
    fn workspace_tree(
        &self,
        _tool: &str,
    ) -> Option<Result<tau_protocol::WorkspaceTree, tau_protocol::TreeError>> {
        None
    }

    /// What tau says about a tier-2 call on its question's card.
    fn card(&self, _tool: &str, _arguments: &Value) -> CallCard {
        CallCard::default()
    }

    /// The reason the tool would refuse `arguments`, said before anyone is asked.
    fn check_input(&self, _tool: &str, _arguments: &Value) -> Result<(), String> {
        Ok(())
    }

    /// A stored question's card, right before its approved call runs; `Err` is the text
    /// the model reads instead, and the call does not run. A card that showed files
    /// refuses unless something holds the call to them.
    fn resume_card(&self, _tool: &str, _arguments: &Value, card: &CallCard) -> Result<(), String> {
        if card.shown_files.is_empty() {
            Ok(())
        } else {
            Err(crate::card::SHOWN_FILES_UNCHECKED_TEXT.to_owned())
        }
    }
}
