//! One turn as the chat shows it while it streams: the answer so far, a short line per
//! tool call with its tier and status, what a call gave back (its first lines), notices. Rendered whole each time and packed into
//! as many messages as Telegram needs; the chat edits the ones that changed.

use std::collections::HashMap;
use tau_protocol::{CallFate, CallStatus, ChannelEvent, OutputBlock, Tier, shown_lines};

use tau_core::{Language, display, display_multiline};

use crate::html::{Line, MESSAGE_LIMIT, Style, pack};
use crate::texts::{Texts, counted, texts};

/// The longest progress line shown under a tool.
const PROGRESS_CHARS: usize = 120;

#[derive(Debug, Clone, PartialEq)]
enum Block {
    /// The model's answer, as it came (shown through `display_multiline`).
    Text(String),
    Tool {
        call_id: String,
        tool: String,
        tier: Shown,
        state: ToolState,
        progress: Option<String>,
    },
    Notice(String),
    /// What a call gave back, below its line.
    Output(Vec<OutputBlock>),
}

/// What a tool line says of the call's tier.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Shown {
    Tier(Tier),
    /// No tool of that name is registered: `[tier ?]`.
    UnknownTool,
    /// The call started before this process saw the turn (a restart between question and
    /// answer): no tier shown.
    NotSeen,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum ToolState {
    Running,
    Asking,
    Done(CallStatus),
}

/// A stretch of a turn shown as one or more messages.
#[derive(Debug, Clone)]
pub(crate) struct TurnView {
    blocks: Vec<Block>,
    /// Tiers of the calls seen this turn, for a call that finishes in a later stretch.
    tiers: HashMap<String, Option<Tier>>,
    language: Language,
}

impl TurnView {
    pub(crate) fn new(language: Language) -> Self {
        Self {
            blocks: Vec::new(),
            tiers: HashMap::new(),
            language,
        }
    }

    /// Starts the next stretch (after a question, or a new turn), forgetting what was
    /// shown but not the tiers of this turn's calls.
    pub(crate) fn next_stretch(&mut self) {
        self.blocks.clear();
    }

    /// Starts the next turn.
    pub(crate) fn next_turn(&mut self) {
        self.blocks.clear();
        self.tiers.clear();
    }

    fn tool_mut(&mut self, id: &str) -> Option<&mut Block> {
        self.blocks
            .iter_mut()
            .rev()
            .find(|b| matches!(b, Block::Tool { call_id, .. } if call_id == id))
    }

    /// Takes in an event that changes what this stretch shows; returns false for the
    /// events the chat handles itself (questions, their answers, the turn's end).
    pub(crate) fn apply(&mut self, event: &ChannelEvent) -> bool {
        match event {
            ChannelEvent::TextDelta { text } => {
                if let Some(Block::Text(so_far)) = self.blocks.last_mut() {
                    so_far.push_str(text);
                } else {
                    self.blocks.push(Block::Text(text.clone()));
                }
            }
            ChannelEvent::ToolCallStarted {
                call_id,
                tool,
                tier,
                ..
            } => {
                self.tiers.insert(call_id.clone(), *tier);
                self.blocks.push(Block::Tool {
                    call_id: call_id.clone(),
                    tool: tool.clone(),
                    tier: tier.map_or(Shown::UnknownTool, Shown::Tier),
                    state: ToolState::Running,
                    progress: None,
                });
            }
            ChannelEvent::ToolProgress { call_id, message } => {
                if let Some(Block::Tool { progress, .. }) = self.tool_mut(call_id) {
                    *progress = Some(message.clone());
                }
            }
            ChannelEvent::ToolCallFinished {
                call_id,
                tool,
                fate: CallFate { status, .. },
                ..
            } => match self.tool_mut(call_id) {
                Some(Block::Tool {
                    state, progress, ..
                }) => {
                    *state = ToolState::Done(*status);
                    *progress = None;
                }
                // Started in an earlier stretch (before a question): say it here.
                _ => self.blocks.push(Block::Tool {
                    call_id: call_id.clone(),
                    tool: tool.clone(),
                    tier: match self.tiers.get(call_id) {
                        Some(Some(tier)) => Shown::Tier(*tier),
                        Some(None) => Shown::UnknownTool,
                        None => Shown::NotSeen,
                    },
                    state: ToolState::Done(*status),
                    progress: None,
                }),
            },
            ChannelEvent::ApprovalRequested(question) => {
                self.tiers
                    .insert(question.call_id.clone(), Some(question.tier));
                if let Some(Block::Tool { state, .. }) = self.tool_mut(&question.call_id) {
                    *state = ToolState::Asking;
                }
                return false;
            }
            ChannelEvent::ToolOutput { call_id, blocks } => {
                let status = match self.tool_mut(call_id) {
                    Some(Block::Tool {
                        state: ToolState::Done(status),
                        ..
                    }) => Some(*status),
                    _ => None,
                };
                if !status.is_some_and(|s| OutputBlock::worth_showing(s, blocks)) {
                    return true;
                }
                self.blocks.push(Block::Output(blocks.clone()));
            }
            ChannelEvent::Notice { text, .. } => self.blocks.push(Block::Notice(text.clone())),
            ChannelEvent::ApprovalDecided { .. } | ChannelEvent::TurnEnded { .. } => return false,
        }
        true
    }

    fn lines(&self) -> Vec<Line> {
        let t = texts(self.language);
        let mut lines = Vec::new();
        for block in &self.blocks {
            match block {
                Block::Text(text) => lines.extend(
                    display_multiline(text)
                        .split('\n')
                        .map(|l| Line::new(l, Style::Plain)),
                ),
                Block::Tool {
                    tool,
                    tier,
                    state,
                    progress,
                    ..
                } => {
                    let tier = match tier {
                        Shown::Tier(tier) => format!("[{} {tier}] ", t.tier),
                        Shown::UnknownTool => format!("[{} ?] ", t.tier),
                        Shown::NotSeen => String::new(),
                    };
                    let status = match state {
                        ToolState::Running => t.running,
                        ToolState::Asking => t.waiting,
                        ToolState::Done(CallStatus::Success) => t.result_ok,
                        ToolState::Done(CallStatus::Error) => t.result_error,
                        ToolState::Done(CallStatus::Refused) => t.result_refused,
                        ToolState::Done(CallStatus::UnknownTool) => t.result_unknown_tool,
                        ToolState::Done(CallStatus::Invalid) => t.result_invalid,
                        ToolState::Done(CallStatus::Cancelled) => t.result_cancelled,
                    };
                    let mut line = format!("· {tier}{} — {status}", display(tool));
                    if let Some(progress) = progress {
                        let progress: String =
                            display(progress).chars().take(PROGRESS_CHARS).collect();
                        line.push_str(&format!(" {progress}"));
                    }
                    lines.push(Line::new(line, Style::Italic));
                }
                Block::Notice(text) => {
                    lines.push(Line::new(format!("! {}", display(text)), Style::Italic));
                }
                Block::Output(blocks) => output_lines(t, blocks, &mut lines),
            }
        }
        lines
    }

    /// The stretch as messages, each within Telegram's limit.
    pub(crate) fn messages(&self) -> Vec<String> {
        pack(&self.lines(), MESSAGE_LIMIT)
    }
}

/// A call's output: its fields on one line, each text's first lines as code, and how
/// many lines more there are.
fn output_lines(t: &Texts, blocks: &[OutputBlock], lines: &mut Vec<Line>) {
    let fields: Vec<String> = blocks
        .iter()
        .filter_map(|block| match block {
            OutputBlock::Field { name, value } => {
                Some(format!("{} {}", display(name), display(value)))
            }
            OutputBlock::Text { .. } => None,
        })
        .collect();
    if !fields.is_empty() {
        lines.push(Line::new(
            format!("  {}", fields.join(" · ")),
            Style::Italic,
        ));
    }
    for block in blocks {
        if let OutputBlock::Text { name, text } = block {
            if let Some(name) = name {
                lines.push(Line::new(format!("  {}", display(name)), Style::Italic));
            }
            let (shown, more) = shown_lines(text);
            for line in shown {
                lines.push(Line::new(display(line), Style::Code));
            }
            if more > 0 {
                lines.push(Line::new(
                    counted(t.more_lines, more, t.thousands),
                    Style::Italic,
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;
    use tau_protocol::{Approval, DecidedBy, NoticeKind};

    fn started(id: &str, tool: &str, tier: Option<Tier>) -> ChannelEvent {
        ChannelEvent::ToolCallStarted {
            call_id: id.into(),
            tool: tool.into(),
            tier,
            effect: None,
            arguments: json!({}),
        }
    }

    fn finished(id: &str, tool: &str, status: CallStatus) -> ChannelEvent {
        ChannelEvent::ToolCallFinished {
            call_id: id.into(),
            tool: tool.into(),
            fate: tau_protocol::CallFate {
                status,
                approval: Approval::NotRequired,
                decided_by: DecidedBy::Policy,
            },
            duration_ms: None,
            result_summary: None,
            provenance: Default::default(),
        }
    }

    fn text(t: &str) -> ChannelEvent {
        ChannelEvent::TextDelta { text: t.into() }
    }

    #[test]
    fn a_turn_streams_into_one_message_with_tool_lines() {
        let mut view = TurnView::new(Language::En);
        for event in [
            text("Let me "),
            text("check <the> time."),
            started("t1", "clock", Some(Tier::Read)),
            ChannelEvent::ToolProgress {
                call_id: "t1".into(),
                message: "reading\u{1b}[2J".into(),
            },
        ] {
            assert!(view.apply(&event));
        }
        insta::assert_snapshot!("streaming", view.messages().join("\n=====\n"));
        for event in [
            finished("t1", "clock", CallStatus::Success),
            started("t2", "hallucinated", None),
            finished("t2", "hallucinated", CallStatus::UnknownTool),
            text("It is 14:03.\n\nDone & dusted"),
            ChannelEvent::Notice {
                kind: NoticeKind::Cancelled,
                text: "Cancelled.".into(),
            },
        ] {
            assert!(view.apply(&event));
        }
        insta::assert_snapshot!("finished", view.messages().join("\n=====\n"));
    }

    #[test]
    fn a_commands_output_shows_as_code_its_first_lines_and_escaped() {
        let mut view = TurnView::new(Language::En);
        let stdout: String = (1..=10).map(|n| format!("<b>{n}</b>\n")).collect();
        for event in [
            started("t1", "run_command", Some(Tier::Physical)),
            finished("t1", "run_command", CallStatus::Success),
            ChannelEvent::ToolOutput {
                call_id: "t1".into(),
                blocks: vec![
                    OutputBlock::Field {
                        name: "exit_code".into(),
                        value: "0".into(),
                    },
                    OutputBlock::Text {
                        name: Some("stdout".into()),
                        text: stdout,
                    },
                ],
            },
            // A refusal's text is tau's own: not shown again.
            started("t2", "run_command", Some(Tier::Physical)),
            finished("t2", "run_command", CallStatus::Refused),
            ChannelEvent::ToolOutput {
                call_id: "t2".into(),
                blocks: vec![OutputBlock::Text {
                    name: None,
                    text: "The user did not approve this action".into(),
                }],
            },
        ] {
            assert!(view.apply(&event));
        }
        let shown = view.messages().join("\n=====\n");
        assert!(!shown.contains("<b>"), "{shown}");
        assert!(!shown.contains("did not approve"), "{shown}");
        insta::assert_snapshot!(shown);
    }

    #[test]
    fn tool_lines_in_turkish_and_a_call_finished_after_a_question() {
        let mut view = TurnView::new(Language::Tr);
        view.apply(&started("t1", "run_command", Some(Tier::Physical)));
        let asked = ChannelEvent::ApprovalRequested(Box::new(tau_protocol::ApprovalQuestion {
            approval_id: tau_protocol::ApprovalId::parse("ap_1").unwrap(),
            call_id: "t1".into(),
            tool: "run_command".into(),
            tier: Tier::Physical,
            effect: "runs".into(),
            arguments: json!({}),
            channel: "telegram".into(),
            deadline: None,
            card: Default::default(),
            grant: None,
        }));
        assert!(!view.apply(&asked));
        let before = view.messages().join("");
        view.next_stretch();
        view.apply(&finished("t1", "run_command", CallStatus::Refused));
        insta::assert_snapshot!(format!("{before}\n=====\n{}", view.messages().join("")));
    }

    #[test]
    fn a_call_this_process_never_saw_start_has_no_tier() {
        let mut view = TurnView::new(Language::En);
        view.apply(&finished("t9", "run_command", CallStatus::Success));
        assert_eq!(view.messages(), vec!["<i>· run_command — ok</i>"]);
    }

    #[test]
    fn a_long_answer_takes_several_messages_within_the_limit() {
        let mut view = TurnView::new(Language::En);
        view.apply(&text(&"word ".repeat(2000)));
        let messages = view.messages();
        assert_eq!(messages.len(), 3);
        for message in &messages {
            assert!(message.encode_utf16().count() <= MESSAGE_LIMIT);
        }
        assert_eq!(messages.concat(), "word ".repeat(2000));
    }

    #[test]
    fn an_empty_or_blank_stretch_sends_nothing() {
        let mut view = TurnView::new(Language::En);
        assert_eq!(view.messages(), Vec::<String>::new());
        view.apply(&text("  \n "));
        assert_eq!(view.messages(), Vec::<String>::new());
    }
}
