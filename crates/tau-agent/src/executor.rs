//! Runs the tool uses of one assistant message through the tool-call hooks.

use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use serde_json::Value;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::assemble::invalid_input_text;
use crate::events::{EventSink, TurnEvent};
use crate::hooks::{
    AfterToolCallEvent, BeforeToolCallEvent, HookRegistry, SkipReason, ToolCallSkippedEvent,
};
use crate::interrupt::Interrupt;
use crate::message::{ToolResult, ToolUse};
use crate::tool::{SharedTool, ToolContext, invalid_name_text, is_valid_tool_name};
use crate::tool_registry::ToolRegistry;

/// The result every pending tool use gets when the invocation is cancelled before it ran.
pub const TOOL_CANCELLED_TEXT: &str = "Tool execution cancelled";
/// What the model reads when a before-tool-call hook panicked: the call fails closed.
pub const HOOK_FAILED_TEXT: &str = "Error: a tool-call hook failed, so the tool was not run.";
/// What the model reads when a tool panicked.
pub const TOOL_PANICKED_TEXT: &str = "Error: the tool failed unexpectedly.";

/// How the tool uses of one message are run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Executor {
    /// All at once; results still reach the model in the order of the tool uses.
    #[default]
    Concurrent,
    /// One after another, in order; an interrupt leaves the later calls for the resume.
    Sequential,
}

/// The text a call to an unregistered tool receives when no hook cancelled it.
pub fn unknown_tool_text(name: &str) -> String {
    format!("Unknown tool: {name}")
}

fn mismatch_text(named: &str, selected: &str) -> String {
    format!(
        "Error: the tool use names '{named}' but the selected tool is '{selected}'; it was not run."
    )
}

/// One tool use's fate.
pub(crate) enum CallOutcome {
    Done(ToolResult),
    Interrupted(Vec<Interrupt>),
}

pub(crate) struct Batch<'a> {
    pub tools: &'a ToolRegistry,
    pub hooks: &'a HookRegistry,
    pub events: Option<&'a EventSink>,
    pub cancel: &'a CancellationToken,
    pub responses: Arc<BTreeMap<String, Value>>,
    pub invalid_inputs: &'a BTreeMap<String, String>,
}

impl Batch<'_> {
    pub(crate) async fn run(
        &self,
        executor: Executor,
        tool_uses: Vec<ToolUse>,
    ) -> Vec<CallOutcome> {
        match executor {
            Executor::Concurrent => {
                futures::future::join_all(tool_uses.into_iter().map(|u| self.run_one(u))).await
            }
            Executor::Sequential => {
                let mut outcomes = Vec::with_capacity(tool_uses.len());
                let mut waiting = false;
                for tool_use in tool_uses {
                    if !waiting {
                        let outcome = self.run_one(tool_use).await;
                        waiting = matches!(outcome, CallOutcome::Interrupted(_));
                        outcomes.push(outcome);
                    } else if let Some(reason) = self.refuse_before_hooks(&tool_use) {
                        // Refused before any hook, so nothing runs out of order; answered now
                        // because a resume no longer knows why.
                        let result = self.skip(tool_use, reason).await;
                        outcomes.push(self.done(result));
                    }
                    // Any other later call waits for the answer and runs, in order, on resume.
                }
                outcomes
            }
        }
    }

    async fn run_one(&self, tool_use: ToolUse) -> CallOutcome {
        let result = match self.refuse_before_hooks(&tool_use) {
            Some(reason) => self.skip(tool_use, reason).await,
            None => match self.call_through_hooks(tool_use).await {
                Ok(result) => result,
                Err(interrupts) => return CallOutcome::Interrupted(interrupts),
            },
        };
        self.done(result)
    }

    /// A finished call, announced to whoever watches the turn.
    fn done(&self, result: ToolResult) -> CallOutcome {
        if let Some(events) = self.events {
            events.send(TurnEvent::ToolResult {
                result: result.clone(),
            });
        }
        CallOutcome::Done(result)
    }

    /// Calls that never reach a hook: nothing about them can run.
    fn refuse_before_hooks(&self, tool_use: &ToolUse) -> Option<SkipReason> {
        if !is_valid_tool_name(&tool_use.name) {
            return Some(SkipReason::InvalidName);
        }
        if let Some(reason) = self.invalid_inputs.get(&tool_use.tool_use_id) {
            return Some(SkipReason::InvalidInput {
                reason: reason.clone(),
            });
        }
        if self.cancel.is_cancelled() {
            return Some(SkipReason::Cancelled);
        }
        None
    }

    /// The result of a call refused before the hooks; observers are told about it.
    async fn skip(&self, tool_use: ToolUse, reason: SkipReason) -> ToolResult {
        let id = &tool_use.tool_use_id;
        let result = match &reason {
            SkipReason::InvalidName => {
                ToolResult::error_text(id, invalid_name_text(&tool_use.name))
            }
            SkipReason::InvalidInput { reason } => {
                ToolResult::error_text(id, invalid_input_text(reason))
            }
            SkipReason::Cancelled => ToolResult::error_text(id, TOOL_CANCELLED_TEXT),
        };
        let mut event = ToolCallSkippedEvent {
            tool_use,
            reason,
            result,
        };
        self.hooks.invoke(&mut event).await;
        event.result
    }

    async fn call_through_hooks(&self, tool_use: ToolUse) -> Result<ToolResult, Vec<Interrupt>> {
        let original_id = tool_use.tool_use_id.clone();
        let selected = self.tools.get(&tool_use.name);
        let mut before = BeforeToolCallEvent::new(tool_use, selected, Arc::clone(&self.responses));
        let invoked = self.hooks.invoke(&mut before).await;
        if !invoked.panicked.is_empty() {
            before.cancel_tool(HOOK_FAILED_TEXT);
        }
        if !invoked.interrupts.is_empty() {
            return Err(invoked.interrupts);
        }
        let BeforeToolCallEvent {
            tool_use,
            selected_tool,
            ..
        } = &before;
        let cancel_message = before.cancel_message().map(str::to_owned);
        let started = Instant::now();
        let mut error = None;
        let mut ran = false;
        let mut result = match (&cancel_message, selected_tool) {
            (Some(text), _) => ToolResult::error_text(&original_id, text),
            (None, None) => ToolResult::error_text(&original_id, unknown_tool_text(&tool_use.name)),
            (None, Some(tool)) if tool.spec().name != tool_use.name => ToolResult::error_text(
                &original_id,
                mismatch_text(&tool_use.name, &tool.spec().name),
            ),
            (None, Some(tool)) => {
                ran = true;
                // The tool learns of a cancel while it runs, so work it started (a process)
                // stops with the turn instead of finishing unseen.
                let context = ToolContext::new(&original_id, &tool_use.name, self.events.cloned())
                    .with_cancellation(self.cancel.clone());
                let run = run_tool(tool, &original_id, tool_use.input.clone(), context).await;
                error = run.error;
                run.result
            }
        };
        let mut after = AfterToolCallEvent {
            tool_use: before.tool_use.clone(),
            selected_tool: before.selected_tool.as_ref().map(|t| t.spec().name.clone()),
            result,
            error,
            cancel_message,
            ran,
            cancelled: ran && self.cancel.is_cancelled(),
            duration: started.elapsed(),
        };
        self.hooks.invoke(&mut after).await;
        result = after.result;
        // A replaced result still answers the model's own tool use.
        result.tool_use_id = original_id;
        Ok(result)
    }
}

/// What one run of a tool produced.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolRun {
    /// What the model reads.
    pub result: ToolResult,
    /// The tool's own error or panic, when it failed that way.
    pub error: Option<String>,
}

/// Runs `tool` once with `input`: its output, its error as `Error: {message}`, or
/// [`TOOL_PANICKED_TEXT`] when it panicked. The one way tau runs a tool, inside the loop or
/// outside it.
pub async fn run_tool(
    tool: &SharedTool,
    tool_use_id: &str,
    input: Value,
    context: ToolContext,
) -> ToolRun {
    let run = async { tool.run(input, context).await };
    match AssertUnwindSafe(run).catch_unwind().await {
        Ok(Ok(output)) => ToolRun {
            result: ToolResult {
                tool_use_id: tool_use_id.to_owned(),
                status: output.status,
                content: output.content,
                source: None,
            },
            error: None,
        },
        Ok(Err(tool_error)) => ToolRun {
            result: ToolResult::error_text(tool_use_id, format!("Error: {tool_error}")),
            error: Some(tool_error.message),
        },
        Err(_) => {
            tracing::error!(tool = %tool.spec().name, "tool panicked");
            ToolRun {
                result: ToolResult::error_text(tool_use_id, TOOL_PANICKED_TEXT),
                error: Some("the tool panicked".to_owned()),
            }
        }
    }
}
