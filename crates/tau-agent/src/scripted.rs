//! The scripted model: plays assistant messages from a list, the `replay:` model of the
//! command line.
//!
//! The JSON file format is an array of entries, one per model call. An entry is an
//! assistant message in the Converse shape, optionally with `stopReason`, `usage` and
//! `delayMs` (a pause before each streamed chunk); or `{"error": {...}}` to make that call
//! fail (`{"type":"throttled","retryAfterMs":10}`, `{"type":"context_window_overflow"}`,
//! `{"type":"other","message":"..."}`).
//!
//! Where a conversation is in the script is read from the conversation itself: the next
//! reply is the one after those its stored history already holds. A model made for a
//! session with [`Model::for_session`] starts right after its k-th reply entry, k being
//! the assistant messages stored for that session (those the sliding window dropped
//! included; a stored `Cancelled by user` counts too), so error entries that follow the
//! k-th reply are played first. From there it plays one entry per call. So a resumed
//! session, a restarted process and several sessions sharing one script each go on where
//! their own history stopped. Without `for_session` the model starts at the first entry.
//!
//! Requests are not kept: a test that wants to see them asks with [`ScriptedModel::recording`].

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;

use crate::message::{ContentBlock, Message, Role};
use crate::model::{
    AgentStop, BlockDelta, BlockStart, ChunkStream, Model, ModelError, ModelRequest,
    OwnedModelRequest, StreamChunk, Usage,
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
        stop_reason: Option<AgentStop>,
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
    stop_reason: Option<AgentStop>,
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

/// Plays one entry per call. Clones share their place in the script and their record, so
/// a test keeps a handle on the model it gave away.
#[derive(Clone)]
pub struct ScriptedModel {
    entries: Arc<Vec<Entry>>,
    /// The entry the next call plays.
    next: Arc<AtomicUsize>,
    /// Every request, in order, once a test asked for them.
    recorded: Option<Arc<Mutex<Vec<OwnedModelRequest>>>>,
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
            next: Arc::default(),
            recorded: None,
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

    /// Keeps a copy of every request from now on, for [`requests`](Self::requests). For
    /// tests: each copy holds the whole history, so a long conversation costs memory by
    /// the square of its length.
    pub fn recording(mut self) -> Self {
        self.recorded = Some(Arc::default());
        self
    }

    /// Every request received while recording, in order; empty when not recording.
    pub fn requests(&self) -> Vec<OwnedModelRequest> {
        self.recorded.as_ref().map_or_else(Vec::new, |recorded| {
            recorded
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone()
        })
    }

    /// How many entries have not been played yet.
    pub fn remaining(&self) -> usize {
        self.entries
            .len()
            .saturating_sub(self.next.load(Ordering::SeqCst))
    }

    /// A player of the same script for a conversation whose stored history is `stored`:
    /// it starts after the reply entry that produced the last stored assistant message
    /// (see the module docs). It shares this model's record, not its place.
    pub fn continuing(&self, stored: &[Message]) -> Self {
        let replied = stored.iter().filter(|m| m.role == Role::Assistant).count();
        let start = if replied == 0 {
            0
        } else {
            self.entries
                .iter()
                .enumerate()
                .filter(|(_, entry)| matches!(entry, Entry::Reply { .. }))
                .nth(replied - 1)
                .map_or(self.entries.len(), |(index, _)| index + 1)
        };
        Self {
            entries: Arc::clone(&self.entries),
            next: Arc::new(AtomicUsize::new(start)),
            recorded: self.recorded.clone(),
        }
    }

    /// The entry for this call, advancing past it; `None` once every entry was played.
    fn take_entry(&self) -> Option<Entry> {
        let len = self.entries.len();
        let index = self
            .next
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |next| {
                (next < len).then_some(next + 1)
            })
            .ok()?;
        self.entries.get(index).cloned()
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
            source: None,
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

fn chunks_of(message: &Message, stop_reason: Option<AgentStop>, usage: Usage) -> Vec<StreamChunk> {
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
        AgentStop::ToolUse
    } else {
        AgentStop::EndTurn
    };
    chunks.push(StreamChunk::MessageStop {
        stop_reason: stop_reason.unwrap_or(default_stop),
    });
    chunks.push(StreamChunk::Metadata { usage });
    chunks
}

#[async_trait]
impl Model for ScriptedModel {
    async fn stream(&self, request: ModelRequest<'_>) -> Result<ChunkStream, ModelError> {
        if let Some(recorded) = &self.recorded {
            recorded
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(request.into());
        }
        let Some(entry) = self.take_entry() else {
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

    fn for_session(&self, stored: &[Message]) -> Option<Arc<dyn Model>> {
        Some(Arc::new(self.continuing(stored)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;
    use pretty_assertions::assert_eq;

    fn request(text: &str) -> OwnedModelRequest {
        OwnedModelRequest {
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
        .unwrap()
        .recording();
        let chunks: Vec<_> = model
            .stream(request("hi").as_request())
            .await
            .unwrap()
            .collect()
            .await;
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
                    stop_reason: AgentStop::EndTurn
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
        let Err(error) = model.stream(request("again").as_request()).await else {
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
        let Err(first) = model.stream(request("a").as_request()).await else {
            panic!()
        };
        assert_eq!(
            first,
            ModelError::Throttled {
                retry_after: Some(Duration::from_millis(250)),
                message: "scripted throttling".into()
            }
        );
        let Err(second) = model.stream(request("b").as_request()).await else {
            panic!()
        };
        assert!(matches!(second, ModelError::ContextWindowOverflow { .. }));
    }
}
