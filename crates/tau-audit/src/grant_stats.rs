//! `tau grants stats`: how often tau asked, per tool, how it was answered and how long a
//! person took, from the audit log; and the calls a person keeps approving, which a grant
//! would cover. It measures and suggests; it never makes a grant.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::io::{self, BufRead};
use std::path::Path;
use tau_protocol::{CallFate, Ruling};

use jiff::{SignedDuration, Timestamp};
use tau_core::{AuditEvent, display};
use tau_protocol::{DecidedBy, Decision};

use crate::record::{Entry, Lines, fold_lines};

/// The same call approved this many times in [`FATIGUE_WINDOW`] is worth a grant: the
/// numbers the card's suggestion uses too.
const FATIGUE_APPROVALS: usize = tau_protocol::SUGGESTION_APPROVALS as usize;
const FATIGUE_WINDOW: SignedDuration =
    SignedDuration::from_hours(24 * tau_protocol::SUGGESTION_DAYS as i64);

#[derive(Default)]
struct ToolCounts {
    asked: usize,
    approved: usize,
    refused: usize,
    by_grant: usize,
    answer_times: Vec<SignedDuration>,
}

/// What the log says, gathered in one pass.
#[derive(Default)]
struct Gathered {
    tools: BTreeMap<String, ToolCounts>,
    /// When each question was asked, by id.
    asked_at: BTreeMap<String, Timestamp>,
    /// Each call (tool and canonical arguments) a person approved: when.
    approvals: BTreeMap<(String, String), Vec<Timestamp>>,
}

impl Gathered {
    fn take(&mut self, entry: &Entry, event: &AuditEvent) {
        let at = entry.time();
        match event {
            AuditEvent::ApprovalRequested(question) => {
                self.tools.entry(question.tool.clone()).or_default().asked += 1;
                if let Some(at) = at {
                    self.asked_at.insert(question.approval_id.to_string(), at);
                }
            }
            AuditEvent::Approval {
                approval_id,
                tool,
                arguments,
                ruling:
                    Ruling {
                        decision,
                        decided_by: DecidedBy::Person { .. },
                    },
                ..
            } => {
                let counts = self.tools.entry(tool.clone()).or_default();
                match decision {
                    Decision::Approved => counts.approved += 1,
                    Decision::Rejected => counts.refused += 1,
                    Decision::Timeout => return,
                }
                let asked = self.asked_at.get(approval_id.as_str());
                if let (Some(asked), Some(at)) = (asked, at) {
                    counts.answer_times.push(at.duration_since(*asked));
                }
                if let (Decision::Approved, Some(at)) = (decision, at) {
                    self.approvals
                        .entry((tool.clone(), tau_core::sorted_json(arguments)))
                        .or_default()
                        .push(at);
                }
            }
            AuditEvent::ToolCall {
                tool,
                fate:
                    CallFate {
                        decided_by: DecidedBy::Grant { .. },
                        ..
                    },
                ..
            } => {
                self.tools.entry(tool.clone()).or_default().by_grant += 1;
            }
            AuditEvent::ToolCall { .. }
            | AuditEvent::Approval { .. }
            | AuditEvent::GrantCreated(_)
            | AuditEvent::GrantUsed { .. }
            | AuditEvent::GrantPinned { .. }
            | AuditEvent::GrantRevoked { .. }
            | AuditEvent::Error { .. }
            | AuditEvent::TurnLimit { .. }
            | AuditEvent::TurnEnd { .. }
            | AuditEvent::RoutineRun { .. }
            | AuditEvent::AnswerRefused { .. }
            | AuditEvent::WebhookRefused { .. }
            | AuditEvent::EffectUncertain { .. }
            | AuditEvent::ChannelStopped { .. } => {}
        }
    }
}

fn median(times: &mut [SignedDuration]) -> Option<SignedDuration> {
    times.sort_unstable();
    let middle = times.len() / 2;
    match times.len() {
        0 => None,
        n if n % 2 == 1 => times.get(middle).copied(),
        _ => {
            let low = times.get(middle - 1)?;
            let high = times.get(middle)?;
            Some((*low + *high) / 2)
        }
    }
}

fn seconds(duration: SignedDuration) -> String {
    let secs = duration.as_secs_f64().max(0.0);
    if secs < 60.0 {
        format!("{secs:.1} s")
    } else {
        format!("{:.1} min", secs / 60.0)
    }
}

/// The stats of the log read from `lines`, as of `now`. Lines that do not read are
/// skipped: `tau audit verify` is where a damaged log is reported.
fn render(lines: impl BufRead, now: Timestamp) -> io::Result<String> {
    let mut gathered = Gathered::default();
    fold_lines(Lines::new(lines), |entry, event| {
        gathered.take(entry, event);
    })?;
    if gathered.tools.is_empty() {
        return Ok("no tier-2 questions in the audit log yet\n".to_owned());
    }
    let width = gathered
        .tools
        .keys()
        .map(|t| display(t).chars().count())
        .max()
        .unwrap_or(4)
        .max(4);
    let mut out = format!(
        "{:<width$}  asked  approved  refused  by grant  median answer\n",
        "tool"
    );
    for (tool, counts) in &mut gathered.tools {
        let answer = median(&mut counts.answer_times).map_or_else(|| "-".to_owned(), seconds);
        let _ = writeln!(
            out,
            "{:<width$}  {:>5}  {:>8}  {:>7}  {:>8}  {answer}",
            display(tool),
            counts.asked,
            counts.approved,
            counts.refused,
            counts.by_grant,
        );
    }
    let since = now.checked_sub(FATIGUE_WINDOW).unwrap_or(Timestamp::MIN);
    let tiring: Vec<_> = gathered
        .approvals
        .iter()
        .map(|(call, times)| (call, times.iter().filter(|t| **t >= since).count()))
        .filter(|(_, count)| *count >= FATIGUE_APPROVALS)
        .collect();
    if tiring.is_empty() {
        let _ = writeln!(
            out,
            "\nno call was approved {FATIGUE_APPROVALS} times in the last 7 days"
        );
    } else {
        let _ = writeln!(
            out,
            "\napproved {FATIGUE_APPROVALS} times or more in the last 7 days ('always' at its next question would cover it):"
        );
        for ((tool, arguments), count) in tiring {
            let _ = writeln!(
                out,
                "  {} {}  {count} times",
                display(tool),
                display(arguments)
            );
        }
    }
    Ok(out)
}

/// `tau grants stats` of the log at `path`, as of `now`.
pub fn grant_stats(path: &Path, now: Timestamp) -> io::Result<String> {
    match std::fs::File::open(path) {
        Ok(file) => render(io::BufReader::new(file), now),
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            Ok("no tier-2 questions in the audit log yet\n".to_owned())
        }
        Err(error) => Err(error),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::test_lines::{answered, approved, asked, by_grant};

    fn log(lines: &[Value]) -> String {
        let mut out = String::new();
        for line in lines {
            out.push_str(&line.to_string());
            out.push('\n');
        }
        out
    }

    #[test]
    fn each_tool_counts_its_questions_answers_grant_runs_and_median_answer_time() {
        let now: Timestamp = "2026-12-03T12:00:00Z".parse().unwrap();
        let lines = [
            asked("ap_1", "run_command", "2026-12-01T10:00:00Z"),
            approved("ap_1", "2026-12-01T10:00:04Z"),
            asked("ap_2", "run_command", "2026-12-02T10:00:00Z"),
            approved("ap_2", "2026-12-02T10:00:02Z"),
            asked("ap_3", "run_command", "2026-12-03T10:00:00Z"),
            approved("ap_3", "2026-12-03T10:00:10Z"),
            asked("ap_4", "device_set", "2026-12-03T11:00:00Z"),
            answered(
                "ap_4",
                "device_set",
                "2026-12-03T11:02:00Z",
                "rejected",
                "person",
            ),
            // The wait ended: asked, never answered by a person.
            asked("ap_5", "device_set", "2026-12-03T11:10:00Z"),
            answered(
                "ap_5",
                "device_set",
                "2026-12-03T11:40:00Z",
                "timeout",
                "timeout",
            ),
            by_grant("run_command", "2026-12-03T11:50:00Z"),
            json!({"type": "turn_end", "at": "2026-12-03T11:50:01Z"}),
        ];
        let mut text = log(&lines);
        text.push_str("not json at all\n");
        let out = render(text.as_bytes(), now).unwrap();
        insta::assert_snapshot!(out);
        assert!(
            out.contains("run_command      3         3        0         1  4.0 s"),
            "{out}"
        );
    }

    #[test]
    fn approvals_older_than_a_week_do_not_count_toward_a_suggestion() {
        let now: Timestamp = "2026-12-20T12:00:00Z".parse().unwrap();
        let lines = [
            approved("ap_1", "2026-12-01T10:00:04Z"),
            approved("ap_2", "2026-12-19T10:00:02Z"),
            approved("ap_3", "2026-12-20T10:00:10Z"),
        ];
        let out = render(log(&lines).as_bytes(), now).unwrap();
        assert!(
            out.ends_with("\nno call was approved 3 times in the last 7 days\n"),
            "{out}"
        );
    }

    #[test]
    fn an_empty_or_missing_log_says_so() {
        let now = Timestamp::now();
        assert_eq!(
            render(&b""[..], now).unwrap(),
            "no tier-2 questions in the audit log yet\n"
        );
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            grant_stats(&dir.path().join("audit.jsonl"), now).unwrap(),
            "no tier-2 questions in the audit log yet\n"
        );
    }

    #[test]
    fn the_median_of_an_even_count_is_between_the_middle_two() {
        let mut times = [4, 1, 3, 2].map(SignedDuration::from_secs);
        assert_eq!(median(&mut times), Some(SignedDuration::from_millis(2500)));
        assert_eq!(median(&mut []), None);
    }
}
