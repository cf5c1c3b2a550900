//! One turn of the loop: call the model, run the tools it asked for, and repeat until it
//! stops, is cancelled, or a hook interrupts.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use crate::assemble::{Assembled, Assembler};
use crate::events::{EventSink, TurnEvent};
use crate::executor::{Batch, CallOutcome};
use crate::hooks::{AfterModelCallEvent, BeforeModelCallEvent};
use crate::interrupt::Interrupt;
use crate::message::{ContentBlock, Message, Role, ToolResult};
use crate::model::{AgentStop, Model, ModelError, ModelRequest, Usage};

use super::{Agent, AgentError, AgentResult, CANCELLED_BY_USER_TEXT};

enum ModelOutcome {
    Answered(Assembled),
    Cancelled,
}

impl Agent {
    pub(super) async fn run(
        &mut self,
        token: &CancellationToken,
        events: Option<&EventSink>,
        system_prompt: Option<String>,
    ) -> Result<AgentResult, AgentError> {
        let mut calls = 0u32;
        let mut usage = Usage::default();
        let mut last = None;
        let stop = |reason, last: Option<Message>, calls, usage, interrupts| AgentResult {
            stop_reason: reason,
            message: last,
            usage,
            model_calls: calls,
            interrupts,
        };
        loop {
            let (tool_message, invalid_inputs) = if self.state.interrupt_state.activated {
                let resumed = self.state.interrupt_state.tool_use_message.clone();
                let message = resumed
                    .or_else(|| self.messages.last().cloned())
                    .unwrap_or_else(|| Message::assistant_text(""));
                (message, BTreeMap::new())
            } else {
                if let Some(reason) = self.limits.exceeded(calls, usage) {
                    return Ok(stop(reason, last, calls, usage, Vec::new()));
                }
                if token.is_cancelled() {
                    self.append(Message::assistant_text(CANCELLED_BY_USER_TEXT))
                        .await?;
                    return Ok(stop(AgentStop::Cancelled, last, calls, usage, Vec::new()));
                }
                calls += 1;
                match self
                    .call_model(token, events, &system_prompt, calls - 1, &mut usage)
                    .await?
                {
                    ModelOutcome::Cancelled => {
                        let message = Message::assistant_text(CANCELLED_BY_USER_TEXT);
                        self.append(message.clone()).await?;
                        return Ok(stop(
                            AgentStop::Cancelled,
                            Some(message),
                            calls,
                            usage,
                            Vec::new(),
                        ));
                    }
                    ModelOutcome::Answered(assembled) => {
                        self.append(assembled.message.clone()).await?;
                        last = Some(assembled.message.clone());
                        if assembled.stop_reason != AgentStop::ToolUse {
                            return Ok(stop(assembled.stop_reason, last, calls, usage, Vec::new()));
                        }
                        (assembled.message, assembled.invalid_inputs)
                    }
                }
            };
            let pending = self
                .run_tools(token, events, &tool_message, &invalid_inputs)
                .await?;
            if !pending.is_empty() {
                return Ok(stop(AgentStop::Interrupt, last, calls, usage, pending));
            }
            if token.is_cancelled() {
                return Ok(stop(AgentStop::Cancelled, last, calls, usage, Vec::new()));
            }
        }
    }

    /// Runs the tool uses of `message` that have no result yet. Appends the results and
    /// returns no interrupts, or stores the interrupt state and returns the pending ones.
    async fn run_tools(
        &mut self,
        token: &CancellationToken,
        events: Option<&EventSink>,
        message: &Message,
        invalid_inputs: &BTreeMap<String, String>,
    ) -> Result<Vec<Interrupt>, AgentError> {
        let mut done: BTreeMap<String, ToolResult> =
            std::mem::take(&mut self.state.interrupt_state.tool_results)
                .into_iter()
                .map(|r| (r.tool_use_id.clone(), r))
                .collect();
        let waiting: Vec<_> = message
            .tool_uses()
            .filter(|u| !done.contains_key(&u.tool_use_id))
            .cloned()
            .collect();
        let batch = Batch {
            tools: &self.tools,
            hooks: &self.hooks,
            events,
            cancel: token,
            responses: Arc::new(self.state.interrupt_state.responses()),
            invalid_inputs,
        };
        let mut raised = Vec::new();
        for outcome in batch.run(self.executor, waiting).await {
            match outcome {
                CallOutcome::Done(result) => {
                    done.insert(result.tool_use_id.clone(), result);
                }
                CallOutcome::Interrupted(interrupts) => raised.extend(interrupts),
            }
        }
        if !raised.is_empty() {
            let state = &mut self.state.interrupt_state;
            state.activated = true;
            for interrupt in raised {
                state
                    .interrupts
                    .entry(interrupt.id.clone())
                    .or_insert(interrupt);
            }
            state.tool_use_message = Some(message.clone());
            state.tool_results = done.into_values().collect();
            let pending = state.pending();
            self.save_state()?;
            return Ok(pending);
        }
        let was_interrupted = self.state.interrupt_state.activated;
        self.state.interrupt_state.deactivate();
        if was_interrupted {
            self.save_state()?;
        }
        let content = message
            .tool_uses()
            .filter_map(|u| done.remove(&u.tool_use_id))
            .map(ContentBlock::ToolResult)
            .collect();
        self.append(Message {
            role: Role::User,
            content,
            source: None,
        })
        .await?;
        Ok(Vec::new())
    }

    async fn call_model(
        &mut self,
        token: &CancellationToken,
        events: Option<&EventSink>,
        system_prompt: &Option<String>,
        calls_before: u32,
        usage: &mut Usage,
    ) -> Result<ModelOutcome, AgentError> {
        let mut throttled = 0u32;
        let mut hook_retries = 0u32;
        loop {
            let mut before = BeforeModelCallEvent {
                system_prompt: system_prompt.clone(),
                calls_before,
            };
            self.hooks.invoke(&mut before).await;
            let viewed = self
                .view
                .as_ref()
                .and_then(|view| view.view(&self.messages));
            let request = ModelRequest {
                system_prompt: before.system_prompt.as_deref(),
                messages: viewed.as_deref().unwrap_or(&self.messages),
                tool_specs: &self.tool_specs,
            };
            let attempt = tokio::select! {
                () = token.cancelled() => return Ok(ModelOutcome::Cancelled),
                attempt = stream_message(self.model.as_ref(), request, events) => attempt,
            };
            let mut after = match &attempt {
                Ok(assembled) => {
                    usage.add(assembled.usage);
                    AfterModelCallEvent::new(
                        Some(assembled.message.clone()),
                        Some(assembled.stop_reason),
                        None,
                    )
                }
                Err(error) => AfterModelCallEvent::new(None, None, Some(error.clone())),
            };
            self.hooks.invoke(&mut after).await;
            if after.retry_requested() {
                hook_retries += 1;
                if hook_retries >= self.retry.max_attempts {
                    return Err(AgentError::TooManyRetries {
                        max: self.retry.max_attempts,
                    });
                }
                continue;
            }
            let error = match attempt {
                Ok(assembled) => return Ok(ModelOutcome::Answered(assembled)),
                Err(error) => error,
            };
            match error {
                ModelError::Throttled { retry_after, .. }
                    if throttled + 1 < self.retry.max_attempts =>
                {
                    throttled += 1;
                    let delay = self.retry.delay(throttled, retry_after);
                    tracing::warn!(
                        attempt = throttled,
                        delay_ms = delay.as_millis(),
                        "model throttled; retrying"
                    );
                    if let Some(events) = events {
                        events.send(TurnEvent::Throttled {
                            attempt: throttled,
                            delay,
                        });
                    }
                    tokio::select! {
                        () = token.cancelled() => return Ok(ModelOutcome::Cancelled),
                        () = tokio::time::sleep(delay) => {}
                    }
                }
                ModelError::ContextWindowOverflow { .. } => {
                    let Ok(removed) = self.window.reduce(&mut self.messages) else {
                        return Err(error.into());
                    };
                    tracing::warn!(
                        removed,
                        "context window overflow; dropped the oldest messages"
                    );
                    self.state.removed_count += removed as u64;
                    self.save_state()?;
                    if let Some(events) = events {
                        events.send(TurnEvent::ContextReduced { removed });
                    }
                }
                other => return Err(other.into()),
            }
        }
    }
}

async fn stream_message(
    model: &dyn Model,
    request: ModelRequest<'_>,
    events: Option<&EventSink>,
) -> Result<Assembled, ModelError> {
    let mut stream = model.stream(request).await?;
    let mut assembler = Assembler::default();
    while let Some(chunk) = stream.next().await {
        assembler.push(chunk?, events)?;
    }
    assembler.finish(events)
}
