//! Turns a stream of [`StreamChunk`]s into one assistant message.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use crate::events::{EventSink, TurnEvent};
use crate::message::{ContentBlock, Message, Role, ToolUse};
use crate::model::{AgentStop, BlockDelta, BlockStart, ModelError, StreamChunk, Usage};

/// A complete assistant message and what the loop needs to know about it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Assembled {
    pub message: Message,
    pub stop_reason: AgentStop,
    pub usage: Usage,
    /// Tool uses whose input was not a JSON object, by id, with the reason. They get an
    /// error result and never reach a hook or a tool.
    pub invalid_inputs: BTreeMap<String, String>,
}

enum OpenBlock {
    Text(String),
    ToolUse {
        tool_use_id: String,
        name: String,
        json: String,
    },
}

#[derive(Default)]
pub(crate) struct Assembler {
    blocks: Vec<ContentBlock>,
    open: Option<OpenBlock>,
    stop_reason: Option<AgentStop>,
    usage: Usage,
    invalid_inputs: BTreeMap<String, String>,
    seen_ids: BTreeSet<String>,
}

impl Assembler {
    pub(crate) fn push(
        &mut self,
        chunk: StreamChunk,
        events: Option<&EventSink>,
    ) -> Result<(), ModelError> {
        match chunk {
            // The role is always the assistant's; a provider that says otherwise is not trusted
            // to rewrite who spoke.
            StreamChunk::MessageStart { .. } => {}
            StreamChunk::ContentBlockStart { start } => {
                self.close_open();
                self.open = Some(match start {
                    BlockStart::Text => OpenBlock::Text(String::new()),
                    BlockStart::ToolUse { tool_use_id, name } => OpenBlock::ToolUse {
                        tool_use_id,
                        name,
                        json: String::new(),
                    },
                });
            }
            StreamChunk::ContentBlockDelta { delta } => match (delta, &mut self.open) {
                (BlockDelta::Text { text }, Some(OpenBlock::Text(buffer))) => {
                    buffer.push_str(&text);
                    emit_text(events, text);
                }
                (BlockDelta::Text { text }, None) => {
                    // Some providers send text without opening a block first.
                    emit_text(events, text.clone());
                    self.open = Some(OpenBlock::Text(text));
                }
                (
                    BlockDelta::ToolUseInput { json: piece },
                    Some(OpenBlock::ToolUse { json, .. }),
                ) => {
                    json.push_str(&piece);
                }
                (BlockDelta::Text { .. }, Some(OpenBlock::ToolUse { .. })) => {
                    return Err(ModelError::other(
                        "malformed model stream: text inside a tool-use block",
                    ));
                }
                (BlockDelta::ToolUseInput { .. }, _) => {
                    return Err(ModelError::other(
                        "malformed model stream: tool input outside a tool-use block",
                    ));
                }
            },
            StreamChunk::ContentBlockStop => self.close_open(),
            StreamChunk::MessageStop { stop_reason } => {
                self.close_open();
                self.stop_reason = Some(stop_reason);
            }
            StreamChunk::Metadata { usage } => self.usage.add(usage),
        }
        Ok(())
    }

    /// The finished message; a stream that ended inside a block or before its stop is
    /// an [`ModelError::Incomplete`].
    pub(crate) fn finish(mut self, events: Option<&EventSink>) -> Result<Assembled, ModelError> {
        if self.open.is_some() {
            return Err(ModelError::incomplete(
                "the stream ended inside a content block",
            ));
        }
        let Some(reported) = self.stop_reason else {
            return Err(ModelError::incomplete(
                "the stream ended before the message stopped",
            ));
        };
        // Only the loop stops for an interrupt, a cancel or a limit; a model claiming one of
        // those is read as ending its turn, so the caller never waits on a question nobody
        // asked.
        let reported = match reported {
            AgentStop::Interrupt
            | AgentStop::Cancelled
            | AgentStop::LimitTurns
            | AgentStop::LimitOutputTokens
            | AgentStop::LimitTotalTokens => {
                tracing::warn!(
                    reported = reported.as_str(),
                    "the model reported a stop reason only the loop gives"
                );
                AgentStop::EndTurn
            }
            AgentStop::EndTurn
            | AgentStop::ToolUse
            | AgentStop::MaxTokens
            | AgentStop::StopSequence
            | AgentStop::ContentFiltered
            | AgentStop::GuardrailIntervened => reported,
        };
        let has_tool_uses = self
            .blocks
            .iter()
            .any(|b| matches!(b, ContentBlock::ToolUse(_)));
        // Providers disagree on the stop reason that accompanies tool calls; the blocks decide.
        let stop_reason = match (reported, has_tool_uses) {
            (AgentStop::EndTurn | AgentStop::ToolUse, true) => AgentStop::ToolUse,
            (AgentStop::ToolUse, false) => AgentStop::EndTurn,
            (other, _) => other,
        };
        if let Some(events) = events {
            for block in &self.blocks {
                if let ContentBlock::ToolUse(tool_use) = block {
                    events.send(TurnEvent::ToolUse {
                        tool_use: tool_use.clone(),
                    });
                }
            }
        }
        Ok(Assembled {
            message: Message {
                role: Role::Assistant,
                content: std::mem::take(&mut self.blocks),
                source: None,
            },
            stop_reason,
            usage: self.usage,
            invalid_inputs: self.invalid_inputs,
        })
    }

    fn close_open(&mut self) {
        match self.open.take() {
            None => {}
            Some(OpenBlock::Text(text)) => self.blocks.push(ContentBlock::Text(text)),
            Some(OpenBlock::ToolUse {
                tool_use_id,
                name,
                json,
            }) => {
                let tool_use_id = self.unique_id(tool_use_id);
                let input = match parse_input(&json) {
                    Ok(input) => input,
                    Err(reason) => {
                        self.invalid_inputs.insert(tool_use_id.clone(), reason);
                        Value::Object(Map::new())
                    }
                };
                self.blocks.push(ContentBlock::ToolUse(ToolUse {
                    tool_use_id,
                    name,
                    input,
                }));
            }
        }
    }

    /// Results are matched to uses by id, so an empty or repeated id gets a fresh one.
    fn unique_id(&mut self, proposed: String) -> String {
        let mut id = proposed;
        let mut n = self.blocks.len();
        while id.is_empty() || self.seen_ids.contains(&id) {
            id = format!("tau_tool_use_{n}");
            n += 1;
        }
        self.seen_ids.insert(id.clone());
        id
    }
}

fn emit_text(events: Option<&EventSink>, text: String) {
    if let Some(events) = events
        && !text.is_empty()
    {
        events.send(TurnEvent::TextDelta { text });
    }
}

fn parse_input(json: &str) -> Result<Value, String> {
    if json.trim().is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    match serde_json::from_str::<Value>(json) {
        Ok(value @ Value::Object(_)) => Ok(value),
        Ok(_) => Err("the tool input must be a JSON object".to_owned()),
        Err(error) => Err(format!("the tool input is not valid JSON ({error})")),
    }
}

/// The error text a tool use with an unusable input receives.
pub(crate) fn invalid_input_text(reason: &str) -> String {
    format!("Error: {reason}. The tool was not run.")
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn tool_start(id: &str, name: &str) -> StreamChunk {
        StreamChunk::ContentBlockStart {
            start: BlockStart::ToolUse {
                tool_use_id: id.into(),
                name: name.into(),
            },
        }
    }
    fn input(json: &str) -> StreamChunk {
        StreamChunk::ContentBlockDelta {
            delta: BlockDelta::ToolUseInput { json: json.into() },
        }
    }
    fn text(text: &str) -> StreamChunk {
        StreamChunk::ContentBlockDelta {
            delta: BlockDelta::Text { text: text.into() },
        }
    }

    fn assemble(chunks: Vec<StreamChunk>) -> Result<Assembled, ModelError> {
        let mut assembler = Assembler::default();
        for chunk in chunks {
            assembler.push(chunk, None)?;
        }
        assembler.finish(None)
    }

    #[test]
    fn incremental_tool_input_is_joined_and_parsed() {
        let assembled = assemble(vec![
            StreamChunk::MessageStart {
                role: Role::Assistant,
            },
            StreamChunk::ContentBlockStart {
                start: BlockStart::Text,
            },
            text("Let me "),
            text("check."),
            StreamChunk::ContentBlockStop,
            tool_start("t1", "clock"),
            input(r#"{"zo"#),
            input(r#"ne":"UTC"}"#),
            StreamChunk::ContentBlockStop,
            StreamChunk::MessageStop {
                stop_reason: AgentStop::ToolUse,
            },
            StreamChunk::Metadata {
                usage: Usage {
                    input_tokens: 3,
                    output_tokens: 4,
                    total_tokens: 7,
                },
            },
        ])
        .unwrap();
        assert_eq!(
            assembled,
            Assembled {
                message: Message {
                    role: Role::Assistant,
                    content: vec![
                        ContentBlock::Text("Let me check.".into()),
                        ContentBlock::ToolUse(ToolUse {
                            tool_use_id: "t1".into(),
                            name: "clock".into(),
                            input: json!({"zone": "UTC"}),
                        }),
                    ],
                    source: None,
                },
                stop_reason: AgentStop::ToolUse,
                usage: Usage {
                    input_tokens: 3,
                    output_tokens: 4,
                    total_tokens: 7
                },
                invalid_inputs: BTreeMap::new(),
            }
        );
    }

    #[test]
    fn malformed_or_non_object_input_is_marked_not_fatal() {
        let assembled = assemble(vec![
            tool_start("a", "x"),
            input("{not json"),
            StreamChunk::ContentBlockStop,
            tool_start("b", "x"),
            input("[1,2]"),
            StreamChunk::ContentBlockStop,
            tool_start("c", "x"),
            StreamChunk::ContentBlockStop,
            StreamChunk::MessageStop {
                stop_reason: AgentStop::EndTurn,
            },
        ])
        .unwrap();
        assert_eq!(assembled.stop_reason, AgentStop::ToolUse);
        let inputs: Vec<_> = assembled
            .message
            .tool_uses()
            .map(|t| t.input.clone())
            .collect();
        assert_eq!(inputs, vec![json!({}), json!({}), json!({})]);
        assert_eq!(
            assembled.invalid_inputs.keys().collect::<Vec<_>>(),
            vec!["a", "b"]
        );
        assert!(assembled.invalid_inputs["a"].starts_with("the tool input is not valid JSON"));
        assert_eq!(
            assembled.invalid_inputs["b"],
            "the tool input must be a JSON object"
        );
    }

    #[test]
    fn stream_ending_mid_block_is_incomplete() {
        let error = assemble(vec![tool_start("a", "x"), input("{\"a\":")]).unwrap_err();
        assert_eq!(
            error,
            ModelError::incomplete("the stream ended inside a content block")
        );
        let error = assemble(vec![
            StreamChunk::ContentBlockStart {
                start: BlockStart::Text,
            },
            text("hi"),
            StreamChunk::ContentBlockStop,
        ])
        .unwrap_err();
        assert_eq!(
            error,
            ModelError::incomplete("the stream ended before the message stopped")
        );
    }

    #[test]
    fn tool_input_outside_a_tool_block_is_an_error() {
        let error = assemble(vec![input("{}")]).unwrap_err();
        assert!(matches!(error, ModelError::Other { .. }));
    }

    #[test]
    fn repeated_or_empty_ids_are_made_unique() {
        let assembled = assemble(vec![
            tool_start("t", "x"),
            StreamChunk::ContentBlockStop,
            tool_start("t", "x"),
            StreamChunk::ContentBlockStop,
            tool_start("", "x"),
            StreamChunk::ContentBlockStop,
            StreamChunk::MessageStop {
                stop_reason: AgentStop::ToolUse,
            },
        ])
        .unwrap();
        let ids: Vec<_> = assembled
            .message
            .tool_uses()
            .map(|t| t.tool_use_id.clone())
            .collect();
        assert_eq!(ids, vec!["t", "tau_tool_use_1", "tau_tool_use_2"]);
    }
}
