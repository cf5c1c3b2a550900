//! ConverseStream events into tau's chunks: nearly one to one, since tau's chunks follow
//! Converse. Tool input arrives as real deltas and is passed on as it comes.

use std::collections::VecDeque;

use serde_json::Value;
use tau_agent::{AgentStop, BlockDelta, BlockStart, ModelError, Role, StreamChunk, Usage};

use super::eventstream::Frame;
use crate::drive::{Flow, Translate, closed_early};
use crate::errors::ErrorContext;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Open {
    Text(u64),
    Tool(u64),
}

pub(crate) struct BedrockTranslator {
    errors: ErrorContext,
    started: bool,
    open: Option<Open>,
    stopped: bool,
}

impl BedrockTranslator {
    pub(crate) fn new(errors: ErrorContext) -> Self {
        Self {
            errors,
            started: false,
            open: None,
            stopped: false,
        }
    }

    fn start(&mut self, out: &mut VecDeque<StreamChunk>) {
        if !self.started {
            self.started = true;
            out.push_back(StreamChunk::MessageStart {
                role: Role::Assistant,
            });
        }
    }

    fn close(&mut self, out: &mut VecDeque<StreamChunk>) {
        if self.open.take().is_some() {
            out.push_back(StreamChunk::ContentBlockStop);
        }
    }

    fn event(
        &mut self,
        kind: &str,
        body: &Value,
        out: &mut VecDeque<StreamChunk>,
    ) -> Result<Flow, ModelError> {
        let index = body
            .get("contentBlockIndex")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        match kind {
            "messageStart" => self.start(out),
            "contentBlockStart" => {
                self.start(out);
                self.close(out);
                let tool = body.pointer("/start/toolUse");
                let field = |name: &str| {
                    tool.and_then(|t| t.get(name))
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned()
                };
                if tool.is_some() {
                    self.open = Some(Open::Tool(index));
                    out.push_back(StreamChunk::ContentBlockStart {
                        start: BlockStart::ToolUse {
                            tool_use_id: field("toolUseId"),
                            name: field("name"),
                        },
                    });
                }
            }
            "contentBlockDelta" => {
                self.start(out);
                let delta = body.get("delta");
                if let Some(text) = delta.and_then(|d| d.get("text")).and_then(Value::as_str) {
                    if self.open != Some(Open::Text(index)) {
                        self.close(out);
                        self.open = Some(Open::Text(index));
                        out.push_back(StreamChunk::ContentBlockStart {
                            start: BlockStart::Text,
                        });
                    }
                    out.push_back(StreamChunk::ContentBlockDelta {
                        delta: BlockDelta::Text { text: text.into() },
                    });
                } else if let Some(input) = delta
                    .and_then(|d| d.pointer("/toolUse/input"))
                    .and_then(Value::as_str)
                {
                    if self.open != Some(Open::Tool(index)) {
                        return Err(self
                            .errors
                            .malformed("tool input for a block that is not an open tool use"));
                    }
                    out.push_back(StreamChunk::ContentBlockDelta {
                        delta: BlockDelta::ToolUseInput { json: input.into() },
                    });
                }
                // Reasoning deltas have no tau block; they stay with the provider.
            }
            "contentBlockStop" => {
                if matches!(self.open, Some(Open::Text(i) | Open::Tool(i)) if i == index) {
                    self.close(out);
                }
            }
            "messageStop" => {
                self.start(out);
                self.close(out);
                self.stopped = true;
                let reason = body
                    .get("stopReason")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                out.push_back(StreamChunk::MessageStop {
                    stop_reason: stop_reason(reason),
                });
            }
            "metadata" => {
                if let Some(usage) = body.get("usage") {
                    out.push_back(StreamChunk::Metadata {
                        usage: usage_of(usage),
                    });
                }
                if self.stopped {
                    return Ok(Flow::Done);
                }
            }
            other => tracing::debug!(event = other, "ignoring an unknown Converse event"),
        }
        Ok(Flow::Continue)
    }
}

impl Translate for BedrockTranslator {
    type Item = Result<Frame, ModelError>;

    fn item(
        &mut self,
        item: Self::Item,
        out: &mut VecDeque<StreamChunk>,
    ) -> Result<Flow, ModelError> {
        let frame = item?;
        let body: Value = serde_json::from_slice(&frame.payload)
            .map_err(|e| self.errors.malformed(&format!("event payload: {e}")))?;
        let text = |name: &str| body.get(name).and_then(Value::as_str).unwrap_or_default();
        match frame.header(":message-type") {
            Some("event") => {
                let kind = frame.header(":event-type").unwrap_or_default().to_owned();
                self.event(&kind, &body, out)
            }
            Some("exception") => {
                let kind = frame.header(":exception-type").unwrap_or("exception");
                Err(self.errors.stream_event(kind, text("message")))
            }
            Some("error") => {
                let kind = frame.header(":error-code").unwrap_or("error");
                let message = frame.header(":error-message").unwrap_or_default();
                Err(self.errors.stream_event(kind, message))
            }
            other => Err(self
                .errors
                .malformed(&format!("unknown event-stream message type {other:?}"))),
        }
    }

    /// A stream that stopped but sent no usage is still a whole message.
    fn upstream_ended(&mut self, _out: &mut VecDeque<StreamChunk>) -> Result<(), ModelError> {
        if self.stopped {
            Ok(())
        } else {
            Err(closed_early())
        }
    }
}

fn stop_reason(reason: &str) -> AgentStop {
    match reason {
        "tool_use" => AgentStop::ToolUse,
        "max_tokens" | "model_context_window_exceeded" => AgentStop::MaxTokens,
        "stop_sequence" => AgentStop::StopSequence,
        "guardrail_intervened" => AgentStop::GuardrailIntervened,
        "content_filtered" => AgentStop::ContentFiltered,
        // "end_turn", and anything newer than this code.
        _ => AgentStop::EndTurn,
    }
}

fn usage_of(usage: &Value) -> Usage {
    let count = |name: &str| usage.get(name).and_then(Value::as_u64).unwrap_or(0);
    let input_tokens = count("inputTokens");
    let output_tokens = count("outputTokens");
    let total_tokens = usage
        .get("totalTokens")
        .and_then(Value::as_u64)
        .unwrap_or_else(|| input_tokens.saturating_add(output_tokens));
    Usage {
        input_tokens,
        output_tokens,
        total_tokens,
    }
}
