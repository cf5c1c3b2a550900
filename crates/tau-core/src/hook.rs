//! `TierHook`: puts the gate into the agent loop, last of all before-tool-call callbacks.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, PoisonError};

use futures::FutureExt;
use serde_json::Value;
use tau_agent::{
    AfterToolCallEvent, BeforeToolCallEvent, Hook, HookError, HookFuture, HookOrder, HookRegistry,
    SharedTool, ToolResultStatus,
};

use crate::approval::{Check, TierGate, ToolCallRecord, refusal_text, unknown_tool_text};
use crate::catalog::ToolCatalog;
use crate::events::{Approval, CallStatus, ErrorSite};
use crate::tier::Tier;

/// The name both TierHook callbacks are registered under; the build audit looks for it.
pub const TIER_GATE_HOOK: &str = "tau.tier_gate";

/// What the gate decided for one tool use, kept until the call is recorded.
struct Decided {
    allowed: bool,
    approval: Approval,
    tier: Option<Tier>,
    tool: String,
    arguments: Value,
}

/// The gate as a hook: asks before each call, records after it.
pub struct TierHook {
    gate: Arc<TierGate>,
    catalog: Arc<ToolCatalog>,
    decided: Mutex<HashMap<String, Decided>>,
}

/// The before-tool-call half.
struct GateBefore(Arc<TierHook>);
/// The after-tool-call half.
struct GateAfter(Arc<TierHook>);

impl TierHook {
    pub fn new(gate: Arc<TierGate>, catalog: Arc<ToolCatalog>) -> Arc<Self> {
        Arc::new(Self {
            gate,
            catalog,
            decided: Mutex::new(HashMap::new()),
        })
    }

    /// Registers both callbacks at `SDK_LAST`.
    pub fn register(self: &Arc<Self>, registry: &mut HookRegistry) -> Result<(), HookError> {
        registry.add::<BeforeToolCallEvent>(
            TIER_GATE_HOOK,
            HookOrder::SDK_LAST,
            GateBefore(Arc::clone(self)),
        )?;
        registry.add::<AfterToolCallEvent>(
            TIER_GATE_HOOK,
            HookOrder::SDK_LAST,
            GateAfter(Arc::clone(self)),
        )
    }

    fn decided(&self) -> std::sync::MutexGuard<'_, HashMap<String, Decided>> {
        self.decided.lock().unwrap_or_else(PoisonError::into_inner)
    }

    async fn before(&self, event: &mut BeforeToolCallEvent) {
        let name = event.tool_use.name.clone();
        let id = event.tool_use.tool_use_id.clone();
        let arguments = event.tool_use.input.clone();
        let check = if event.cancel_message().is_some() {
            // An earlier callback already stopped it: nobody is asked about a call that will not run.
            Check {
                allowed: false,
                refusal_text: None,
                approval: Approval::Refused,
                tier: None,
            }
        } else if !self.is_catalog_tool(&name, event.selected_tool.as_ref()) {
            self.gate.emit_error(
                ErrorSite::TierGate,
                format!("the tool selected for '{name}' is not the one tau registered"),
                &name,
                &id,
            );
            Check {
                allowed: false,
                refusal_text: Some(unknown_tool_text(&name)),
                approval: Approval::Refused,
                tier: None,
            }
        } else {
            match AssertUnwindSafe(self.gate.check(&name, &arguments, &id))
                .catch_unwind()
                .await
            {
                Ok(check) => check,
                Err(_) => {
                    self.gate.emit_error(
                        ErrorSite::TierGate,
                        "the tier gate failed; the call was refused",
                        &name,
                        &id,
                    );
                    Check {
                        allowed: false,
                        refusal_text: None,
                        approval: Approval::Failed,
                        tier: None,
                    }
                }
            }
        };
        if !check.allowed {
            event.cancel_tool(
                check
                    .refusal_text
                    .clone()
                    .unwrap_or_else(|| refusal_text(&name)),
            );
        }
        self.decided().insert(
            id,
            Decided {
                allowed: check.allowed,
                approval: check.approval,
                tier: check.tier,
                tool: name,
                arguments,
            },
        );
    }

    /// The selected tool must be the very object the catalog holds under that name; a
    /// hook that swapped it for another one is refused like an unknown tool.
    fn is_catalog_tool(&self, name: &str, selected: Option<&SharedTool>) -> bool {
        match (selected, self.catalog.get(name)) {
            (Some(selected), Some(entry)) => {
                std::ptr::addr_eq(Arc::as_ptr(selected), Arc::as_ptr(&entry.tool))
            }
            // Unknown names are the gate's to refuse; a missing tool cannot run.
            _ => true,
        }
    }

    fn after(&self, event: &AfterToolCallEvent) {
        let tool = event.tool_use.name.clone();
        let id = event.tool_use.tool_use_id.clone();
        let decided = self.decided().remove(&id);
        let tier = decided
            .as_ref()
            .and_then(|d| d.tier)
            .or_else(|| self.catalog.get(&tool).map(|e| e.tier));
        let (status, approval) = match decided {
            None if event.ran => {
                self.gate.emit_error(
                    ErrorSite::TierGate,
                    "a tool call ran that the gate never checked",
                    &tool,
                    &id,
                );
                (CallStatus::Error, Approval::Failed)
            }
            None => (CallStatus::Refused, Approval::Refused),
            Some(d) if !d.allowed && event.ran => {
                self.gate.emit_error(
                    ErrorSite::TierGate,
                    "a call the gate refused ran anyway",
                    &tool,
                    &id,
                );
                (CallStatus::Error, d.approval)
            }
            Some(d) if event.ran && (d.arguments != event.tool_use.input || d.tool != tool) => {
                self.gate.emit_error(
                    ErrorSite::TierGate,
                    "the call that ran differs from the call the gate decided on",
                    &tool,
                    &id,
                );
                (CallStatus::Error, d.approval)
            }
            Some(d) if !d.allowed => (CallStatus::Refused, d.approval),
            Some(d) if event.ran && event.result.status == ToolResultStatus::Success => {
                (CallStatus::Success, d.approval)
            }
            Some(d) => (CallStatus::Error, d.approval),
        };
        self.gate.record(ToolCallRecord {
            tool,
            tier,
            tool_use_id: id,
            arguments: event.tool_use.input.clone(),
            status,
            approval,
            result_summary: Some(event.result.text()),
            duration: Some(event.duration),
        });
    }
}

impl Hook<BeforeToolCallEvent> for GateBefore {
    fn call<'a>(&'a self, event: &'a mut BeforeToolCallEvent) -> HookFuture<'a> {
        Box::pin(async move {
            self.0.before(event).await;
            Ok(())
        })
    }
}

impl Hook<AfterToolCallEvent> for GateAfter {
    fn call<'a>(&'a self, event: &'a mut AfterToolCallEvent) -> HookFuture<'a> {
        self.0.after(event);
        Box::pin(std::future::ready(Ok(())))
    }
}
