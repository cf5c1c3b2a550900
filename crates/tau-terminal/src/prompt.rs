//! The approval prompt and the answers that approve.

use tau_core::{ApprovalRequest, Decision, Language};

use crate::escape::{escape_for_terminal, sorted_json};
use crate::texts::texts;

/// The question as the person sees it: tool, arguments (sorted JSON) and effect, each on
/// one line, everything from the model escaped. Ends with the question, no newline.
pub fn render_prompt(request: &ApprovalRequest, language: Language) -> String {
    let t = texts(language);
    let width = [t.tool, t.arguments, t.effect]
        .iter()
        .map(|l| l.chars().count())
        .max()
        .unwrap_or(0);
    let row = |label: &str, value: &str| format!("  │ {label:<width$}  {value}\n");
    let mut out = format!("  ┌─ {} · {} {}\n", t.approval_needed, t.tier, request.tier);
    out.push_str(&row(t.tool, &escape_for_terminal(&request.tool)));
    out.push_str(&row(t.arguments, &sorted_json(&request.arguments)));
    out.push_str(&row(t.effect, &escape_for_terminal(&request.effect)));
    out.push_str(&format!("  └─ {} ", t.question));
    out
}

/// Only `y`, `yes`, `e` and `evet` approve, in any case and any UI language, surrounding
/// spaces ignored. Anything else, end of input included, refuses.
pub fn parse_answer(line: Option<&str>) -> Decision {
    match line.map(|l| l.trim().to_lowercase()) {
        Some(answer) if matches!(answer.as_str(), "y" | "yes" | "e" | "evet") => Decision::Approved,
        _ => Decision::Rejected,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tau_core::Tier;

    fn request(arguments: serde_json::Value, effect: &str) -> ApprovalRequest {
        ApprovalRequest {
            tool: "mqtt_publish".into(),
            tier: Tier::Physical,
            effect: effect.into(),
            arguments,
            tool_use_id: "t1".into(),
            channel: "terminal".into(),
            approval_id: "ap_1".into(),
            deadline: None,
        }
    }

    #[test]
    fn prompt_plain_en() {
        let r = request(
            json!({"topic": "home/kitchen/light", "payload": "on", "retain": false}),
            "publishes an MQTT message that can switch real devices",
        );
        insta::assert_snapshot!(render_prompt(&r, Language::En));
    }

    #[test]
    fn prompt_plain_tr() {
        let r = request(
            json!({"topic": "home/kitchen/light", "payload": "on"}),
            "publishes an MQTT message that can switch real devices",
        );
        insta::assert_snapshot!(render_prompt(&r, Language::Tr));
    }

    #[test]
    fn prompt_with_escapes() {
        let r = request(
            json!({"topic": "home/\u{202e}thgil", "payload": "\u{1b}[2J\u{1b}[1;1Hall clear\u{200b}", "c1": "\u{9b}31m"}),
            "switches\u{2028}a light\u{feff}",
        );
        insta::assert_snapshot!(render_prompt(&r, Language::En));
    }

    #[test]
    fn only_yes_approves() {
        for yes in ["y", "Y", "yes", " YES ", "e", "E", "evet", "Evet\t", "EVET"] {
            assert_eq!(parse_answer(Some(yes)), Decision::Approved, "{yes:?}");
        }
        for no in [
            "",
            "n",
            "no",
            "hayır",
            "yes please",
            "y y",
            "ok",
            "sure",
            "1",
            "true",
            "yeah",
            "evet!",
        ] {
            assert_eq!(parse_answer(Some(no)), Decision::Rejected, "{no:?}");
        }
        assert_eq!(parse_answer(None), Decision::Rejected);
    }
}
