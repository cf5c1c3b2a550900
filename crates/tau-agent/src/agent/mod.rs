//! The agent: the loop that calls the model, runs the tools it asks for, and repeats.

use std::sync::Arc;

use crate::control::{CancelHandle, Limits, RetryPolicy};
use crate::conversation::{SlidingWindow, repair_message, repair_message_with};
use crate::events::{EventSink, TurnEvent};
use crate::executor::Executor;
use crate::hooks::{AfterInvocationEvent, BeforeInvocationEvent, HookRegistry, MessageAddedEvent};
use crate::interrupt::{Interrupt, InterruptResponse, InterruptState};
use crate::message::{ContentBlock, Message, Role, ToolResult};
use crate::model::{AgentStop, Model, ModelError, Usage};
use crate::session::{AgentState, SessionError, SessionRepository};
use crate::tool::ToolSpec;
use crate::tool_registry::{ToolRegistry, ToolRegistryError};
use tau_protocol::SessionId;

mod builder;
mod turn;

pub use builder::AgentBuilder;

/// The assistant message stored when the caller cancels while the model streams.
pub const CANCELLED_BY_USER_TEXT: &str = "Cancelled by user";

/// What an invocation starts from.
#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    /// A new user message.
    Prompt(Vec<ContentBlock>),
    /// A new user message whose text someone else wrote (the person passed it on): stored
    /// with its source, so the layer above can tell it from the person's own words.
    PromptFrom {
        content: Vec<ContentBlock>,
        source: tau_protocol::Source,
    },
    /// Answers to the interrupts the last invocation stopped on.
    Resume(Vec<InterruptResponse>),
}

impl From<&str> for Input {
    fn from(text: &str) -> Self {
        Self::Prompt(vec![ContentBlock::Text(text.to_owned())])
    }
}

impl From<String> for Input {
    fn from(text: String) -> Self {
        Self::Prompt(vec![ContentBlock::Text(text)])
    }
}

/// How an invocation ended.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentResult {
    pub stop_reason: AgentStop,
    /// The last assistant message of this invocation, if the model answered.
    pub message: Option<Message>,
    pub usage: Usage,
    pub model_calls: u32,
    /// The questions waiting for an answer when `stop_reason` is `interrupt`.
    pub interrupts: Vec<Interrupt>,
}

/// Why an invocation could not finish.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error(transparent)]
    Model(#[from] ModelError),
    #[error(transparent)]
    Session(#[from] SessionError),
    #[error(transparent)]
    Tools(#[from] ToolRegistryError),
    #[error("the agent is waiting for answers to interrupts ({pending}); resume with responses")]
    MustResume { pending: String },
    #[error("there is no interrupt to resume")]
    NothingToResume,
    #[error("no pending interrupt has the id '{id}'")]
    UnknownInterrupt { id: String },
    #[error("after-model-call hooks asked for a retry on every one of the {max} attempts")]
    TooManyRetries { max: u32 },
}

struct Store {
    repository: Arc<dyn SessionRepository>,
    id: SessionId,
    /// Messages stored so far for this session, the dropped ones included.
    stored: u64,
}

/// A conversation with a model and its tools.
pub struct Agent {
    model: Arc<dyn Model>,
    tools: ToolRegistry,
    hooks: HookRegistry,
    system_prompt: Option<String>,
    executor: Executor,
    limits: Limits,
    retry: RetryPolicy,
    window: SlidingWindow,
    /// The specs of `tools`, made once: every model call lends them.
    tool_specs: Vec<ToolSpec>,
    messages: Vec<Message>,
    state: AgentState,
    store: Option<Store>,
    cancel: CancelHandle,
    view: Option<Arc<dyn ModelView>>,
}

/// What the model reads of the history. The history is stored as it happened; a view
/// lets the layer above show the model the same messages differently (tau frames text
/// from outside as quoted data with its source).
pub trait ModelView: Send + Sync {
    /// The history as the model reads it; `None`: as stored.
    fn view(&self, messages: &[Message]) -> Option<Vec<Message>>;
}

impl Agent {
    pub fn builder(model: Arc<dyn Model>) -> AgentBuilder {
        AgentBuilder::new(model)
    }

    /// The live history, as stored (a [`ModelView`] may show the model it differently).
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    pub fn state(&self) -> &AgentState {
        &self.state
    }

    pub fn interrupt_state(&self) -> &InterruptState {
        &self.state.interrupt_state
    }

    pub fn tools(&self) -> &ToolRegistry {
        &self.tools
    }

    pub fn hooks(&self) -> &HookRegistry {
        &self.hooks
    }

    /// Hooks added here after the agent was built are not audited by whoever built it.
    pub fn hooks_mut(&mut self) -> &mut HookRegistry {
        &mut self.hooks
    }

    pub fn system_prompt(&self) -> Option<&str> {
        self.system_prompt.as_deref()
    }

    pub fn executor(&self) -> Executor {
        self.executor
    }

    pub fn set_executor(&mut self, executor: Executor) {
        self.executor = executor;
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Budgets for the next invocations.
    pub fn set_limits(&mut self, limits: Limits) {
        self.limits = limits;
    }

    pub fn session_id(&self) -> Option<&SessionId> {
        self.store.as_ref().map(|s| &s.id)
    }

    /// A handle that cancels the running invocation from another task.
    pub fn cancel_handle(&self) -> CancelHandle {
        self.cancel.clone()
    }

    /// Stores a free value in the agent state (saved with the session).
    pub fn set_state_value(
        &mut self,
        key: impl Into<String>,
        value: serde_json::Value,
    ) -> Result<(), AgentError> {
        self.state.values.insert(key.into(), value);
        self.save_state()
    }

    /// Leaves the interrupt state without answering: the pending questions are dropped and
    /// the history ends on the unanswered tool uses, repaired by the next prompt.
    pub fn deactivate_interrupts(&mut self) -> Result<(), AgentError> {
        self.state.interrupt_state.deactivate();
        self.save_state()
    }

    /// Answers every unanswered tool use at the end of the history with
    /// `Tool was interrupted.`; true when something was repaired.
    pub async fn repair_history(&mut self) -> Result<bool, AgentError> {
        match repair_message(&self.messages) {
            Some(message) => {
                self.append(message).await?;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// [`Agent::repair_history`], answering each unanswered tool use with the result
    /// `known` gives for it, where it gives one (what the layer above knows became of the
    /// call); true when something was repaired.
    pub async fn repair_history_with(
        &mut self,
        known: impl Fn(&crate::message::ToolUse) -> Option<ToolResult>,
    ) -> Result<bool, AgentError> {
        match repair_message_with(&self.messages, known) {
            Some(message) => {
                self.append(message).await?;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// Runs one invocation: a prompt, or the answers to pending interrupts.
    pub async fn invoke(
        &mut self,
        input: impl Into<Input>,
        events: Option<&EventSink>,
    ) -> Result<AgentResult, AgentError> {
        let token = self.cancel.begin();
        let input = input.into();
        let resuming = matches!(input, Input::Resume(_));
        self.accept_input_state(&input)?;
        let mut before = BeforeInvocationEvent {
            system_prompt: self.system_prompt.clone(),
            resuming,
        };
        self.hooks.invoke(&mut before).await;
        let outcome = match input {
            Input::Prompt(content) => self.prompt(content, None).await,
            Input::PromptFrom { content, source } => self.prompt(content, Some(source)).await,
            Input::Resume(_) => Ok(()),
        };
        let outcome = match outcome {
            Ok(()) => self.run(&token, events, before.system_prompt).await,
            Err(error) => Err(error),
        };
        let mut after = AfterInvocationEvent {
            stop_reason: outcome.as_ref().ok().map(|r| r.stop_reason),
            error: outcome.as_ref().err().map(ToString::to_string),
        };
        self.hooks.invoke(&mut after).await;
        let removed = self.window.apply(&mut self.messages);
        if removed > 0 {
            self.state.removed_count += removed as u64;
            self.save_state()?;
        }
        // Each write already survives a killed process; this makes the invocation survive
        // a power loss too, for one flush per invocation rather than two per tool call.
        let outcome = match outcome {
            Ok(result) => self.sync_store().map(|()| result),
            Err(error) => Err(error),
        };
        if let (Ok(result), Some(events)) = (&outcome, events) {
            events.send(TurnEvent::Stop {
                reason: result.stop_reason,
                usage: result.usage,
            });
        }
        outcome
    }

    /// Appends a new user message (after repairing a history a crash cut off).
    async fn prompt(
        &mut self,
        content: Vec<ContentBlock>,
        source: Option<tau_protocol::Source>,
    ) -> Result<(), AgentError> {
        self.repair_history().await?;
        self.append(Message {
            role: Role::User,
            content,
            source,
        })
        .await
    }

    /// Checks the input fits the interrupt state and records the answers.
    fn accept_input_state(&mut self, input: &Input) -> Result<(), AgentError> {
        let interrupts = &mut self.state.interrupt_state;
        match input {
            Input::Prompt(_) | Input::PromptFrom { .. } if interrupts.activated => {
                let pending = interrupts
                    .pending()
                    .iter()
                    .map(|i| i.id.clone())
                    .collect::<Vec<_>>()
                    .join(", ");
                Err(AgentError::MustResume { pending })
            }
            Input::Prompt(_) | Input::PromptFrom { .. } => Ok(()),
            Input::Resume(_) if !interrupts.activated => Err(AgentError::NothingToResume),
            Input::Resume(responses) => {
                if let Some(unknown) = responses
                    .iter()
                    .find(|r| !interrupts.interrupts.contains_key(&r.interrupt_id))
                {
                    return Err(AgentError::UnknownInterrupt {
                        id: unknown.interrupt_id.clone(),
                    });
                }
                for response in responses {
                    if let Some(interrupt) = interrupts.interrupts.get_mut(&response.interrupt_id) {
                        interrupt.response = Some(response.response.clone());
                    }
                }
                self.save_state()
            }
        }
    }

    /// Appends to the history, stores it, then tells the message-added hooks.
    async fn append(&mut self, message: Message) -> Result<(), AgentError> {
        if let Some(store) = &mut self.store {
            store
                .repository
                .append_message(&store.id, store.stored, &message)?;
            store.stored += 1;
        }
        self.messages.push(message.clone());
        self.hooks.invoke(&mut MessageAddedEvent { message }).await;
        Ok(())
    }

    fn sync_store(&self) -> Result<(), AgentError> {
        if let Some(store) = &self.store {
            store.repository.sync()?;
        }
        Ok(())
    }

    fn save_state(&self) -> Result<(), AgentError> {
        if let Some(store) = &self.store {
            store.repository.save_state(&store.id, &self.state)?;
        }
        Ok(())
    }
}
