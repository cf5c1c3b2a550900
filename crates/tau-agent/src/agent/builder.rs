//! Building an agent: tools, hooks, limits, and restoring its session.

use std::sync::Arc;

use super::{Agent, AgentError, ModelView, Store};
use crate::control::{CancelHandle, Limits, RetryPolicy};
use crate::conversation::SlidingWindow;
use crate::executor::Executor;
use crate::hooks::HookRegistry;
use crate::message::Message;
use crate::model::Model;
use crate::session::{AgentState, SessionRepository};
use crate::tool::SharedTool;
use crate::tool_registry::ToolRegistry;
use tau_protocol::SessionId;

/// Builds an [`Agent`].
pub struct AgentBuilder {
    model: Arc<dyn Model>,
    tools: Vec<SharedTool>,
    hooks: HookRegistry,
    system_prompt: Option<String>,
    executor: Executor,
    limits: Limits,
    retry: RetryPolicy,
    window: SlidingWindow,
    messages: Vec<Message>,
    session: Option<(Arc<dyn SessionRepository>, SessionId)>,
    repair_at_build: bool,
    view: Option<Arc<dyn ModelView>>,
}

impl AgentBuilder {
    pub(super) fn new(model: Arc<dyn Model>) -> Self {
        Self {
            model,
            tools: Vec::new(),
            hooks: HookRegistry::new(),
            system_prompt: None,
            executor: Executor::default(),
            limits: Limits::default(),
            retry: RetryPolicy::default(),
            window: SlidingWindow::default(),
            messages: Vec::new(),
            session: None,
            repair_at_build: true,
            view: None,
        }
    }

    /// What the model reads of the history, when it is not the history as stored.
    pub fn model_view(mut self, view: Arc<dyn ModelView>) -> Self {
        self.view = Some(view);
        self
    }

    pub fn tool(mut self, tool: SharedTool) -> Self {
        self.tools.push(tool);
        self
    }

    pub fn tools(mut self, tools: impl IntoIterator<Item = SharedTool>) -> Self {
        self.tools.extend(tools);
        self
    }

    pub fn hooks(mut self, hooks: HookRegistry) -> Self {
        self.hooks = hooks;
        self
    }

    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(prompt.into());
        self
    }

    pub fn executor(mut self, executor: Executor) -> Self {
        self.executor = executor;
        self
    }

    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    pub fn retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    pub fn window(mut self, window: SlidingWindow) -> Self {
        self.window = window;
        self
    }

    /// Starts from these messages (ignored when a stored session already has some).
    pub fn messages(mut self, messages: Vec<Message>) -> Self {
        self.messages = messages;
        self
    }

    /// Stores the conversation in `repository` under `id`, restoring what is there.
    pub fn session(mut self, repository: Arc<dyn SessionRepository>, id: SessionId) -> Self {
        self.session = Some((repository, id));
        self
    }

    /// Leaves the tool uses a restored history ends on unanswered when the agent is
    /// built, for the layer above to answer those whose fate it knows first
    /// ([`Agent::repair_history_with`]); the next prompt repairs the rest as usual.
    pub fn answer_unfinished_calls_later(mut self) -> Self {
        self.repair_at_build = false;
        self
    }

    /// Registers the tools, restores the session and repairs its history (unless
    /// [`AgentBuilder::answer_unfinished_calls_later`]).
    pub async fn build(self) -> Result<Agent, AgentError> {
        let mut tools = ToolRegistry::new();
        tools.register_all(self.tools)?;
        let mut agent = Agent {
            model: self.model,
            tool_specs: tools.specs(),
            tools,
            hooks: self.hooks,
            system_prompt: self.system_prompt,
            executor: self.executor,
            limits: self.limits,
            retry: self.retry,
            window: self.window,
            messages: Vec::new(),
            state: AgentState::default(),
            store: None,
            cancel: CancelHandle::default(),
            view: self.view,
        };
        let initial = self.messages;
        match self.session {
            Some((repository, id)) => {
                repository.ensure_session(&id)?;
                let state = repository.load_state(&id)?.unwrap_or_default();
                let stored = repository.message_count(&id)?;
                agent.messages = repository.messages(&id, state.removed_count)?;
                agent.state = state;
                agent.store = Some(Store {
                    repository,
                    id,
                    stored,
                });
                if stored == 0 {
                    for message in initial {
                        agent.append(message).await?;
                    }
                }
            }
            None => agent.messages = initial,
        }
        if self.repair_at_build && !agent.state.interrupt_state.activated {
            agent.repair_history().await?;
        }
        Ok(agent)
    }
}
