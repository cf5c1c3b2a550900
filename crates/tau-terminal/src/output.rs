//! A call's output in the terminal, under the call's line: its fields on one line, then
//! each text's first lines (its name above it) and how many lines more there are.
//! Everything through the terminal escape, like every untrusted text.

use tau_protocol::{OutputBlock, shown_lines};

use crate::escape::escape_for_terminal;

/// The lines to print; `more` says how many lines were left out: its first text when one
/// was, its second (with `{n}`) when more were. `dim` and `reset` are the style around
/// tau's own words (empty without colour).
pub(crate) fn output_lines(
    more: [&str; 2],
    dim: &str,
    reset: &str,
    blocks: &[OutputBlock],
) -> String {
    let mut out = String::new();
    let fields: Vec<String> = blocks
        .iter()
        .filter_map(|block| match block {
            OutputBlock::Field { name, value } => Some(format!(
                "{} {}",
                escape_for_terminal(name),
                escape_for_terminal(value)
            )),
            OutputBlock::Text { .. } => None,
        })
        .collect();
    if !fields.is_empty() {
        out.push_str(&format!("    {dim}{}{reset}\n", fields.join(" · ")));
    }
    for block in blocks {
        if let OutputBlock::Text { name, text } = block {
            if let Some(name) = name {
                out.push_str(&format!("    {dim}{}{reset}\n", escape_for_terminal(name)));
            }
            let (lines, hidden) = shown_lines(text);
            for line in lines {
                out.push_str(&format!("    │ {}\n", escape_for_terminal(line)));
            }
            if hidden > 0 {
                let [one, many] = more;
                let said = if hidden == 1 {
                    one.to_owned()
                } else {
                    many.replace("{n}", &hidden.to_string())
                };
                out.push_str(&format!("    │ {dim}{said}{reset}\n"));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_commands_output_is_text_cut_after_its_first_lines_and_escaped() {
        let stdout: String = (1..=12).map(|n| format!("line {n}\n")).collect();
        let blocks = [
            OutputBlock::Field {
                name: "exit_code".into(),
                value: "1".into(),
            },
            OutputBlock::Text {
                name: Some("stdout".into()),
                text: stdout,
            },
            OutputBlock::Text {
                name: Some("stderr".into()),
                text: "\u{1b}[2Jcleared?\tno \u{202e}gnp.exe\n".into(),
            },
        ];
        let shown = output_lines(["… 1 more line", "… {n} more lines"], "", "", &blocks);
        assert!(!shown.contains('\u{1b}') && !shown.contains('\u{202e}'));
        insta::assert_snapshot!(shown);
    }

    #[test]
    fn one_line_left_out_is_said_in_the_singular() {
        let stdout: String = (1..=9).map(|n| format!("line {n}\n")).collect();
        let blocks = [OutputBlock::Text {
            name: None,
            text: stdout,
        }];
        let shown = output_lines(["… 1 more line", "… {n} more lines"], "", "", &blocks);
        assert!(shown.ends_with("    │ … 1 more line\n"), "{shown}");
    }
}
