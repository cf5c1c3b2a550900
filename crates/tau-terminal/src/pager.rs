//! A question taller than the screen, one screenful at a time. A 117 KB command shows its
//! first rows and says which rows are on screen; Enter shows the next ones; a yes counts
//! only once the last row was on screen (as the TUI card's does), so the middle of an
//! argument can never go by unseen above the question. Every argument longer than one
//! screen has its length and SHA-256 on every page, right above the question.

use serde_json::Value;
use tau_core::{Language, grouped_digits, shown_length};
use tau_protocol::{ApprovalId, ApprovalQuestion, ConfirmStep};

use crate::prompt::{question_line, shown_key};
use crate::texts::texts;
use crate::wrap::wrap;

/// The rows a page leaves below its text: the line the answer is typed on.
const ANSWER_ROWS: usize = 1;

/// The length and SHA-256 of every argument longer than one screen (`columns` × `rows`
/// characters), one row each (wrapped), in key order.
pub(crate) fn long_arguments(
    request: &ApprovalQuestion,
    language: Language,
    columns: usize,
    rows: usize,
) -> Vec<String> {
    let t = texts(language);
    let screen = columns.saturating_mul(rows);
    let arguments: Vec<(String, &Value)> = match &request.arguments {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            keys.into_iter()
                .filter_map(|key| map.get(key).map(|value| (shown_key(key), value)))
                .collect()
        }
        other => vec![(t.arguments.to_owned(), other)],
    };
    let mut out = Vec::new();
    for (key, value) in arguments {
        let Some(length) = shown_length(value).filter(|&n| n > screen) else {
            continue;
        };
        let text = format!(
            "{key}: {} {} · SHA-256:",
            grouped_digits(length, t.thousands),
            t.characters
        );
        out.extend(
            wrap("  │ ", "  │   ", &text, columns)
                .lines()
                .map(str::to_owned),
        );
        let hash = tau_core::argument_sha256(value);
        out.extend(
            wrap("  │   ", "  │   ", &hash, columns)
                .lines()
                .map(str::to_owned),
        );
    }
    out
}

/// A question shown a page at a time.
#[derive(Debug)]
pub(crate) struct Paged {
    pub approval_id: ApprovalId,
    language: Language,
    columns: usize,
    /// The question's rows, without the question line.
    lines: Vec<String>,
    /// The rows that stay with the question on every page (long arguments).
    footer: Vec<String>,
    /// Rows of the question per page.
    page: usize,
    /// How many rows have been shown.
    shown: usize,
    /// The question's second step, which its last line asks for.
    step: Option<ConfirmStep>,
}

impl Paged {
    /// `body` (the question without its last line) paged for a screen of `columns` and
    /// `rows`, or `None` when it fits whole with `footer` and the question.
    pub(crate) fn new(
        approval_id: &ApprovalId,
        body: &str,
        footer: Vec<String>,
        (columns, rows): (usize, usize),
        language: Language,
    ) -> Option<Self> {
        let lines: Vec<String> = body.lines().map(str::to_owned).collect();
        if lines.len() + footer.len() + 1 + ANSWER_ROWS <= rows {
            return None;
        }
        let mut paged = Self {
            approval_id: approval_id.clone(),
            language,
            columns,
            lines,
            footer,
            page: 1,
            shown: 0,
            step: None,
        };
        // The status (at its widest), the footer and the question stay on every page.
        let total = paged.lines.len();
        let status = paged.status(total, total).lines().count();
        let fixed = status + paged.footer.len() + 1 + ANSWER_ROWS;
        paged.page = rows.saturating_sub(fixed).max(1);
        Some(paged)
    }

    /// The question asks for `step` instead of a yes.
    #[must_use]
    pub(crate) fn with_step(mut self, step: Option<ConfirmStep>) -> Self {
        self.step = step;
        self
    }

    /// Whether rows are left below those shown.
    pub(crate) fn more(&self) -> bool {
        self.shown < self.lines.len()
    }

    /// The next page: its rows, where it is, the long arguments and the question.
    pub(crate) fn next_page(&mut self) -> String {
        let start = self.shown;
        let end = (start + self.page).min(self.lines.len());
        let mut out = String::new();
        for line in self.lines.get(start..end).unwrap_or_default() {
            out.push_str(line);
            out.push('\n');
        }
        self.shown = end;
        out.push_str(&self.status(start + 1, end));
        out.push_str(&self.closing());
        out
    }

    /// Where the question stands, the long arguments and the question again (after a yes
    /// that came too early).
    pub(crate) fn again(&self) -> String {
        let first = self.shown.saturating_sub(self.page).max(1);
        let mut out = self.status(first, self.shown);
        out.push_str(&self.closing());
        out
    }

    fn status(&self, first: usize, last: usize) -> String {
        let t = texts(self.language);
        let total = self.lines.len();
        let group = |n: usize| grouped_digits(n, t.thousands);
        let range = format!(
            "{} {}–{} {} {}",
            t.rows_shown,
            group(first),
            group(last),
            t.rows_of,
            group(total)
        );
        let text = if self.more() {
            format!("{range} · {}", t.next_rows)
        } else {
            format!("{range}: {}", t.the_end)
        };
        wrap("  ├─ ", "  │    ", &text, self.columns)
    }

    fn closing(&self) -> String {
        let mut out = String::new();
        for line in &self.footer {
            out.push_str(line);
            out.push('\n');
        }
        out.push_str(&question_line(self.language, self.step.as_ref()));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prompt::render_prompt;
    use pretty_assertions::assert_eq;
    use serde_json::json;
    use tau_protocol::Tier;

    fn request(command: &str) -> ApprovalQuestion {
        ApprovalQuestion {
            tool: "run_command".into(),
            tier: Tier::Physical,
            effect: "runs a shell command".into(),
            arguments: json!({"command": command, "timeout_seconds": 30}),
            call_id: "t1".into(),
            channel: "terminal".into(),
            approval_id: ApprovalId::parse("ap_1").unwrap(),
            deadline: None,
            card: Default::default(),
            grant: None,
        }
    }

    fn paged(command: &str, columns: usize, rows: usize) -> Option<Paged> {
        let r = request(command);
        let whole = render_prompt(&r, Language::En, columns);
        let body = whole
            .strip_suffix(&question_line(Language::En, None))
            .unwrap();
        let footer = long_arguments(&r, Language::En, columns, rows);
        Paged::new(
            &ApprovalId::parse("ap_1").unwrap(),
            body,
            footer,
            (columns, rows),
            Language::En,
        )
    }

    #[test]
    fn a_question_that_fits_is_not_paged() {
        assert!(paged("ls -la", 80, 24).is_none());
        assert!(paged(&"x ".repeat(300), 80, 24).is_none());
    }

    #[test]
    fn a_long_command_is_shown_a_page_at_a_time_with_its_length_and_hash() {
        let command = format!("echo start; {}; echo end", "true ".repeat(500));
        let mut pager = paged(&command, 80, 24).unwrap();
        let mut pages = Vec::new();
        while pager.more() {
            pages.push(pager.next_page());
        }
        let all = pages.join("\n---\n");
        for page in &pages {
            assert!(page.lines().count() < 24, "{page}");
            assert!(page.contains("SHA-256"), "{page}");
        }
        assert!(pages.last().unwrap().contains(": the end\n"), "{all}");
        insta::assert_snapshot!(all);
    }

    #[test]
    fn every_row_is_shown_once_in_order() {
        let command = format!("a {} z", "word ".repeat(1000));
        let r = request(&command);
        let whole = render_prompt(&r, Language::En, 80);
        let body = whole
            .strip_suffix(&question_line(Language::En, None))
            .unwrap();
        let mut pager = Paged::new(
            &ApprovalId::parse("ap_1").unwrap(),
            body,
            Vec::new(),
            (80, 24),
            Language::En,
        )
        .unwrap();
        let mut shown = String::new();
        while pager.more() {
            let page = pager.next_page();
            let rows = page
                .lines()
                .filter(|l| !l.starts_with("  ├─ ") && !l.starts_with("  └─ "));
            for line in rows {
                shown.push_str(line);
                shown.push('\n');
            }
        }
        assert_eq!(shown, body);
    }

    #[test]
    fn a_tiny_screen_still_moves_on() {
        let command = "x".repeat(2000);
        let mut pager = paged(&command, 20, 2).unwrap();
        let mut pages = 0;
        while pager.more() {
            let _ = pager.next_page();
            pages += 1;
        }
        assert!(pages > 1);
    }
}
