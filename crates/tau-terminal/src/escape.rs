//! Text from a model made safe to show in the terminal: tau-core's display function, the
//! one every channel uses.

use serde_json::Value;

/// One line of untrusted text as the terminal shows it (see [`tau_core::display`]).
pub fn escape_for_terminal(text: &str) -> String {
    tau_core::display(text)
}

/// JSON with object keys sorted at every depth, on one line, escaped for the terminal.
pub fn sorted_json(value: &Value) -> String {
    tau_core::display(&tau_core::sorted_json(value))
}
