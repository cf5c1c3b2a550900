//! A routine's exemption: the one call the person set up, and nothing else.
//!
//! It matches only the routine's own tool with exactly its arguments (canonical JSON,
//! compared by SHA-256), and it exists only while the routine's content is what the person
//! approved: a `tau.toml` routine (the person wrote it), or a routine made in a
//! conversation whose content hash is still the one shown in its approval. Editing the
//! routine changes the hash, and the exemption is gone.

use std::sync::Arc;

use serde_json::Value;
use tau_core::TierGate;
use tau_core::approval::{Exemption, ExemptionError, ExemptionHandle};
use tau_state::canonical_arguments;

use crate::book::Book;
use crate::validate::{Action, Routine};

/// Every routine's exemption as the lists of grants show it (`tau grants list`, TauBar,
/// `/grants`): the fixed tool calls whose content is still the approved one, switched on
/// or off. Revoked by disabling or deleting the routine.
pub fn allowances(book: &Book) -> Vec<tau_protocol::RoutineAllowance> {
    book.routines
        .iter()
        .filter_map(|routine| match &routine.action {
            Action::Tool { tool, arguments } if routine.approved() => {
                Some(tau_protocol::RoutineAllowance {
                    routine: routine.name().to_owned(),
                    tool: tool.clone(),
                    arguments: arguments.clone(),
                    trigger: routine.origin(),
                    enabled: routine.enabled,
                })
            }
            Action::Tool { .. } | Action::Prompt { .. } => None,
        })
        .collect()
}

/// Exempts exactly `tool` with arguments hashing to `arguments_sha256`.
pub(crate) struct RoutineExemption {
    tool: String,
    arguments_sha256: String,
}

impl Exemption for RoutineExemption {
    fn exempts(&self, tool: &str, arguments: &Value) -> Result<bool, ExemptionError> {
        Ok(tool == self.tool && canonical_arguments(arguments).1 == self.arguments_sha256)
    }
}

/// Adds `routine`'s exemption to `gate`, under `routine:NAME`, when it has one: a fixed
/// tool call whose routine content is the approved one. Prompt actions never have one.
pub fn add_exemption(gate: &TierGate, routine: &Routine) -> Option<ExemptionHandle> {
    let Action::Tool { tool, arguments } = &routine.action else {
        return None;
    };
    if !routine.approved() {
        tracing::warn!(
            routine = routine.name(),
            "routine changed since it was approved; its calls are asked"
        );
        return None;
    }
    let exemption = RoutineExemption {
        tool: tool.clone(),
        arguments_sha256: canonical_arguments(arguments).1,
    };
    Some(gate.add_exemption(routine.exemption_name(), Arc::new(exemption)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_the_same_tool_with_the_same_arguments_is_exempt() {
        let exemption = RoutineExemption {
            tool: "mqtt_publish".into(),
            arguments_sha256: canonical_arguments(&json!({"topic": "t", "payload": "on"})).1,
        };
        let yes = |tool: &str, args: Value| exemption.exempts(tool, &args) == Ok(true);
        assert!(yes("mqtt_publish", json!({"payload": "on", "topic": "t"})));
        assert!(!yes(
            "mqtt_publish",
            json!({"topic": "t", "payload": "off"})
        ));
        assert!(!yes(
            "mqtt_publish",
            json!({"topic": "t", "payload": "on", "retain": true})
        ));
        assert!(!yes("mqtt_publish", json!({"topic": "t"})));
        assert!(!yes("run_command", json!({"topic": "t", "payload": "on"})));
    }
}
