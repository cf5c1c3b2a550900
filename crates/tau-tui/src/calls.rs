//! Counts the model calls of the running turn, for the status bar's "calls left". A
//! before-model-call callback that only counts: it changes nothing the loop does.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use tau_agent::{BeforeModelCallEvent, HookError, HookOrder, HookRegistry, SyncHook};
use tau_core::HookProvider;

/// The hook's name in the registry.
pub const MODEL_CALLS_HOOK: &str = "tau.tui.model_calls";

/// Shared between the hook and the event loop.
#[derive(Clone, Default)]
pub struct ModelCalls {
    count: Arc<AtomicU32>,
}

impl ModelCalls {
    pub fn new() -> Self {
        Self::default()
    }

    pub(crate) fn reset(&self) {
        self.count.store(0, Ordering::Relaxed);
    }

    pub(crate) fn get(&self) -> u32 {
        self.count.load(Ordering::Relaxed)
    }

    /// The provider to hand `build_agent`.
    pub fn provider(&self) -> Arc<dyn HookProvider> {
        Arc::new(self.clone())
    }
}

impl HookProvider for ModelCalls {
    fn name(&self) -> &str {
        MODEL_CALLS_HOOK
    }

    fn register_hooks(&self, registry: &mut HookRegistry) -> Result<(), HookError> {
        let count = Arc::clone(&self.count);
        registry.add(
            MODEL_CALLS_HOOK,
            HookOrder::DEFAULT,
            SyncHook(move |_event: &mut BeforeModelCallEvent| {
                count.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }),
        )
    }
}
