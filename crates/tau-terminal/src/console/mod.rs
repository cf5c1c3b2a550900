//! Renders a turn in the terminal from its channel events alone: the streamed answer,
//! one line per tool call and its fate, progress, notices and the approval prompts, all in
//! the order they happen. The state of a call is read from the event's fields, never from
//! the text the model reads.

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;
use tau_protocol::{ApprovalId, CallStatus, ConfirmStep};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use tau_core::{ChannelSink, Language};

use crate::escape::escape_for_terminal;
use crate::pager::Paged;
use crate::passkeys::PasskeyQuestions;
use crate::prompt::question_line;
use crate::question::Questions;
use crate::texts::texts;

mod render;
mod unanswered;

const SHORT_ARGUMENTS: usize = 80;
const SHORT_ERROR: usize = 100;

/// ANSI styles, all empty when colour is off (`NO_COLOR`, or not a terminal).
#[derive(Debug, Clone, Copy)]
struct Style {
    dim: &'static str,
    bold: &'static str,
    green: &'static str,
    red: &'static str,
    yellow: &'static str,
    reset: &'static str,
}

impl Style {
    fn new(color: bool) -> Self {
        if color {
            Self {
                dim: "\x1b[2m",
                bold: "\x1b[1m",
                green: "\x1b[32m",
                red: "\x1b[31m",
                yellow: "\x1b[33m",
                reset: "\x1b[0m",
            }
        } else {
            Self {
                dim: "",
                bold: "",
                green: "",
                red: "",
                yellow: "",
                reset: "",
            }
        }
    }
}

struct State {
    out: Box<dyn Write + Send>,
    in_text: bool,
    /// Spaces and tabs that ended the last text delta, held until the text goes on: a run
    /// split across deltas is shown (or marked) as the one run it is.
    held_whitespace: String,
    /// A prompt is on screen and no answer line has ended it yet.
    question_open: bool,
    /// The second step of the question on screen, if it asks for one.
    step: Option<ConfirmStep>,
    spinner: Option<ProgressBar>,
    /// Shown while the model has not answered yet: from the start of a turn, and after
    /// each tool result, until the next thing the turn shows.
    thinking: Option<ProgressBar>,
    /// Told when a question is on screen and when its outcome is.
    questions: Option<Questions>,
    /// Where questions are also drawn: the answering terminal, when stdout is not it.
    question_screen: Option<Box<dyn Write + Send>>,
    /// The question on screen, when it is taller than the screen.
    paged: Option<Paged>,
    /// How each finished call of the turn ended, until its output comes.
    finished: HashMap<String, CallStatus>,
    /// Which questions take a passkey or are not the person's, asked when each is drawn.
    passkeys: Option<PasskeyQuestions>,
    /// The open questions drawn as ones no yes typed here approves.
    passkey_questions: HashSet<ApprovalId>,
    /// The question on screen takes a passkey: its last line says nothing typed runs it.
    passkey_open: bool,
}

/// The terminal's output. Shared by the turn renderer and the approver.
pub struct Console {
    state: Mutex<State>,
    language: Language,
    style: Style,
    tty: bool,
}

impl Console {
    /// `tty` draws spinners; `color` adds ANSI colours.
    pub fn new(
        out: Box<dyn Write + Send>,
        tty: bool,
        color: bool,
        language: Language,
    ) -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(State {
                out,
                in_text: false,
                held_whitespace: String::new(),
                question_open: false,
                step: None,
                spinner: None,
                thinking: None,
                questions: None,
                question_screen: None,
                paged: None,
                finished: HashMap::new(),
                passkeys: None,
                passkey_questions: HashSet::new(),
                passkey_open: false,
            }),
            language,
            style: Style::new(color),
            tty,
        })
    }

    pub fn language(&self) -> Language {
        self.language
    }

    pub fn is_tty(&self) -> bool {
        self.tty
    }

    /// The questions this console draws: each one's guard starts when it is on screen.
    pub(crate) fn draws_for(&self, questions: Questions) {
        self.lock().questions = Some(questions);
    }

    /// Draws every question also on `screen` (the terminal the answers come from, when
    /// stdout is not a terminal), so the person sees what they answer.
    pub fn draw_questions_also_on(&self, screen: Box<dyn Write + Send>) {
        self.lock().question_screen = Some(screen);
    }

    /// Asks `questions` of each question as it is drawn; one that takes a passkey, or is
    /// not the person's, says on its card that no yes typed here approves it.
    pub(crate) fn asks_passkeys(&self, questions: PasskeyQuestions) {
        self.lock().passkeys = Some(questions);
    }

    /// Whether question `approval_id` was drawn as one no yes typed here approves.
    pub(crate) fn refuses_yes(&self, approval_id: &ApprovalId) -> bool {
        self.lock().passkey_questions.contains(approval_id)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A channel sink that renders every event as it happens.
    pub fn sink(self: &Arc<Self>) -> ChannelSink {
        let console = Arc::clone(self);
        ChannelSink::from_fn(move |event| console.render(&event))
    }

    /// Prints text as is (ending a streamed answer first).
    pub fn print(&self, text: &str) {
        let mut state = self.lock();
        stop_thinking(&mut state);
        end_text(&mut state);
        write(&mut state, text);
    }

    /// The model was asked: on a terminal a spinner says so until the turn shows
    /// something. A pipe gets nothing.
    pub fn thinking(&self) {
        if !self.tty {
            return;
        }
        let mut state = self.lock();
        stop_thinking(&mut state);
        state.thinking = Some(thinking_spinner(texts(self.language).thinking));
    }

    /// Prints a notice line.
    pub fn notice(&self, text: &str) {
        let s = self.style;
        self.print(&format!(
            "  {}! {}{}\n",
            s.yellow,
            escape_for_terminal(text),
            s.reset
        ));
    }

    /// The person's answer line ended the open prompt. On a pipe nothing echoes it, so the
    /// line is shown to keep the transcript whole.
    pub fn answered(&self, line: Option<&str>) {
        let mut state = self.lock();
        state.question_open = false;
        if !self.tty {
            let shown = line.map_or_else(String::new, escape_for_terminal);
            write(&mut state, &format!("{shown}\n"));
        }
    }

    /// Whether the paged question for `approval_id` has rows not shown yet.
    pub(crate) fn more_to_show(&self, approval_id: &ApprovalId) -> bool {
        self.lock()
            .paged
            .as_ref()
            .is_some_and(|p| p.approval_id == *approval_id && p.more())
    }

    /// Shows the next rows of the paged question; it is on screen anew (its guard starts
    /// again).
    pub(crate) fn next_page(&self, approval_id: &ApprovalId) {
        let mut state = self.lock();
        let Some(page) = state
            .paged
            .as_mut()
            .filter(|p| p.approval_id == *approval_id)
            .map(Paged::next_page)
        else {
            return;
        };
        write_question(&mut state, &page);
        if let Some(questions) = &state.questions {
            questions.drawn(approval_id);
        }
    }

    /// A yes came before the end of the paged question was on screen: it is no answer.
    pub(crate) fn not_seen_yet(&self, approval_id: &ApprovalId, line: &str) {
        let s = self.style;
        let mut state = self.lock();
        if !self.tty {
            write(&mut state, &format!("{}\n", escape_for_terminal(line)));
        }
        let mut text = format!(
            "  {}· {}{}\n",
            s.dim,
            texts(self.language).not_seen_yet,
            s.reset
        );
        if let Some(paged) = state
            .paged
            .as_ref()
            .filter(|p| p.approval_id == *approval_id)
        {
            text.push_str(&paged.again());
        }
        write_question(&mut state, &text);
        if let Some(questions) = &state.questions {
            questions.drawn(approval_id);
        }
    }

    /// There is nobody to ask: end the prompt's line and say why it will be refused.
    pub fn cannot_ask(&self) {
        let s = self.style;
        let mut state = self.lock();
        state.question_open = false;
        let text = format!(
            "\n  {}! {}{}\n",
            s.yellow,
            texts(self.language).no_terminal,
            s.reset
        );
        write_question(&mut state, &text);
    }
}

/// The last line of the question on screen, as it was drawn.
fn open_question_line(language: Language, state: &State) -> String {
    if state.passkey_open {
        passkey_question_line(language)
    } else {
        question_line(language, state.step.as_ref())
    }
}

/// The last line of a question that takes a passkey: no answer typed here runs it.
fn passkey_question_line(language: Language) -> String {
    format!("  └─ {} ", texts(language).passkey_question)
}

fn spinner() -> ProgressBar {
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stdout());
    if let Ok(style) = ProgressStyle::with_template("  {spinner} {wide_msg}") {
        bar.set_style(style);
    }
    bar.enable_steady_tick(Duration::from_millis(100));
    bar
}

/// The thinking indicator: a spinner, the word and the seconds so far, redrawn in place
/// on stdout (indicatif draws nothing when stdout is not a terminal).
fn thinking_spinner(word: &str) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stdout());
    if let Ok(style) = ProgressStyle::with_template("  {spinner} {msg} {elapsed}") {
        bar.set_style(style);
    }
    bar.set_message(word.to_owned());
    bar.enable_steady_tick(Duration::from_millis(100));
    bar
}

/// Clears the thinking indicator, if it is on screen, before anything else is drawn.
fn stop_thinking(state: &mut State) {
    if let Some(bar) = state.thinking.take() {
        bar.finish_and_clear();
    }
}

fn end_text(state: &mut State) {
    if state.in_text {
        state.in_text = false;
        write(state, "\n");
    }
}

/// Writes a part of a question: to stdout, and to the question screen when there is one.
fn write_question(state: &mut State, text: &str) {
    write(state, text);
    if let Some(screen) = &mut state.question_screen {
        emit(screen, text);
    }
}

fn write(state: &mut State, text: &str) {
    match &state.spinner {
        Some(spinner) => {
            let spinner = spinner.clone();
            spinner.suspend(|| emit(&mut state.out, text));
        }
        None => emit(&mut state.out, text),
    }
}

fn emit(out: &mut Box<dyn Write + Send>, text: &str) {
    // A closed stdout (the reader went away) is not a reason to stop the turn.
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Screen;
    use serde_json::json;
    use tau_protocol::{
        Approval, ChannelEvent, DecidedBy, Decision, NoticeKind, Tier, TurnStop, TurnUsage,
    };

    /// What a pipe shows for these events, the approver's answer line included.
    fn shown(language: Language, answer: Option<&str>, events: &[ChannelEvent]) -> String {
        let screen = Screen::default();
        let console = Console::new(Box::new(screen.clone()), false, false, language);
        for event in events {
            console.render(event);
            if matches!(event, ChannelEvent::ApprovalRequested { .. })
                && let Some(answer) = answer
            {
                console.answered(Some(answer));
            }
        }
        screen.text()
    }

    fn started() -> ChannelEvent {
        ChannelEvent::ToolCallStarted {
            call_id: "t1".into(),
            tool: "mqtt_publish".into(),
            tier: Some(Tier::Physical),
            effect: Some("publishes an MQTT message".into()),
            arguments: json!({"topic": "home/light", "payload": "on"}),
        }
    }

    fn requested() -> ChannelEvent {
        ChannelEvent::ApprovalRequested(Box::new(tau_protocol::ApprovalQuestion {
            approval_id: ApprovalId::parse("ap_1").unwrap(),
            call_id: "t1".into(),
            tool: "mqtt_publish".into(),
            tier: Tier::Physical,
            effect: "publishes an MQTT message".into(),
            arguments: json!({"topic": "home/light", "payload": "on"}),
            channel: "terminal".into(),
            deadline: None,
            card: Default::default(),
            grant: None,
        }))
    }

    fn decided(decision: Decision, decided_by: DecidedBy) -> ChannelEvent {
        ChannelEvent::ApprovalDecided {
            approval_id: ApprovalId::parse("ap_1").unwrap(),
            call_id: "t1".into(),
            tool: "mqtt_publish".into(),
            ruling: tau_protocol::Ruling::new(decision, decided_by),
            grant: None,
        }
    }

    fn finished(status: CallStatus, approval: Approval, summary: &str) -> ChannelEvent {
        ChannelEvent::ToolCallFinished {
            call_id: "t1".into(),
            tool: "mqtt_publish".into(),
            fate: tau_protocol::CallFate {
                status,
                approval,
                decided_by: DecidedBy::person("terminal"),
            },
            duration_ms: Some(3),
            result_summary: Some(summary.into()),
            provenance: Default::default(),
        }
    }

    fn ended() -> ChannelEvent {
        ChannelEvent::TurnEnded {
            stop_reason: TurnStop::EndTurn,
            usage: TurnUsage::default(),
        }
    }

    fn refusal() -> String {
        tau_core::refusal_text("mqtt_publish")
    }

    #[test]
    fn an_approved_call() {
        let events = [
            started(),
            requested(),
            decided(Decision::Approved, DecidedBy::person("terminal")),
            finished(CallStatus::Success, Approval::Approved, "published"),
            ChannelEvent::TextDelta {
                text: "The light is on.".into(),
            },
            ended(),
        ];
        insta::assert_snapshot!(shown(Language::En, Some("y"), &events));
    }

    #[test]
    fn a_refused_call_in_each_language() {
        let events = [
            started(),
            requested(),
            decided(Decision::Rejected, DecidedBy::person("terminal")),
            finished(CallStatus::Refused, Approval::Rejected, &refusal()),
            ended(),
        ];
        let both = format!(
            "{}---\n{}",
            shown(Language::En, Some("n"), &events),
            shown(Language::Tr, Some("h"), &events)
        );
        insta::assert_snapshot!(both);
    }

    #[test]
    fn a_timed_out_call() {
        let events = [
            started(),
            requested(),
            decided(Decision::Timeout, DecidedBy::Timeout),
            finished(CallStatus::Refused, Approval::Timeout, &refusal()),
            ended(),
        ];
        insta::assert_snapshot!(shown(Language::En, None, &events));
    }

    #[test]
    fn an_end_of_input_and_a_cancel_are_not_a_persons_no() {
        let eof = [
            started(),
            requested(),
            decided(Decision::Rejected, DecidedBy::EndOfInput),
            finished(CallStatus::Refused, Approval::Rejected, &refusal()),
        ];
        let cancelled = [
            started(),
            requested(),
            decided(Decision::Rejected, DecidedBy::Cancelled),
            finished(CallStatus::Refused, Approval::Rejected, &refusal()),
            ChannelEvent::Notice {
                kind: NoticeKind::Cancelled,
                text: "Cancelled.".into(),
            },
        ];
        let both = format!(
            "{}---\n{}",
            shown(Language::En, Some(""), &eof),
            shown(Language::En, Some(""), &cancelled)
        );
        insta::assert_snapshot!(both);
    }

    #[test]
    fn unknown_invalid_cancelled_and_failed_calls() {
        let events = [
            ChannelEvent::ToolCallStarted {
                call_id: "t1".into(),
                tool: "open_door".into(),
                tier: None,
                effect: None,
                arguments: json!({}),
            },
            ChannelEvent::ToolCallFinished {
                call_id: "t1".into(),
                tool: "open_door".into(),
                fate: tau_protocol::CallFate {
                    status: CallStatus::UnknownTool,
                    approval: Approval::Refused,
                    decided_by: DecidedBy::Policy,
                },
                duration_ms: None,
                result_summary: Some(tau_core::unknown_tool_text("open_door")),
                provenance: Default::default(),
            },
            ChannelEvent::ToolCallFinished {
                call_id: "t2".into(),
                tool: "clock".into(),
                fate: tau_protocol::CallFate {
                    status: CallStatus::Invalid,
                    approval: Approval::Refused,
                    decided_by: DecidedBy::Policy,
                },
                duration_ms: None,
                result_summary: Some("Error: input is not a JSON object".into()),
                provenance: Default::default(),
            },
            ChannelEvent::ToolCallFinished {
                call_id: "t3".into(),
                tool: "run_command".into(),
                fate: tau_protocol::CallFate {
                    status: CallStatus::Cancelled,
                    approval: Approval::Approved,
                    decided_by: DecidedBy::person("terminal"),
                },
                duration_ms: Some(1200),
                result_summary: Some("Error: stopped".into()),
                provenance: Default::default(),
            },
            ChannelEvent::ToolCallFinished {
                call_id: "t4".into(),
                tool: "read_file".into(),
                fate: tau_protocol::CallFate {
                    status: CallStatus::Error,
                    approval: Approval::NotRequired,
                    decided_by: DecidedBy::Policy,
                },
                duration_ms: Some(1),
                result_summary: Some("Error: no such file\nsecond line".into()),
                provenance: Default::default(),
            },
        ];
        insta::assert_snapshot!(shown(Language::En, None, &events));
    }

    #[test]
    fn the_state_comes_from_the_status_never_from_the_text() {
        // A tool whose own output reads exactly like tau's refusal still ran: it shows as ok.
        let lying = [finished(
            CallStatus::Success,
            Approval::NotRequired,
            &refusal(),
        )];
        assert_eq!(shown(Language::En, None, &lying), "  ✓ mqtt_publish ok\n");
        // And a refusal shows as refused whatever the summary says.
        let refused = [finished(CallStatus::Refused, Approval::Rejected, "done!")];
        assert_eq!(
            shown(Language::En, None, &refused),
            "  ✗ mqtt_publish refused\n"
        );
    }

    #[test]
    fn a_whitespace_run_split_across_deltas_is_shown_as_one_run() {
        let delta = |text: String| ChannelEvent::TextDelta { text };
        let split = [
            delta(format!("sh setup.sh{}", " ".repeat(40))),
            delta(" ".repeat(40)),
            delta(format!("{}; rm -rf ~", " ".repeat(20))),
            ended(),
        ];
        let whole = [
            delta(format!("sh setup.sh{}; rm -rf ~", " ".repeat(100))),
            ended(),
        ];
        let shown_split = shown(Language::En, None, &split);
        assert_eq!(shown_split, shown(Language::En, None, &whole));
        assert!(shown_split.contains("⟨100 spaces⟩"), "{shown_split}");
        // Spaces that end the answer are still shown, before the line ends.
        let trailing = [delta("done".into()), delta("   ".into()), ended()];
        assert_eq!(shown(Language::En, None, &trailing), "tau> done   \n");
    }
}
