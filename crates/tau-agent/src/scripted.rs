//! The scripted model: plays assistant messages from a list and records what it was asked.
//!
//! The JSON file format is an array of entries, one per model call. An entry is an
//! assistant message in the Converse shape, optionally with `stopReason`, `usage` and
//! `delayMs` (a pause before each streamed chunk); or `{"error": {...}}` to make that call
//! fail (`{"type":"throttled","retryAfterMs":10}`, `{"type":"context_window_overflow"}`,
//! `{"type":"other","message":"..."}`). This is the `replay:` model of the command line.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;

use crate::message::{ContentBlock, Message, Role};
use crate::model::{
    BlockDelta, BlockStart, ChunkStream, Model, ModelError, ModelRequest, StopReason, StreamChunk,
    Usage,
};

/// A script that could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    #[error("cannot read the replay script {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("the replay script is not a JSON array of assistant messages: {0}")]
    NotAnArray(serde_json::Error),
    #[error("replay entry {index}: {message}")]
    Entry { index: usize, message: String },
}

#[derive(Debug, Clone, PartialEq)]
enum Entry {
    Reply {
        message: Message,
        stop_reason: Option<StopReason>,
        usage: Usage,
        delay: Duration,
    },
    Error(ModelError),
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ReplyEntry {
    role: Role,
    content: Vec<ContentBlock>,
    #[serde(default)]
    stop_reason: Option<StopReason>,
    #[serde(default)]
    usage: Usage,
    #[serde(default)]
    delay_ms: u64,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
enum ErrorEntry {
    Throttled {
        #[serde(default, rename = "retryAfterMs")]
        retry_after_ms: Option<u64>,
    },
    ContextWindowOverflow,
    Other {
        message: String,
    },
}

#[derive(Default)]
struct State {
    next: usize,
    requests: Vec<ModelRequest>,
}

/// Plays one entry per call; shares its record between clones so a test keeps a handle.
#[derive(Clone)]
pub struct ScriptedModel {
    entries: Arc<Vec<Entry>>,
    state: Arc<Mutex<State>>,
}

impl ScriptedModel {
    /// A model that answers with these assistant messages, in order.
    pub fn new(messages: impl IntoIterator<Item = Message>) -> Self {
        let entries = messages
            .into_iter()
            .map(|message| Entry::Reply {
                message,
                stop_reason: None,
                usage: Usage::default(),
                delay: Duration::ZERO,
            })
            .collect();
        Self::from_entries(entries)
    }

    fn from_entries(entries: Vec<Entry>) -> Self {
        Self {
            entries: Arc::new(entries),
            state: Arc::default(),
        }
    }

    /// Loads a replay script (see the module docs for its format).
    pub fn from_json(text: &str) -> Result<Self, ScriptError> {
        let values: Vec<Value> = serde_json::from_str(text).map_err(ScriptError::NotAnArray)?;
        let entries = values
            .into_iter()
            .enumerate()
            .map(|(index, value)| {
                parse_entry(value).map_err(|message| ScriptError::Entry { index, message })
            })
            .collect::<Result<_, _>>()?;
        Ok(Self::from_entries(entries))
    }

    pub fn from_file(path: &Path) -> Result<Self, ScriptError> {
        let text = std::fs::read_to_string(path).map_err(|source| ScriptError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Self::from_json(&text)
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<ModelRequest> {
        self.lock().requests.clone()
    }

    /// How many entries have not been played yet.
    pub fn remaining(&self) -> usize {
        self.entries.len().saturating_sub(self.lock().next)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A poisoned lock only means another test thread panicked; the record is still usable.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

fn parse_entry(value: Value) -> Result<Entry, String> {
    if let Some(error) = value.get("error") {
        let error: ErrorEntry = serde_json::from_value(error.clone()).map_err(|e| e.to_string())?;
        return Ok(Entry::Error(match error {
            ErrorEntry::Throttled { retry_after_ms } => ModelError::Throttled {
                retry_after: retry_after_ms.map(Duration::from_millis),
                message: "scripted throttling".into(),
            },
            ErrorEntry::ContextWindowOverflow => ModelError::ContextWindowOverflow {
                message: "scripted context window overflow".into(),
            },
            ErrorEntry::Other { message } => ModelError::Other { message },
        }));
    }
    let reply: ReplyEntry = serde_json::from_value(value).map_err(|e| e.to_string())?;
    if reply.role != Role::Assistant {
        return Err("role must be \"assistant\"".into());
    }
    if reply
        .content
        .iter()
        .any(|b| matches!(b, ContentBlock::ToolResult(_)))
    {
        return Err("an assistant message cannot hold a toolResult".into());
    }
    Ok(Entry::Reply {
        message: Message {
            role: reply.role,
            content: reply.content,
        },
        stop_reason: reply.stop_reason,
        usage: reply.usage,
        delay: Duration::from_millis(reply.delay_ms),
    })
}

/// Splits text in two at a char boundary, so consumers see real incremental deltas.
fn halves(text: &str) -> Vec<String> {
    let mid = text
        .char_indices()
        .map(|(i, _)| i)
        .nth(text.chars().count() / 2)
        .unwrap_or(0);
    let (a, b) = text.split_at(mid);
    [a, b]
        .into_iter()
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

fn chunks_of(message: &Message, stop_reason: Option<StopReason>, usage: Usage) -> Vec<StreamChunk> {
    let mut chunks = vec![StreamChunk::MessageStart {
        role: Role::Assistant,
    }];
    for block in &message.content {
        match block {
            ContentBlock::Text(text) => {
                chunks.push(StreamChunk::ContentBlockStart {
                    start: BlockStart::Text,
                });
                for piece in halves(text) {
                    chunks.push(StreamChunk::ContentBlockDelta {
                        delta: BlockDelta::Text { text: piece },
                    });
                }
            }
            ContentBlock::ToolUse(tool_use) => {
                chunks.push(StreamChunk::ContentBlockStart {
                    start: BlockStart::ToolUse {
                        tool_use_id: tool_use.tool_use_id.clone(),
                        name: tool_use.name.clone(),
                    },
                });
                for piece in halves(&tool_use.input.to_string()) {
                    chunks.push(StreamChunk::ContentBlockDelta {
                        delta: BlockDelta::ToolUseInput { json: piece },
                    });
                }
            }
            // Rejected when the script is loaded; a programmatic script skips them.
            ContentBlock::ToolResult(_) => continue,
        }
        chunks.push(StreamChunk::ContentBlockStop);
    }
    let has_tools = message.tool_uses().next().is_some();
    let default_stop = if has_tools {
        StopReason::ToolUse
    } else {
        StopReason::EndTurn
    };
    chunks.push(StreamChunk::MessageStop {
        stop_reason: stop_reason.unwrap_or(default_stop),
    });
    chunks.push(StreamChunk::Metadata { usage });
    chunks
}

#[async_trait]
impl Model for ScriptedModel {
    async fn stream(&self, request: ModelRequest) -> Result<ChunkStream, ModelError> {
        let entry = {
            let mut state = self.lock();
            state.requests.push(request);
            let entry = self.entries.get(state.next).cloned();
            if entry.is_some() {
                state.next += 1;
            }
            entry
        };
        let Some(entry) = entry else {
            return Err(ModelError::other(format!(
                "the replay script has no more responses (all {} were played)",
                self.entries.len()
            )));
        };
        match entry {
            Entry::Error(error) => Err(error),
            Entry::Reply {
                message,
                stop_reason,
                usage,
                delay,
            } => {
                let chunks = chunks_of(&message, stop_reason, usage);
                if delay.is_zero() {
                    return Ok(Box::pin(futures::stream::iter(chunks.into_iter().map(Ok))));
                }
                Ok(Box::pin(futures::stream::unfold(
                    chunks.into_iter(),
                    move |mut rest| async move {
                        let chunk = rest.next()?;
                        tokio::time::sleep(delay).await;
                        Some((Ok(chunk), rest))
                    },
                )))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;
    use pretty_assertions::assert_eq;

    fn request(text: &str) -> ModelRequest {
        ModelRequest {
            system_prompt: None,
            messages: vec![Message::user_text(text)],
            tool_specs: vec![],
        }
    }

    #[tokio::test]
    async fn plays_entries_in_order_then_fails_clearly() {
        let model = ScriptedModel::from_json(
            r#"[{"role":"assistant","content":[{"text":"hello"}],"usage":{"inputTokens":1,"outputTokens":2,"totalTokens":3}}]"#,
        )
        .unwrap();
        let chunks: Vec<_> = model.stream(request("hi")).await.unwrap().collect().await;
        let chunks: Vec<_> = chunks.into_iter().map(Result::unwrap).collect();
        assert_eq!(
            chunks,
            vec![
                StreamChunk::MessageStart {
                    role: Role::Assistant
                },
                StreamChunk::ContentBlockStart {
                    start: BlockStart::Text
                },
                StreamChunk::ContentBlockDelta {
                    delta: BlockDelta::Text { text: "he".into() }
                },
                StreamChunk::ContentBlockDelta {
                    delta: BlockDelta::Text { text: "llo".into() }
                },
                StreamChunk::ContentBlockStop,
                StreamChunk::MessageStop {
                    stop_reason: StopReason::EndTurn
                },
                StreamChunk::Metadata {
                    usage: Usage {
                        input_tokens: 1,
                        output_tokens: 2,
                        total_tokens: 3
                    }
                },
            ]
        );
        let Err(error) = model.stream(request("again")).await else {
            panic!("expected an error")
        };
        assert_eq!(
            error,
            ModelError::other("the replay script has no more responses (all 1 were played)")
        );
        assert_eq!(model.requests(), vec![request("hi"), request("again")]);
    }

    #[test]
    fn bad_scripts_name_the_entry() {
        let Err(error) = ScriptedModel::from_json(r#"[{"role":"user","content":[]}]"#) else {
            panic!()
        };
        assert_eq!(
            error.to_string(),
            "replay entry 0: role must be \"assistant\""
        );
        let Err(error) = ScriptedModel::from_json(r#"{"role":"assistant"}"#) else {
            panic!()
        };
        assert!(
            error
                .to_string()
                .starts_with("the replay script is not a JSON array")
        );
        let Err(error) =
            ScriptedModel::from_json(r#"[{"role":"assistant","content":[],"bogus":1}]"#)
        else {
            panic!()
        };
        assert!(
            error
                .to_string()
                .starts_with("replay entry 0: unknown field `bogus`"),
            "{error}"
        );
    }

    #[tokio::test]
    async fn error_entries_fail_that_call() {
        let model = ScriptedModel::from_json(
            r#"[{"error":{"type":"throttled","retryAfterMs":250}},{"error":{"type":"context_window_overflow"}}]"#,
        )
        .unwrap();
        let Err(first) = model.stream(request("a")).await else {
            panic!()
        };
        assert_eq!(
            first,
            ModelError::Throttled {
                retry_after: Some(Duration::from_millis(250)),
                message: "scripted throttling".into()
            }
        );
        let Err(second) = model.stream(request("b")).await else {
            panic!()
        };
        assert!(matches!(second, ModelError::ContextWindowOverflow { .. }));
    }
}
