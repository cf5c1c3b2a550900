//! How a channel event is drawn: the text, the tool lines and their fates, the
//! questions and the decisions.

use tau_core::{Language, Notice};
use tau_protocol::{ApprovalQuestion, CallStatus, ChannelEvent, DecidedBy, Decision, OutputBlock};

use super::{
    Console, SHORT_ARGUMENTS, SHORT_ERROR, State, Style, end_text, passkey_question_line, spinner,
    stop_thinking, thinking_spinner, write, write_question,
};
use crate::escape::{escape_for_terminal, sorted_json};
use crate::output::output_lines;
use crate::pager::{Paged, long_arguments};
use crate::prompt::{question_line, render_prompt};
use crate::texts::{Texts, texts};

impl Console {
    pub fn render(&self, event: &ChannelEvent) {
        let s = self.style;
        let t = texts(self.language);
        let mut state = self.lock();
        stop_thinking(&mut state);
        if !matches!(event, ChannelEvent::TextDelta { .. }) && !state.held_whitespace.is_empty() {
            let held = std::mem::take(&mut state.held_whitespace);
            write(&mut state, &tau_core::display_multiline(&held));
        }
        match event {
            ChannelEvent::TextDelta { text } => {
                if !state.in_text {
                    write(&mut state, &format!("{}tau>{} ", s.bold, s.reset));
                    state.in_text = true;
                }
                // Line breaks and tabs stay; everything else is escaped as in the prompt.
                let mut text = std::mem::take(&mut state.held_whitespace) + text;
                let kept = text.trim_end_matches(|c: char| c.is_whitespace() && c != '\n');
                state.held_whitespace = text.split_off(kept.len());
                write(&mut state, &tau_core::display_multiline(&text));
            }
            ChannelEvent::ToolCallStarted {
                tool,
                tier,
                arguments,
                ..
            } => {
                end_text(&mut state);
                let tier = tier.map_or_else(|| "?".to_owned(), |t| t.to_string());
                let arguments = tau_protocol::ellipsized(&sorted_json(arguments), SHORT_ARGUMENTS);
                let name = escape_for_terminal(tool);
                write(
                    &mut state,
                    &format!(
                        "  {}· [{} {tier}] {name} {arguments}{}\n",
                        s.dim, t.tier, s.reset
                    ),
                );
            }
            ChannelEvent::ToolProgress { message, .. } => {
                let message = escape_for_terminal(message);
                if self.tty {
                    let spinner = state.spinner.get_or_insert_with(spinner);
                    spinner.set_message(message);
                } else {
                    write(&mut state, &format!("  {}… {message}{}\n", s.dim, s.reset));
                }
            }
            ChannelEvent::ApprovalRequested(request) => {
                end_text(&mut state);
                let screen = crate::width::screen(self.tty, state.question_screen.is_some());
                let noted =
                    state
                        .passkeys
                        .as_ref()
                        .and_then(|asks| match (asks.not_yours)(request) {
                            Some(why) => Some(with_note(
                                request,
                                t.approvers_label,
                                format!("{why}; {}", t.approvers_note),
                            )),
                            None => (asks.takes_passkey)(request).then(|| {
                                with_note(request, t.passkey_label, t.passkey_note.into())
                            }),
                        });
                let passkey = noted.is_some();
                let text = if let Some(noted) = noted {
                    state.passkey_questions.insert(request.approval_id.clone());
                    let text = self.question(&mut state, &noted, screen);
                    let step = question_line(self.language, request.card.confirm.as_ref());
                    match text.strip_suffix(&step) {
                        Some(card) => card.to_owned() + &passkey_question_line(self.language),
                        None => text,
                    }
                } else {
                    self.question(&mut state, request, screen)
                };
                state.passkey_open = passkey;
                write_question(&mut state, &text);
                state.question_open = true;
                state.step.clone_from(&request.card.confirm);
                // Only now is the question on screen: its guard starts here.
                if let Some(questions) = &state.questions {
                    questions.drawn(&request.approval_id);
                }
            }
            ChannelEvent::ApprovalDecided {
                approval_id,
                tool,
                ruling:
                    tau_protocol::Ruling {
                        decision,
                        decided_by,
                    },
                ..
            } => {
                if let Some(questions) = &state.questions {
                    questions.decided(approval_id);
                }
                state.paged.take_if(|p| p.approval_id == *approval_id);
                if state.passkey_questions.remove(approval_id) {
                    state.passkey_open = false;
                }
                let mut line = String::new();
                if std::mem::take(&mut state.question_open) {
                    // Nobody ended the prompt's line: the wait ended without an answer.
                    line.push('\n');
                }
                line.push_str(&decision_line(
                    t,
                    s,
                    self.language,
                    tool,
                    *decision,
                    decided_by,
                ));
                write_question(&mut state, &line);
            }
            ChannelEvent::ToolCallFinished {
                call_id,
                tool,
                fate: tau_protocol::CallFate { status, .. },
                result_summary,
                ..
            } => {
                state.finished.insert(call_id.clone(), *status);
                if let Some(spinner) = state.spinner.take() {
                    spinner.finish_and_clear();
                }
                let name = escape_for_terminal(tool);
                let line = match status {
                    CallStatus::Success => {
                        format!("  {}✓ {name} {}{}\n", s.green, t.result_ok, s.reset)
                    }
                    CallStatus::Error => {
                        let summary = result_summary.as_deref().unwrap_or_default();
                        let first = summary.lines().next().unwrap_or_default();
                        let detail =
                            tau_protocol::ellipsized(&escape_for_terminal(first), SHORT_ERROR);
                        format!(
                            "  {}✗ {name} {}: {detail}{}\n",
                            s.red, t.result_error, s.reset
                        )
                    }
                    CallStatus::Refused => {
                        format!("  {}✗ {name} {}{}\n", s.red, t.result_refused, s.reset)
                    }
                    CallStatus::UnknownTool => {
                        format!("  {}✗ {name} {}{}\n", s.red, t.result_unknown_tool, s.reset)
                    }
                    CallStatus::Invalid => {
                        format!("  {}✗ {name} {}{}\n", s.red, t.result_invalid, s.reset)
                    }
                    CallStatus::Cancelled => {
                        format!("  {}✗ {name} {}{}\n", s.red, t.result_cancelled, s.reset)
                    }
                };
                write(&mut state, &line);
                // The model is asked again with the result.
                if self.tty {
                    state.thinking = Some(thinking_spinner(t.thinking));
                }
            }
            ChannelEvent::ToolOutput { call_id, blocks } => {
                let Some(status) = state.finished.remove(call_id) else {
                    return;
                };
                if OutputBlock::worth_showing(status, blocks) {
                    write(
                        &mut state,
                        &output_lines([t.more_line, t.more_lines], s.dim, s.reset, blocks),
                    );
                }
                if self.tty {
                    state.thinking = Some(thinking_spinner(t.thinking));
                }
            }
            ChannelEvent::Notice { text, .. } => {
                end_text(&mut state);
                write(
                    &mut state,
                    &format!("  {}! {}{}\n", s.yellow, escape_for_terminal(text), s.reset),
                );
            }
            ChannelEvent::TurnEnded { .. } => end_text(&mut state),
        }
    }
}

impl Console {
    /// The question as drawn: whole on a pipe; on a screen of known size with the length
    /// and SHA-256 of every argument longer than the screen, and a page at a time when it
    /// is taller than the screen.
    fn question(
        &self,
        state: &mut State,
        request: &ApprovalQuestion,
        screen: Option<(usize, usize)>,
    ) -> String {
        let Some((columns, rows)) = screen else {
            return render_prompt(request, self.language, crate::width::columns(self.tty));
        };
        let whole = render_prompt(request, self.language, columns);
        let step = request.card.confirm.as_ref();
        let question = question_line(self.language, step);
        let body = whole.strip_suffix(question.as_str()).unwrap_or(&whole);
        let footer = long_arguments(request, self.language, columns, rows);
        let mut fits = body.to_owned();
        for line in &footer {
            fits.push_str(line);
            fits.push('\n');
        }
        fits.push_str(&question);
        match Paged::new(
            &request.approval_id,
            body,
            footer,
            (columns, rows),
            self.language,
        )
        .map(|paged| paged.with_step(step.cloned()))
        {
            Some(mut paged) => {
                let first = paged.next_page();
                state.paged = Some(paged);
                first
            }
            None => fits,
        }
    }
}

/// The line that closes a question: who decided, and what.
fn decision_line(
    t: &Texts,
    s: Style,
    language: Language,
    tool: &str,
    decision: Decision,
    decided_by: &DecidedBy,
) -> String {
    let refused = |why: &str| format!("  {}✗ {why}{}\n", s.red, s.reset);
    match (decision, decided_by) {
        (Decision::Approved, DecidedBy::Person { .. }) => {
            format!("  {}✓ {}{}\n", s.green, t.approved, s.reset)
        }
        (Decision::Timeout, _) | (_, DecidedBy::Timeout) => format!(
            "  {}! {}{}\n",
            s.yellow,
            escape_for_terminal(
                &Notice::ApprovalTimedOut {
                    tool: tool.to_owned()
                }
                .text(language)
            ),
            s.reset
        ),
        (_, DecidedBy::EndOfInput) => refused(t.refused_end_of_input),
        (_, DecidedBy::Cancelled) => refused(t.refused_cancelled),
        (_, DecidedBy::ApproverFailed) => refused(t.refused_approver_failed),
        (_, DecidedBy::Superseded) => refused(t.refused_superseded),
        (Decision::Rejected, DecidedBy::Person { .. })
        | (
            Decision::Approved | Decision::Rejected,
            DecidedBy::Policy | DecidedBy::Exemption { .. } | DecidedBy::Grant { .. },
        ) => refused(t.refused),
    }
}

/// `request` with the note (`label`: `why`) that a yes typed here approves nothing: it
/// takes a passkey, or it is not the person's. Its grant is not offered: no `always` typed
/// here makes one.
fn with_note(request: &ApprovalQuestion, label: &str, why: String) -> ApprovalQuestion {
    let mut noted = request.clone();
    noted.grant = None;
    noted
        .card
        .notes
        .push(tau_protocol::CardNote::warning(label, why));
    noted
}
