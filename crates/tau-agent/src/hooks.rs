//! Hooks: ordered async callbacks around invocations, model calls and tool calls.
//!
//! Callbacks run in ascending `order`, ties in registration order, for every event (the
//! after-events too). The registry lists what it holds so a builder can audit it.

use std::collections::BTreeMap;
use std::future::Future;
use std::marker::PhantomData;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::interrupt::{Interrupt, InterruptRaised, interrupt_id};
use crate::message::{Message, ToolResult, ToolUse};
use crate::model::{AgentStop, ModelError};
use crate::tool::SharedTool;

/// Well-known orders.
pub struct HookOrder;

impl HookOrder {
    pub const SDK_FIRST: f64 = -100.0;
    pub const DEFAULT: f64 = 0.0;
    pub const SDK_LAST: f64 = 100.0;
}

/// What a callback returns: `Err` only to raise an interrupt.
pub type HookResult = Result<(), InterruptRaised>;
pub type HookFuture<'a> = Pin<Box<dyn Future<Output = HookResult> + Send + 'a>>;

/// An async callback for events of type `E`.
pub trait Hook<E>: Send + Sync {
    fn call<'a>(&'a self, event: &'a mut E) -> HookFuture<'a>;
}

/// An async closure as a hook; make one with [`async_hook`].
pub struct AsyncHook<E, F>(F, PhantomData<fn(&mut E)>);

/// Wraps `|event| Box::pin(async move { ... })` as a hook.
pub fn async_hook<E, F>(callback: F) -> AsyncHook<E, F>
where
    F: for<'a> Fn(&'a mut E) -> HookFuture<'a> + Send + Sync,
{
    AsyncHook(callback, PhantomData)
}

impl<E, F> Hook<E> for AsyncHook<E, F>
where
    F: for<'a> Fn(&'a mut E) -> HookFuture<'a> + Send + Sync,
{
    fn call<'a>(&'a self, event: &'a mut E) -> HookFuture<'a> {
        (self.0)(event)
    }
}

/// Wraps a synchronous closure as a hook.
pub struct SyncHook<F>(pub F);

impl<E: Send, F> Hook<E> for SyncHook<F>
where
    F: Fn(&mut E) -> HookResult + Send + Sync,
{
    fn call<'a>(&'a self, event: &'a mut E) -> HookFuture<'a> {
        let result = (self.0)(event);
        Box::pin(std::future::ready(result))
    }
}

/// Which event a callback is registered for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HookEventKind {
    BeforeInvocation,
    BeforeModelCall,
    AfterModelCall,
    BeforeToolCall,
    AfterToolCall,
    ToolCallSkipped,
    MessageAdded,
    AfterInvocation,
}

/// One registered callback, as the audit sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Registration {
    pub event: HookEventKind,
    pub name: String,
    pub order: f64,
}

/// A registration the registry refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HookError {
    #[error("hook '{name}' has an order that is not a number")]
    OrderNotANumber { name: String },
}

/// Fired once when an invocation starts. The system prompt may be replaced.
#[derive(Debug, Clone, PartialEq)]
pub struct BeforeInvocationEvent {
    pub system_prompt: Option<String>,
    /// True when the invocation resumes from interrupts rather than taking a prompt.
    pub resuming: bool,
}

/// Fired before each model call. The system prompt of this call may be replaced.
#[derive(Debug, Clone, PartialEq)]
pub struct BeforeModelCallEvent {
    pub system_prompt: Option<String>,
    /// How many model calls this invocation made before this one.
    pub calls_before: u32,
}

/// Fired after each model call, successful or not. A callback may ask for the call to be
/// made again; what it returned is then discarded.
#[derive(Debug, Clone, PartialEq)]
pub struct AfterModelCallEvent {
    pub message: Option<Message>,
    pub stop_reason: Option<AgentStop>,
    pub error: Option<ModelError>,
    retry: bool,
}

impl AfterModelCallEvent {
    pub(crate) fn new(
        message: Option<Message>,
        stop_reason: Option<AgentStop>,
        error: Option<ModelError>,
    ) -> Self {
        Self {
            message,
            stop_reason,
            error,
            retry: false,
        }
    }

    pub fn request_retry(&mut self) {
        self.retry = true;
    }

    pub fn retry_requested(&self) -> bool {
        self.retry
    }
}

/// Fired before each tool call. A callback may replace the tool use and the selected tool,
/// cancel the call with a text the model reads, or raise an interrupt.
pub struct BeforeToolCallEvent {
    /// What will run, as left by the callbacks so far.
    pub tool_use: ToolUse,
    /// The tool that will run it; `None` when the name is not registered.
    pub selected_tool: Option<SharedTool>,
    original_tool_use_id: String,
    cancel_message: Option<String>,
    responses: Arc<BTreeMap<String, Value>>,
}

impl BeforeToolCallEvent {
    pub(crate) fn new(
        tool_use: ToolUse,
        selected_tool: Option<SharedTool>,
        responses: Arc<BTreeMap<String, Value>>,
    ) -> Self {
        let original_tool_use_id = tool_use.tool_use_id.clone();
        Self {
            tool_use,
            selected_tool,
            original_tool_use_id,
            cancel_message: None,
            responses,
        }
    }

    /// Cancels the call: it does not run and the model reads `message` as an error result.
    /// A cancelled call stays cancelled; a later callback cannot undo it.
    pub fn cancel_tool(&mut self, message: impl Into<String>) {
        if self.cancel_message.is_none() {
            self.cancel_message = Some(message.into());
        }
    }

    pub fn cancel_message(&self) -> Option<&str> {
        self.cancel_message.as_deref()
    }

    /// Returns the caller's answer to the interrupt `name` when the invocation was resumed
    /// with one; otherwise raises it (hand the error back with `?`).
    pub fn interrupt(&mut self, name: &str, reason: Value) -> Result<Value, InterruptRaised> {
        let id = interrupt_id(&self.original_tool_use_id, name);
        match self.responses.get(&id) {
            Some(response) => Ok(response.clone()),
            None => Err(InterruptRaised(Box::new(Interrupt {
                id,
                name: name.to_owned(),
                reason,
                response: None,
            }))),
        }
    }
}

/// Fired after each tool call that got as far as the hooks, cancelled calls included.
pub struct AfterToolCallEvent {
    /// The tool use as the before-tool-call callbacks left it.
    pub tool_use: ToolUse,
    /// The name of the tool that was selected, if any.
    pub selected_tool: Option<String>,
    /// What the model will read; a callback may replace it.
    pub result: ToolResult,
    /// The tool's own error, when it failed.
    pub error: Option<String>,
    pub cancel_message: Option<String>,
    /// True when the tool's `run` was entered.
    pub ran: bool,
    /// True when the invocation was cancelled before the call finished (a running tool
    /// was told to stop).
    pub cancelled: bool,
    pub duration: Duration,
}

/// Why a tool use never reached the tool-call hooks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SkipReason {
    /// The name fails the tool name pattern; no tool can have it.
    InvalidName,
    /// The input is not a JSON object.
    InvalidInput { reason: String },
    /// The invocation was cancelled before the call started.
    Cancelled,
}

/// Fired for a tool use that never reached the tool-call hooks: nothing ran, nothing can
/// change it. Observers record it; the model reads `result`.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCallSkippedEvent {
    pub tool_use: ToolUse,
    pub reason: SkipReason,
    pub result: ToolResult,
}

/// Fired whenever a message is appended to the conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct MessageAddedEvent {
    pub message: Message,
}

/// Fired once when an invocation ends, whatever the reason.
#[derive(Debug, Clone, PartialEq)]
pub struct AfterInvocationEvent {
    pub stop_reason: Option<AgentStop>,
    pub error: Option<String>,
}

struct Entry<E> {
    name: String,
    order: f64,
    hook: Arc<dyn Hook<E>>,
}

/// Callbacks of one event, in run order.
#[doc(hidden)]
pub struct Slot<E>(Vec<Entry<E>>);

impl<E> Default for Slot<E> {
    fn default() -> Self {
        Self(Vec::new())
    }
}

/// Ties an event type to its slot in the registry.
pub trait HookEvent: Send + Sized + 'static {
    const KIND: HookEventKind;
    #[doc(hidden)]
    fn slot(registry: &HookRegistry) -> &Slot<Self>;
    #[doc(hidden)]
    fn slot_mut(registry: &mut HookRegistry) -> &mut Slot<Self>;
}

macro_rules! hook_events {
    ($($event:ty => $kind:ident, $field:ident;)*) => {
        /// All registered callbacks, per event, kept in run order.
        #[derive(Default)]
        pub struct HookRegistry {
            $($field: Slot<$event>,)*
        }

        $(impl HookEvent for $event {
            const KIND: HookEventKind = HookEventKind::$kind;
            fn slot(registry: &HookRegistry) -> &Slot<Self> { &registry.$field }
            fn slot_mut(registry: &mut HookRegistry) -> &mut Slot<Self> { &mut registry.$field }
        })*

        impl HookRegistry {
            /// Every registration, per event in run order.
            pub fn registrations(&self) -> Vec<Registration> {
                let mut all = Vec::new();
                $(all.extend(self.$field.0.iter().map(|e| Registration {
                    event: HookEventKind::$kind,
                    name: e.name.clone(),
                    order: e.order,
                }));)*
                all
            }
        }
    };
}

hook_events! {
    BeforeInvocationEvent => BeforeInvocation, before_invocation;
    BeforeModelCallEvent => BeforeModelCall, before_model_call;
    AfterModelCallEvent => AfterModelCall, after_model_call;
    BeforeToolCallEvent => BeforeToolCall, before_tool_call;
    AfterToolCallEvent => AfterToolCall, after_tool_call;
    ToolCallSkippedEvent => ToolCallSkipped, tool_call_skipped;
    MessageAddedEvent => MessageAdded, message_added;
    AfterInvocationEvent => AfterInvocation, after_invocation;
}

/// How one run of the callbacks for an event went.
#[derive(Debug, Default)]
pub(crate) struct Invoked {
    pub interrupts: Vec<Interrupt>,
    /// Names of callbacks that panicked.
    pub panicked: Vec<String>,
}

impl HookRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers `hook` for events of type `E` at `order`. Among equal orders, earlier
    /// registrations run first.
    pub fn add<E: HookEvent>(
        &mut self,
        name: impl Into<String>,
        order: f64,
        hook: impl Hook<E> + 'static,
    ) -> Result<(), HookError> {
        let name = name.into();
        if order.is_nan() {
            return Err(HookError::OrderNotANumber { name });
        }
        let entries = &mut E::slot_mut(self).0;
        // Insert after every entry whose order is not greater: ascending, ties stable.
        let at = entries.partition_point(|e| e.order <= order);
        entries.insert(
            at,
            Entry {
                name,
                order,
                hook: Arc::new(hook),
            },
        );
        Ok(())
    }

    /// Registrations for one event, in run order.
    pub fn registrations_for(&self, kind: HookEventKind) -> Vec<Registration> {
        self.registrations()
            .into_iter()
            .filter(|r| r.event == kind)
            .collect()
    }

    /// Runs the callbacks for `event` in order. A panic in one callback is caught and
    /// reported; the others still run. An interrupt ends the run: the call will not go
    /// ahead now, so no later callback (a policy gate above all) is consulted about it
    /// until the caller answers and the callbacks run again.
    pub(crate) async fn invoke<E: HookEvent>(&self, event: &mut E) -> Invoked {
        let mut invoked = Invoked::default();
        for entry in &E::slot(self).0 {
            match AssertUnwindSafe(async { entry.hook.call(event).await })
                .catch_unwind()
                .await
            {
                Ok(Ok(())) => {}
                Ok(Err(InterruptRaised(interrupt))) => {
                    invoked.interrupts.push(*interrupt);
                    break;
                }
                Err(_) => {
                    tracing::error!(hook = %entry.name, event = ?E::KIND, "hook panicked");
                    invoked.panicked.push(entry.name.clone());
                }
            }
        }
        invoked
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use std::sync::Mutex;

    fn recorder(
        log: &Arc<Mutex<Vec<String>>>,
        label: &'static str,
    ) -> SyncHook<impl Fn(&mut MessageAddedEvent) -> HookResult + use<>> {
        let log = Arc::clone(log);
        SyncHook(move |_: &mut MessageAddedEvent| {
            log.lock().unwrap().push(label.to_owned());
            Ok(())
        })
    }

    #[tokio::test]
    async fn callbacks_run_in_ascending_order_ties_in_registration_order() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let mut registry = HookRegistry::new();
        registry
            .add("last", HookOrder::SDK_LAST, recorder(&log, "last"))
            .unwrap();
        registry
            .add("default-a", HookOrder::DEFAULT, recorder(&log, "default-a"))
            .unwrap();
        registry
            .add("first", HookOrder::SDK_FIRST, recorder(&log, "first"))
            .unwrap();
        registry
            .add("default-b", HookOrder::DEFAULT, recorder(&log, "default-b"))
            .unwrap();
        registry.add("half", 0.5, recorder(&log, "half")).unwrap();
        let mut event = MessageAddedEvent {
            message: Message::user_text("x"),
        };
        registry.invoke(&mut event).await;
        assert_eq!(
            *log.lock().unwrap(),
            vec!["first", "default-a", "default-b", "half", "last"]
        );
        let names: Vec<_> = registry
            .registrations_for(HookEventKind::MessageAdded)
            .into_iter()
            .map(|r| (r.name, r.order))
            .collect();
        assert_eq!(
            names,
            vec![
                ("first".to_owned(), -100.0),
                ("default-a".to_owned(), 0.0),
                ("default-b".to_owned(), 0.0),
                ("half".to_owned(), 0.5),
                ("last".to_owned(), 100.0)
            ]
        );
    }

    #[test]
    fn nan_order_is_refused() {
        let mut registry = HookRegistry::new();
        let error = registry
            .add(
                "bad",
                f64::NAN,
                SyncHook(|_: &mut MessageAddedEvent| Ok(())),
            )
            .unwrap_err();
        assert_eq!(error, HookError::OrderNotANumber { name: "bad".into() });
        assert!(registry.registrations().is_empty());
    }

    #[tokio::test]
    async fn async_closures_can_be_hooks_and_panics_are_caught() {
        let mut registry = HookRegistry::new();
        registry
            .add(
                "async",
                HookOrder::DEFAULT,
                async_hook(|event: &mut BeforeModelCallEvent| {
                    Box::pin(async move {
                        tokio::task::yield_now().await;
                        event.system_prompt = Some("persona".into());
                        Ok(())
                    })
                }),
            )
            .unwrap();
        registry
            .add(
                "boom",
                HookOrder::SDK_LAST,
                SyncHook(|_: &mut BeforeModelCallEvent| -> HookResult { panic!("boom") }),
            )
            .unwrap();
        let mut event = BeforeModelCallEvent {
            system_prompt: None,
            calls_before: 0,
        };
        let invoked = registry.invoke(&mut event).await;
        assert_eq!(event.system_prompt.as_deref(), Some("persona"));
        assert_eq!(invoked.panicked, vec!["boom".to_owned()]);
    }
}
