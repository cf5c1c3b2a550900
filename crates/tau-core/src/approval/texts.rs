//! Texts the model reads. Fixed English, byte-exact, whatever the UI language.

/// What the model reads when a call was not approved (rejected, timed out, or failed).
pub fn refusal_text(tool: &str) -> String {
    format!(
        "The user did not approve this action: {tool}. Do not perform it; tell the user briefly."
    )
}

/// What the model reads when it called a tool tau does not know.
pub fn unknown_tool_text(tool: &str) -> String {
    format!("Tool '{tool}' is not registered; it was not run.")
}

/// What the model reads when the tool itself refused the arguments before anyone was
/// asked (an unknown device, an action it lacks, a value out of range).
pub fn invalid_call_text(tool: &str, reason: &str) -> String {
    format!("Tool '{tool}' refused these arguments; it was not run and nobody was asked: {reason}")
}

/// What the model reads for an approved call that tau let through and then stopped (it was
/// killed, the machine lost power) before the call's result was stored: it may or may not
/// have run, and tau will not run it again.
pub fn effect_uncertain_text(tool: &str) -> String {
    format!(
        "tau stopped while {tool} was running and its result was lost: it may or may not have run. It was not run again. Tell the user, and do not assume either outcome."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusal_text_is_byte_exact() {
        assert_eq!(
            refusal_text("mqtt_publish"),
            "The user did not approve this action: mqtt_publish. Do not perform it; tell the user briefly."
        );
    }

    #[test]
    fn effect_uncertain_text_is_byte_exact() {
        assert_eq!(
            effect_uncertain_text("run_command"),
            "tau stopped while run_command was running and its result was lost: it may or may not have run. It was not run again. Tell the user, and do not assume either outcome."
        );
    }

    #[test]
    fn unknown_tool_text_is_byte_exact() {
        assert_eq!(
            unknown_tool_text("open_door"),
            "Tool 'open_door' is not registered; it was not run."
        );
    }

    #[test]
    fn invalid_call_text_is_byte_exact() {
        assert_eq!(
            invalid_call_text("device_set", "there is no device named \"oven\""),
            "Tool 'device_set' refused these arguments; it was not run and nobody was asked: there is no device named \"oven\""
        );
    }
}
