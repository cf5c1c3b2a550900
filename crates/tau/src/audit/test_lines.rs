//! Audit lines as tests write them: a question's answer, a person's yes.

use serde_json::{Value, json};

/// The `approval` line of question `id` about `tool` (with `npm run test` as its command),
/// decided `decision` by a `kind` (`person`, `grant`, ...) on the terminal at `at`.
pub(crate) fn answered(id: &str, tool: &str, at: &str, decision: &str, kind: &str) -> Value {
    json!({"type": "approval", "at": at, "approval_id": id, "tool": tool,
           "arguments": {"command": "npm run test"}, "decision": decision,
           "decided_by": {"kind": kind, "channel": "terminal"}})
}

/// A person's yes to `run_command`.
pub(crate) fn approved(id: &str, at: &str) -> Value {
    answered(id, "run_command", at, "approved", "person")
}
