//! `TierHook`: puts the gate into the agent loop, last of all before-tool-call callbacks.
//! The before callback checks, the loop runs (or does not run) the tool, the after
//! callback records; the [`CallRecord`] in between is the one `gated_call` uses.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;
use tau_agent::{
    AfterToolCallEvent, BeforeToolCallEvent, Hook, HookError, HookFuture, HookOrder, HookRegistry,
    HookResult, SharedTool, SkipReason, ToolCallSkippedEvent,
};
use tau_protocol::{Approval, CallDecision, CallFate, CallStatus, DecidedBy, Refusal, Verdict};

use crate::approval::{
    APPROVAL_INTERRUPT, TierGate, ToolCallRecord, question_reason, stored_question, summarize,
    unknown_tool_text,
};
use crate::audit::ErrorSite;
use crate::catalog::ToolCatalog;
use crate::gated::CallRecord;

/// The name both TierHook callbacks are registered under; the build audit looks for it.
pub const TIER_GATE_HOOK: &str = "tau.tier_gate";

/// The gate as a hook: asks before each call, records after it.
pub struct TierHook {
    gate: Arc<TierGate>,
    catalog: Arc<ToolCatalog>,
    decided: Mutex<HashMap<String, CallRecord>>,
}

/// The before-tool-call half.
struct GateBefore(Arc<TierHook>);
/// The after-tool-call half.
struct GateAfter(Arc<TierHook>);
/// Calls refused before any hook.
struct GateSkipped(Arc<TierHook>);

impl TierHook {
    pub fn new(gate: Arc<TierGate>, catalog: Arc<ToolCatalog>) -> Arc<Self> {
        Arc::new(Self {
            gate,
            catalog,
            decided: Mutex::new(HashMap::new()),
        })
    }

    /// Registers the callbacks at `SDK_LAST`.
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
        )?;
        registry.add::<ToolCallSkippedEvent>(
            TIER_GATE_HOOK,
            HookOrder::SDK_LAST,
            GateSkipped(Arc::clone(self)),
        )
    }

    fn decided(&self) -> std::sync::MutexGuard<'_, HashMap<String, CallRecord>> {
        self.decided.lock().unwrap_or_else(PoisonError::into_inner)
    }

    async fn before(&self, event: &mut BeforeToolCallEvent) -> HookResult {
        let name = event.tool_use.name.clone();
        let id = event.tool_use.tool_use_id.clone();
        let arguments = event.tool_use.input.clone();
        let decision = if let Some(text) = event.cancel_message() {
            // An earlier callback already stopped it: nobody is asked about a call that will not run.
            CallDecision::new(Verdict::refused(Refusal::Policy, text), None)
        } else if !self.is_catalog_tool(&name, event.selected_tool.as_ref()) {
            self.gate.emit_error(
                ErrorSite::TierGate,
                format!("the tool selected for '{name}' is not the one tau registered"),
                &name,
                &id,
            );
            CallDecision::new(
                Verdict::refused(Refusal::Policy, unknown_tool_text(&name)),
                None,
            )
        } else if self.gate.is_durable() {
            match self.durable(event, &name, &arguments, &id).await {
                Ok(decision) => decision,
                // The question is stored: the turn pauses on the gate's own interrupt.
                Err(raised) => return Err(raised),
            }
        } else {
            let decision = self.gate.check(&name, &arguments, &id).await;
            // A person's yes, recorded as let through: the tool starts next.
            if decision.allowed()
                && decision.approval_id.is_some()
                && self.gate.records_dispatches()
            {
                crate::failpoint::reach(crate::failpoint::DISPATCHED);
            }
            decision
        };
        let call = CallRecord::new(decision, &name, &id, arguments);
        if !call.decision.allowed() {
            event.cancel_tool(call.refusal_text());
        }
        self.decided().insert(id, call);
        Ok(())
    }

    /// The durable ladder: a resumed call is checked against its stored answer (the
    /// interrupt's response names it, read once here); a new tier-2 question is stored and
    /// raises the gate's own interrupt. A panic refuses.
    async fn durable(
        &self,
        event: &mut BeforeToolCallEvent,
        name: &str,
        arguments: &Value,
        id: &str,
    ) -> Result<CallDecision, tau_agent::InterruptRaised> {
        if let Ok(response) = event.interrupt(APPROVAL_INTERRUPT, Value::Null) {
            let resumed =
                std::panic::catch_unwind(AssertUnwindSafe(|| match stored_question(&response) {
                    Some(question) => self.gate.resume_durable(name, arguments, id, &question),
                    None => self.gate.resume_unnamed(name, id),
                }));
            let Ok(decision) = resumed else {
                return Ok(self.gate.failed(name, id));
            };
            if decision.allowed() {
                crate::failpoint::reach(crate::failpoint::DISPATCHED);
            }
            return Ok(decision);
        }
        let decision = self.gate.check(name, arguments, id).await;
        let (Verdict::Asked, Some(question)) = (&decision.verdict, &decision.approval_id) else {
            return Ok(decision);
        };
        match event.interrupt(APPROVAL_INTERRUPT, question_reason(question)) {
            Err(raised) => Err(raised),
            // No answer can exist for a question stored a moment ago.
            Ok(_) => Ok(self.gate.failed(name, id)),
        }
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
        let Some(call) = self.decided().remove(&id) else {
            self.record_unchecked(event);
            return;
        };
        let changed = call.arguments() != &event.tool_use.input || call.tool() != tool;
        if event.ran && (!call.decision.allowed() || changed) {
            let message = if call.decision.allowed() {
                "the call that ran differs from the call the gate decided on"
            } else {
                "a call the gate refused ran anyway"
            };
            self.gate
                .emit_error(ErrorSite::TierGate, message, &tool, &id);
            call.finished(
                &self.gate,
                CallStatus::Error,
                event.tool_use.input.clone(),
                &event.result,
                event.duration,
            );
        } else if !call.decision.allowed() {
            call.refused(&self.gate, Some(event.duration));
        } else if event.ran {
            let stored = call.decision.approval_id.clone();
            if stored.is_some() {
                crate::failpoint::reach(crate::failpoint::RAN);
            }
            call.ran(&self.gate, &event.result, event.cancelled, event.duration);
            // Its result goes into the turn's history next; a stored question's row says
            // it finished, so a restart never takes it for a call that was cut off.
            if let Some(id) = stored {
                self.gate.call_finished(&id);
                crate::failpoint::reach(crate::failpoint::FINISHED);
            }
        } else {
            // Allowed, yet a later part of the loop did not run it: it failed.
            call.finished(
                &self.gate,
                CallStatus::Error,
                event.tool_use.input.clone(),
                &event.result,
                event.duration,
            );
        }
    }

    /// A call that reached the after callback without passing the before one.
    fn record_unchecked(&self, event: &AfterToolCallEvent) {
        let tool = event.tool_use.name.clone();
        let id = event.tool_use.tool_use_id.clone();
        let (status, approval, decided_by) = if event.ran {
            self.gate.emit_error(
                ErrorSite::TierGate,
                "a tool call ran that the gate never checked",
                &tool,
                &id,
            );
            (
                CallStatus::Error,
                Approval::Failed,
                DecidedBy::ApproverFailed,
            )
        } else {
            (CallStatus::Refused, Approval::Refused, DecidedBy::Policy)
        };
        self.gate.record(ToolCallRecord {
            tier: self.catalog.get(&tool).map(|e| e.tier),
            tool,
            tool_use_id: id,
            arguments: event.tool_use.input.clone(),
            fate: CallFate {
                status,
                approval,
                decided_by,
            },
            approval_id: None,
            result_summary: Some(event.result.text()),
            duration: Some(event.duration),
            provenance: tau_protocol::CallProvenance::default(),
        });
    }

    fn skipped(&self, event: &ToolCallSkippedEvent) {
        let (status, decided_by) = match event.reason {
            SkipReason::InvalidName | SkipReason::InvalidInput { .. } => {
                (CallStatus::Invalid, DecidedBy::Policy)
            }
            SkipReason::Cancelled => (CallStatus::Cancelled, DecidedBy::Cancelled),
        };
        let tool = &event.tool_use.name;
        self.gate.record(ToolCallRecord {
            tier: self.catalog.get(tool).map(|e| e.tier),
            // A name no tool can have may be anything the model wrote: keep it short.
            tool: summarize(tool),
            tool_use_id: event.tool_use.tool_use_id.clone(),
            arguments: event.tool_use.input.clone(),
            fate: CallFate {
                status,
                approval: Approval::Refused,
                decided_by,
            },
            approval_id: None,
            result_summary: Some(event.result.text()),
            duration: None,
            provenance: tau_protocol::CallProvenance::default(),
        });
    }
}

impl Hook<BeforeToolCallEvent> for GateBefore {
    fn call<'a>(&'a self, event: &'a mut BeforeToolCallEvent) -> HookFuture<'a> {
        Box::pin(async move { self.0.before(event).await })
    }
}

impl Hook<AfterToolCallEvent> for GateAfter {
    fn call<'a>(&'a self, event: &'a mut AfterToolCallEvent) -> HookFuture<'a> {
        self.0.after(event);
        if event.ran {
            // What a tool returned is its author's text, not tau's: said on the result, so
            // it is known for what it is after any restart.
            let tool = event.tool_use.name.clone();
            let trusted =
                crate::approval::TierLookup::provenance_rule(self.0.catalog.as_ref(), &tool)
                    .trusted;
            event.result.source = Some(tau_protocol::Source::ToolResult {
                tool,
                call_id: event.tool_use.tool_use_id.clone(),
                trusted,
            });
        }
        Box::pin(std::future::ready(Ok(())))
    }
}

impl Hook<ToolCallSkippedEvent> for GateSkipped {
    fn call<'a>(&'a self, event: &'a mut ToolCallSkippedEvent) -> HookFuture<'a> {
        self.0.skipped(event);
        Box::pin(std::future::ready(Ok(())))
    }
}
