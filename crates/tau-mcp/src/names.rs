//! Names tau gives the tools of an MCP server: `NAME__TOOL`, within the pattern every
//! model accepts.

use tau_agent::{MAX_TOOL_NAME_LEN, is_valid_tool_name};

const EFFECT_NAME_CHARS: usize = 64;

/// `SERVER__TOOL`, with every character outside `[a-zA-Z0-9_-]` of the tool's name
/// replaced by `_`; `None` when the result is empty or longer than 64 characters.
pub(crate) fn namespaced(server: &str, tool: &str) -> Option<String> {
    if tool.is_empty() {
        return None;
    }
    let tool: String = tool
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let name = format!("{server}__{tool}");
    (name.len() <= MAX_TOOL_NAME_LEN && is_valid_tool_name(&name)).then_some(name)
}

/// A server's tool name as a person may read it on one line: through tau's display
/// function, at most 64 characters.
pub(crate) fn shown(tool: &str) -> String {
    tau_protocol::ellipsized(&tau_core::display(tool), EFFECT_NAME_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn names_are_namespaced_and_made_valid_or_refused() {
        let long = "x".repeat(70);
        let fits = "y".repeat(58);
        let cases = [
            (
                "get_current_time",
                Some("time__get_current_time".to_owned()),
            ),
            ("get.weather now", Some("time__get_weather_now".to_owned())),
            ("ünï", Some("time___n_".to_owned())),
            (fits.as_str(), Some(format!("time__{fits}"))),
            (long.as_str(), None),
            ("", None),
        ];
        for (tool, expected) in cases {
            assert_eq!(namespaced("time", tool), expected, "{tool:?}");
        }
    }

    #[test]
    fn shown_names_stay_on_one_line() {
        assert_eq!(shown("get.weather now"), "get.weather now");
        assert_eq!(shown("two\nlines\u{202e}"), "two\\u{a}lines\\u{202e}");
        assert_eq!(shown("ünï\u{34f}"), "ünï\\u{34f}");
        assert_eq!(shown(&"z".repeat(80)), format!("{}…", "z".repeat(64)));
    }
}
