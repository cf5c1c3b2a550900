//! The conversation as data: what was said and what every tool call became, built from
//! channel events alone (and, for a resumed session, from its stored messages). A call's
//! state is read from the event's fields, never from the text the model reads.

use std::collections::HashMap;
use tau_protocol::{
    Approval, CallFate, CallStatus, ChannelEvent, DecidedBy, Decision, OutputBlock, Ruling, Tier,
};

use serde_json::Value;
use tau_agent::{ContentBlock, Message, Role, ToolResultStatus};
use tau_core::output_blocks;

/// One thing in the transcript, in the order it happened.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Entry {
    /// What the person sent (shown escaped, like everything).
    User(String),
    /// The model's answer as it streamed. Untrusted.
    Assistant(String),
    Call(Box<Call>),
    /// A notice from tau-core, already in the UI language; it may quote a peer.
    Notice(String),
    /// tau's own line about the session.
    Info(String),
}

/// Where a call stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CallState {
    Running,
    /// A question about it is open.
    Waiting,
    Finished(CallStatus),
    /// From a stored session: only whether the model read an error is known.
    Earlier(ToolResultStatus),
}

/// One tool call and its fate.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Call {
    pub call_id: String,
    pub tool: String,
    pub tier: Option<Tier>,
    pub arguments: Value,
    pub state: CallState,
    pub approval: Option<Approval>,
    pub decided_by: Option<DecidedBy>,
    pub duration_ms: Option<u64>,
    /// The tool's last progress line while it runs. Untrusted.
    pub progress: Option<String>,
    /// The start of the result (from the event). Untrusted.
    pub summary: Option<String>,
    /// The whole result, once the turn is over. Untrusted.
    pub result: Option<String>,
    pub expanded: bool,
}

impl Call {
    fn new(call_id: &str, tool: &str, tier: Option<Tier>, arguments: Value) -> Self {
        Self {
            call_id: call_id.to_owned(),
            tool: tool.to_owned(),
            tier,
            arguments,
            state: CallState::Running,
            approval: None,
            decided_by: None,
            duration_ms: None,
            progress: None,
            summary: None,
            result: None,
            expanded: false,
        }
    }
}

/// The whole conversation on screen.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Transcript {
    pub entries: Vec<Entry>,
    /// The answer still streams into the last entry.
    streaming: bool,
}

impl Transcript {
    pub(crate) fn push(&mut self, entry: Entry) {
        self.streaming = false;
        self.entries.push(entry);
    }

    /// The call with this id, most recent first.
    pub(crate) fn call_mut(&mut self, call_id: &str) -> Option<&mut Call> {
        self.entries.iter_mut().rev().find_map(|entry| match entry {
            Entry::Call(call) if call.call_id == call_id => Some(&mut **call),
            _ => None,
        })
    }

    /// Changes the call with this id, made first when no event announced it.
    fn with_call(&mut self, call_id: &str, tool: &str, change: impl FnOnce(&mut Call)) {
        if self.call_mut(call_id).is_none() {
            self.push(Entry::Call(Box::new(Call::new(
                call_id,
                tool,
                None,
                Value::Null,
            ))));
        }
        if let Some(call) = self.call_mut(call_id) {
            change(call);
        }
    }

    /// Applies one event of the running turn.
    pub(crate) fn apply(&mut self, event: &ChannelEvent) {
        match event {
            ChannelEvent::TextDelta { text } => match self.entries.last_mut() {
                Some(Entry::Assistant(answer)) if self.streaming => answer.push_str(text),
                _ => {
                    self.push(Entry::Assistant(text.clone()));
                    self.streaming = true;
                }
            },
            ChannelEvent::ToolCallStarted {
                call_id,
                tool,
                tier,
                arguments,
                ..
            } => self.push(Entry::Call(Box::new(Call::new(
                call_id,
                tool,
                *tier,
                arguments.clone(),
            )))),
            ChannelEvent::ToolProgress { call_id, message } => {
                if let Some(call) = self.call_mut(call_id) {
                    call.progress = Some(message.clone());
                }
            }
            ChannelEvent::ApprovalRequested(question) => {
                self.with_call(&question.call_id, &question.tool, |call| {
                    call.state = CallState::Waiting;
                    call.tier = Some(question.tier);
                    if call.arguments.is_null() {
                        call.arguments = question.arguments.clone();
                    }
                });
            }
            ChannelEvent::ApprovalDecided {
                call_id,
                tool,
                ruling:
                    Ruling {
                        decision,
                        decided_by,
                    },
                ..
            } => {
                self.with_call(call_id, tool, |call| {
                    call.decided_by = Some(decided_by.clone());
                    if call.state == CallState::Waiting {
                        // Until `tool_call_finished` says more: a yes runs, anything else does not.
                        call.state = match decision {
                            Decision::Approved => CallState::Running,
                            Decision::Rejected | Decision::Timeout => {
                                CallState::Finished(CallStatus::Refused)
                            }
                        };
                        call.approval = Some(match decision {
                            Decision::Approved => Approval::Approved,
                            Decision::Rejected => Approval::Rejected,
                            Decision::Timeout => Approval::Timeout,
                        });
                    }
                });
            }
            ChannelEvent::ToolCallFinished {
                call_id,
                tool,
                fate:
                    CallFate {
                        status,
                        approval,
                        decided_by,
                    },
                duration_ms,
                result_summary,
                ..
            } => {
                self.with_call(call_id, tool, |call| {
                    call.state = CallState::Finished(*status);
                    call.approval = Some(*approval);
                    call.decided_by = Some(decided_by.clone());
                    call.duration_ms = *duration_ms;
                    call.summary.clone_from(result_summary);
                    call.progress = None;
                });
            }
            // The whole output, at once: Ctrl-O shows it as text.
            ChannelEvent::ToolOutput { call_id, blocks } => {
                if let Some(call) = self.call_mut(call_id) {
                    call.result = Some(output_text(blocks));
                }
            }
            ChannelEvent::Notice { text, .. } => self.push(Entry::Notice(text.clone())),
            ChannelEvent::TurnEnded { .. } => self.streaming = false,
        }
    }

    /// Adds the whole results of calls from `messages` (the conversation after a turn).
    pub(crate) fn attach_results(&mut self, messages: &[Message]) {
        let results = results_by_call(messages);
        for entry in &mut self.entries {
            if let Entry::Call(call) = entry
                && call.result.is_none()
                && let Some((_, text)) = results.get(call.call_id.as_str())
            {
                call.result = Some(text.clone());
            }
        }
    }

    /// The transcript of a stored session: its texts and its calls, each call with the
    /// tier `tier_of` gives it now and its result.
    pub(crate) fn from_history(
        messages: &[Message],
        tier_of: &dyn Fn(&str) -> Option<Tier>,
    ) -> Self {
        let results = results_by_call(messages);
        let mut transcript = Self::default();
        for message in messages {
            for block in &message.content {
                match (message.role, block) {
                    (Role::User, ContentBlock::Text(text)) => {
                        transcript.push(Entry::User(text.clone()));
                    }
                    (Role::Assistant, ContentBlock::Text(text)) => {
                        transcript.push(Entry::Assistant(text.clone()));
                    }
                    (_, ContentBlock::ToolUse(tool_use)) => {
                        let mut call = Call::new(
                            &tool_use.tool_use_id,
                            &tool_use.name,
                            tier_of(&tool_use.name),
                            tool_use.input.clone(),
                        );
                        if let Some((status, text)) = results.get(tool_use.tool_use_id.as_str()) {
                            call.state = CallState::Earlier(*status);
                            call.result = Some(text.clone());
                        } else {
                            call.state = CallState::Earlier(ToolResultStatus::Error);
                        }
                        transcript.push(Entry::Call(Box::new(call)));
                    }
                    (Role::Assistant, ContentBlock::ToolResult(_))
                    | (Role::User, ContentBlock::ToolResult(_)) => {}
                }
            }
        }
        transcript
    }

    /// The user prompts, oldest first (the input history of a resumed session).
    pub(crate) fn prompts(&self) -> Vec<String> {
        self.entries
            .iter()
            .filter_map(|entry| match entry {
                Entry::User(text) => Some(text.clone()),
                _ => None,
            })
            .collect()
    }

    /// Tier-2 calls that started and were neither asked about nor finished: the questions
    /// still to come in this turn.
    pub(crate) fn questions_to_come(&self) -> usize {
        self.entries
            .iter()
            .filter(|entry| {
                matches!(entry, Entry::Call(call) if call.tier == Some(Tier::Physical)
                    && call.state == CallState::Running
                    && call.decided_by.is_none())
            })
            .count()
    }

    /// Indexes of the entries that are calls.
    pub(crate) fn call_indexes(&self) -> Vec<usize> {
        self.entries
            .iter()
            .enumerate()
            .filter_map(|(i, entry)| matches!(entry, Entry::Call(_)).then_some(i))
            .collect()
    }
}

/// A call's output as the expanded call shows it: its fields on one line, then each text
/// whole under its name, its lines kept (never the JSON the model reads).
pub(crate) fn output_text(blocks: &[OutputBlock]) -> String {
    let fields: Vec<String> = blocks
        .iter()
        .filter_map(|block| match block {
            OutputBlock::Field { name, value } => Some(format!("{name} {value}")),
            OutputBlock::Text { .. } => None,
        })
        .collect();
    let mut parts = Vec::new();
    if !fields.is_empty() {
        parts.push(fields.join(" · "));
    }
    for block in blocks {
        if let OutputBlock::Text { name, text } = block {
            match name {
                Some(name) => parts.push(format!("{name}:\n{}", text.trim_end_matches('\n'))),
                None => parts.push(text.trim_end_matches('\n').to_owned()),
            }
        }
    }
    parts.join("\n")
}

fn results_by_call(messages: &[Message]) -> HashMap<&str, (ToolResultStatus, String)> {
    messages
        .iter()
        .flat_map(|message| &message.content)
        .filter_map(|block| match block {
            ContentBlock::ToolResult(result) => Some((
                result.tool_use_id.as_str(),
                (result.status, output_text(&output_blocks(result))),
            )),
            ContentBlock::Text(_) | ContentBlock::ToolUse(_) => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn a_calls_output_arrives_as_text_never_as_json() {
        let mut transcript = Transcript::default();
        transcript.apply(&ChannelEvent::ToolCallStarted {
            call_id: "t1".into(),
            tool: "run_command".into(),
            tier: Some(Tier::Physical),
            effect: None,
            arguments: json!({"command": "ls"}),
        });
        transcript.apply(&ChannelEvent::ToolOutput {
            call_id: "t1".into(),
            blocks: vec![
                OutputBlock::Field {
                    name: "exit_code".into(),
                    value: "0".into(),
                },
                OutputBlock::Text {
                    name: Some("stdout".into()),
                    text: "a\nb\n".into(),
                },
            ],
        });
        let result = transcript.call_mut("t1").and_then(|c| c.result.clone());
        assert_eq!(result.as_deref(), Some("exit_code 0\nstdout:\na\nb"));
    }

    #[test]
    fn a_finish_without_a_start_still_makes_a_call_and_the_status_is_the_fields() {
        let mut transcript = Transcript::default();
        transcript.apply(&ChannelEvent::ToolCallFinished {
            call_id: "t2".into(),
            tool: "clock".into(),
            fate: tau_protocol::CallFate {
                status: CallStatus::Invalid,
                approval: Approval::Refused,
                decided_by: DecidedBy::Policy,
            },
            duration_ms: None,
            result_summary: Some(tau_core::refusal_text("clock")),
            provenance: Default::default(),
        });
        let Some(Entry::Call(call)) = transcript.entries.first() else {
            panic!("no call");
        };
        assert_eq!(call.state, CallState::Finished(CallStatus::Invalid));
        assert_eq!(call.decided_by, Some(DecidedBy::Policy));
    }

    #[test]
    fn text_deltas_join_until_something_else_happens() {
        let mut transcript = Transcript::default();
        for text in ["Hel", "lo"] {
            transcript.apply(&ChannelEvent::TextDelta { text: text.into() });
        }
        transcript.apply(&ChannelEvent::ToolCallStarted {
            call_id: "t1".into(),
            tool: "clock".into(),
            tier: Some(Tier::Read),
            effect: None,
            arguments: json!({}),
        });
        transcript.apply(&ChannelEvent::TextDelta {
            text: "after".into(),
        });
        assert_eq!(transcript.entries.len(), 3);
        assert_eq!(transcript.entries[0], Entry::Assistant("Hello".into()));
        assert_eq!(transcript.entries[2], Entry::Assistant("after".into()));
    }
}
