//! genai's stream events into tau's chunks.
//!
//! Text streams as it comes. Tool calls are held until the message ends and then emitted
//! whole, one input delta each: genai reports a call's arguments as the text so far, not as
//! a delta, and tau-agent only reads the input when the block closes. Holding them means a
//! duplicated prefix cannot happen, whatever order a server sends the pieces in.

use std::collections::VecDeque;

use genai::chat::{ChatStreamEvent, StopReason as GenaiStop, StreamEnd, ToolCall, Usage};
use serde_json::Value;
use tau_agent::{AgentStop, BlockDelta, BlockStart, ModelError, Role, StreamChunk};

use crate::drive::{Flow, Translate};
use crate::errors::ErrorContext;

pub(crate) struct GenaiTranslator {
    errors: ErrorContext,
    started: bool,
    text_open: bool,
    /// Tool calls by first appearance: id, name, arguments text so far.
    calls: Vec<PendingCall>,
}

struct PendingCall {
    id: String,
    name: String,
    arguments: String,
}

impl GenaiTranslator {
    pub(crate) fn new(errors: ErrorContext) -> Self {
        Self {
            errors,
            started: false,
            text_open: false,
            calls: Vec::new(),
        }
    }

    /// `MessageStart` goes out with the first real event: genai reports its own start
    /// before the HTTP request has been answered.
    fn start(&mut self, out: &mut VecDeque<StreamChunk>) {
        if !self.started {
            self.started = true;
            out.push_back(StreamChunk::MessageStart {
                role: Role::Assistant,
            });
        }
    }

    fn text(&mut self, text: String, out: &mut VecDeque<StreamChunk>) {
        if text.is_empty() {
            return;
        }
        if !self.text_open {
            self.text_open = true;
            out.push_back(StreamChunk::ContentBlockStart {
                start: BlockStart::Text,
            });
        }
        out.push_back(StreamChunk::ContentBlockDelta {
            delta: BlockDelta::Text { text },
        });
    }

    fn close_text(&mut self, out: &mut VecDeque<StreamChunk>) {
        if self.text_open {
            self.text_open = false;
            out.push_back(StreamChunk::ContentBlockStop);
        }
    }

    /// Keeps the newest arguments text of a call; the newest is the longest.
    fn tool_call(&mut self, call: ToolCall) {
        let arguments = arguments_text(&call.fn_arguments);
        match self.calls.iter_mut().find(|c| c.id == call.call_id) {
            Some(pending) => {
                if !call.fn_name.is_empty() {
                    pending.name = call.fn_name;
                }
                if arguments.len() >= pending.arguments.len() {
                    pending.arguments = arguments;
                }
            }
            None => self.calls.push(PendingCall {
                id: call.call_id,
                name: call.fn_name,
                arguments,
            }),
        }
    }

    fn end(&mut self, end: StreamEnd, out: &mut VecDeque<StreamChunk>) {
        self.start(out);
        self.close_text(out);
        let stop_reason = end.captured_stop_reason.as_ref().map(stop_reason);
        let usage = end.captured_usage.as_ref().map(usage);
        // Calls a server sent only whole, at the end, were never seen as chunks.
        for call in end.captured_into_tool_calls().unwrap_or_default() {
            if !self.calls.iter().any(|c| c.id == call.call_id) {
                self.tool_call(call);
            }
        }
        for call in std::mem::take(&mut self.calls) {
            out.push_back(StreamChunk::ContentBlockStart {
                start: BlockStart::ToolUse {
                    tool_use_id: call.id,
                    name: call.name,
                },
            });
            if !call.arguments.is_empty() {
                out.push_back(StreamChunk::ContentBlockDelta {
                    delta: BlockDelta::ToolUseInput {
                        json: call.arguments,
                    },
                });
            }
            out.push_back(StreamChunk::ContentBlockStop);
        }
        out.push_back(StreamChunk::MessageStop {
            stop_reason: stop_reason.unwrap_or(AgentStop::EndTurn),
        });
        if let Some(usage) = usage {
            out.push_back(StreamChunk::Metadata { usage });
        }
    }
}

impl Translate for GenaiTranslator {
    type Item = genai::Result<ChatStreamEvent>;

    fn item(
        &mut self,
        item: Self::Item,
        out: &mut VecDeque<StreamChunk>,
    ) -> Result<Flow, ModelError> {
        let event = item.map_err(|e| crate::genai_model::map_error(&self.errors, e))?;
        match event {
            ChatStreamEvent::Start | ChatStreamEvent::Heartbeat => {}
            // tau has no reasoning block; thinking stays with the provider.
            ChatStreamEvent::ReasoningChunk(_) | ChatStreamEvent::ThoughtSignatureChunk(_) => {
                self.start(out);
            }
            ChatStreamEvent::Chunk(chunk) => {
                self.start(out);
                self.text(chunk.content, out);
            }
            ChatStreamEvent::ToolCallChunk(chunk) => {
                self.start(out);
                self.tool_call(chunk.tool_call);
            }
            ChatStreamEvent::End(end) => {
                self.end(end, out);
                return Ok(Flow::Done);
            }
        }
        Ok(Flow::Continue)
    }
}

/// genai keeps streamed arguments as a JSON string of the raw text; a value that arrived
/// already parsed is written back as JSON.
fn arguments_text(arguments: &Value) -> String {
    match arguments {
        Value::String(text) => text.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn stop_reason(reason: &GenaiStop) -> AgentStop {
    match reason {
        GenaiStop::Completed(_) => AgentStop::EndTurn,
        GenaiStop::MaxTokens(_) => AgentStop::MaxTokens,
        GenaiStop::ToolCall(_) => AgentStop::ToolUse,
        GenaiStop::ContentFilter(_) => AgentStop::ContentFiltered,
        GenaiStop::StopSequence(_) => AgentStop::StopSequence,
        GenaiStop::Other(raw) => match raw.as_str() {
            "guardrail_intervened" => AgentStop::GuardrailIntervened,
            "refusal" => AgentStop::ContentFiltered,
            _ => {
                tracing::debug!(
                    reason = raw.as_str(),
                    "unknown stop reason; taking end_turn"
                );
                AgentStop::EndTurn
            }
        },
    }
}

fn usage(usage: &Usage) -> tau_agent::Usage {
    let count = |n: Option<i32>| n.and_then(|n| u64::try_from(n).ok()).unwrap_or(0);
    let input_tokens = count(usage.prompt_tokens);
    let output_tokens = count(usage.completion_tokens);
    let total_tokens = match usage.total_tokens {
        Some(total) => count(Some(total)),
        None => input_tokens.saturating_add(output_tokens),
    };
    tau_agent::Usage {
        input_tokens,
        output_tokens,
        total_tokens,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use genai::chat::{MessageContent, StreamChunk as GenaiChunk, ToolChunk};
    use pretty_assertions::assert_eq;

    fn call(id: &str, name: &str, arguments: Value) -> ToolCall {
        ToolCall {
            call_id: id.into(),
            fn_name: name.into(),
            fn_arguments: arguments,
            thought_signatures: None,
        }
    }

    fn chunk(id: &str, name: &str, so_far: &str) -> genai::Result<ChatStreamEvent> {
        Ok(ChatStreamEvent::ToolCallChunk(ToolChunk {
            tool_call: call(id, name, Value::String(so_far.into())),
        }))
    }

    fn translate_all(events: Vec<genai::Result<ChatStreamEvent>>) -> Vec<StreamChunk> {
        let mut translator = GenaiTranslator::new(ErrorContext {
            server: "test".into(),
            key_env: None,
            key: None,
            ..Default::default()
        });
        let mut out = VecDeque::new();
        for event in events {
            translator.item(event, &mut out).unwrap();
        }
        out.into_iter().collect()
    }

    fn tool_block(id: &str, name: &str, json: &str) -> [StreamChunk; 3] {
        [
            StreamChunk::ContentBlockStart {
                start: BlockStart::ToolUse {
                    tool_use_id: id.into(),
                    name: name.into(),
                },
            },
            StreamChunk::ContentBlockDelta {
                delta: BlockDelta::ToolUseInput { json: json.into() },
            },
            StreamChunk::ContentBlockStop,
        ]
    }

    #[test]
    fn interleaved_and_end_only_tool_calls_come_out_whole_without_duplicated_prefixes() {
        let end = StreamEnd {
            captured_stop_reason: Some(GenaiStop::ToolCall("tool_calls".into())),
            captured_content: Some(MessageContent::from_tool_calls(vec![
                call("a", "x", serde_json::json!({"n": 1})),
                call("b", "y", serde_json::json!({})),
                call("c", "z", serde_json::json!({"only": "at the end"})),
            ])),
            ..Default::default()
        };
        let chunks = translate_all(vec![
            Ok(ChatStreamEvent::Start),
            Ok(ChatStreamEvent::Chunk(GenaiChunk {
                content: "ok".into(),
            })),
            chunk("a", "x", ""),
            chunk("a", "", "{\"n\""),
            chunk("b", "y", "{}"),
            chunk("a", "", "{\"n\": 1}"),
            Ok(ChatStreamEvent::End(end)),
        ]);
        let mut expected = vec![
            StreamChunk::MessageStart {
                role: Role::Assistant,
            },
            StreamChunk::ContentBlockStart {
                start: BlockStart::Text,
            },
            StreamChunk::ContentBlockDelta {
                delta: BlockDelta::Text { text: "ok".into() },
            },
            StreamChunk::ContentBlockStop,
        ];
        expected.extend(tool_block("a", "x", "{\"n\": 1}"));
        expected.extend(tool_block("b", "y", "{}"));
        expected.extend(tool_block("c", "z", "{\"only\":\"at the end\"}"));
        expected.push(StreamChunk::MessageStop {
            stop_reason: AgentStop::ToolUse,
        });
        assert_eq!(chunks, expected);
    }

    #[test]
    fn stop_reasons_and_usage_map() {
        assert_eq!(
            stop_reason(&GenaiStop::MaxTokens("length".into())),
            AgentStop::MaxTokens
        );
        assert_eq!(
            stop_reason(&GenaiStop::ContentFilter("content_filter".into())),
            AgentStop::ContentFiltered
        );
        assert_eq!(
            stop_reason(&GenaiStop::Other("pause_turn".into())),
            AgentStop::EndTurn
        );
        let usage = usage(&Usage {
            prompt_tokens: Some(10),
            completion_tokens: Some(-3),
            total_tokens: None,
            ..Default::default()
        });
        assert_eq!(
            usage,
            tau_agent::Usage {
                input_tokens: 10,
                output_tokens: 0,
                total_tokens: 10
            }
        );
    }
}
