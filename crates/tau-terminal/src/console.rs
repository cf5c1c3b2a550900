//! Renders a turn in the terminal: the streamed answer, one line per tool call and its
//! result, progress, notices and the approval prompts, all in the order they happen.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use tau_agent::{ToolResultStatus, TurnEvent};
use tau_core::{ChatEvent, ChatSink, Language, Tier, refusal_text, unknown_tool_text};

use crate::escape::{escape_for_terminal, sorted_json};
use crate::texts::texts;

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
    names: HashMap<String, String>,
    spinner: Option<ProgressBar>,
}

/// The terminal's output. Shared by the turn renderer and the approver.
pub struct Console {
    state: Mutex<State>,
    language: Language,
    style: Style,
    tty: bool,
    tiers: BTreeMap<String, Tier>,
}

impl Console {
    /// `tty` draws spinners; `color` adds ANSI colours. `tiers` labels tool lines.
    pub fn new(
        out: Box<dyn Write + Send>,
        tty: bool,
        color: bool,
        language: Language,
        tiers: BTreeMap<String, Tier>,
    ) -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(State {
                out,
                in_text: false,
                names: HashMap::new(),
                spinner: None,
            }),
            language,
            style: Style::new(color),
            tty,
            tiers,
        })
    }

    pub fn language(&self) -> Language {
        self.language
    }

    pub fn is_tty(&self) -> bool {
        self.tty
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A chat sink that renders every event as it happens.
    pub fn sink(self: &Arc<Self>) -> ChatSink {
        let console = Arc::clone(self);
        ChatSink::from_fn(move |event| console.render(&event))
    }

    /// Prints text as is (ending a streamed answer first).
    pub fn print(&self, text: &str) {
        let mut state = self.lock();
        end_text(&mut state);
        write(&mut state, text);
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

    pub fn render(&self, event: &ChatEvent) {
        let s = self.style;
        let t = texts(self.language);
        let mut state = self.lock();
        match event {
            ChatEvent::Notice { text, .. } => {
                end_text(&mut state);
                write(
                    &mut state,
                    &format!("  {}! {}{}\n", s.yellow, escape_for_terminal(text), s.reset),
                );
            }
            ChatEvent::Turn { event } => match event {
                TurnEvent::TextDelta { text } => {
                    if !state.in_text {
                        write(&mut state, &format!("{}tau>{} ", s.bold, s.reset));
                        state.in_text = true;
                    }
                    // Line breaks and tabs stay; everything else is escaped as in the prompt.
                    write(&mut state, &tau_core::display_multiline(text));
                }
                TurnEvent::ToolUse { tool_use } => {
                    end_text(&mut state);
                    state
                        .names
                        .insert(tool_use.tool_use_id.clone(), tool_use.name.clone());
                    let tier = self
                        .tiers
                        .get(&tool_use.name)
                        .map_or_else(|| "?".to_owned(), ToString::to_string);
                    let arguments = shorten(&sorted_json(&tool_use.input), SHORT_ARGUMENTS);
                    let name = escape_for_terminal(&tool_use.name);
                    write(
                        &mut state,
                        &format!(
                            "  {}· [{} {tier}] {name} {arguments}{}\n",
                            s.dim, t.tier, s.reset
                        ),
                    );
                }
                TurnEvent::ToolProgress { name, message, .. } => {
                    let message = escape_for_terminal(message);
                    if self.tty {
                        let spinner = state.spinner.get_or_insert_with(|| spinner(name));
                        spinner.set_message(message);
                    } else {
                        write(&mut state, &format!("  {}… {message}{}\n", s.dim, s.reset));
                    }
                }
                TurnEvent::ToolResult { result } => {
                    if let Some(spinner) = state.spinner.take() {
                        spinner.finish_and_clear();
                    }
                    let name = state
                        .names
                        .get(&result.tool_use_id)
                        .cloned()
                        .unwrap_or_else(|| result.tool_use_id.clone());
                    let text = result.text();
                    let line = match result.status {
                        ToolResultStatus::Success => format!(
                            "  {}✓ {} {}{}\n",
                            s.green,
                            escape_for_terminal(&name),
                            t.result_ok,
                            s.reset
                        ),
                        ToolResultStatus::Error
                            if text == refusal_text(&name) || text == unknown_tool_text(&name) =>
                        {
                            format!(
                                "  {}✗ {} {}{}\n",
                                s.red,
                                escape_for_terminal(&name),
                                t.result_refused,
                                s.reset
                            )
                        }
                        ToolResultStatus::Error => {
                            let first = text.lines().next().unwrap_or_default();
                            let detail = shorten(&escape_for_terminal(first), SHORT_ERROR);
                            format!(
                                "  {}✗ {} {}: {detail}{}\n",
                                s.red,
                                escape_for_terminal(&name),
                                t.result_error,
                                s.reset
                            )
                        }
                    };
                    write(&mut state, &line);
                }
                TurnEvent::Stop { .. } => end_text(&mut state),
                TurnEvent::Throttled { .. } | TurnEvent::ContextReduced { .. } => {}
            },
        }
    }
}

fn spinner(name: &str) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stdout());
    if let Ok(style) = ProgressStyle::with_template("  {spinner} {prefix} {wide_msg}") {
        bar.set_style(style);
    }
    bar.set_prefix(escape_for_terminal(name));
    bar.enable_steady_tick(Duration::from_millis(100));
    bar
}

fn end_text(state: &mut State) {
    if state.in_text {
        state.in_text = false;
        write(state, "\n");
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

fn shorten(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}
