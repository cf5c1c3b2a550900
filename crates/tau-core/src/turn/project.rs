//! How a turn becomes [`ChannelEvent`]s: the loop's events and the gate's audit events,
//! projected in the order they happen. Everything a channel shows about a call's state
//! comes from a field set here, never from a text.

use std::sync::{Arc, Mutex, PoisonError};

use tau_agent::TurnEvent;
use tau_protocol::{ChannelEvent, NoticeKind, TurnStop};

use crate::approval::{Standing, TierGate};
use crate::audit::{AuditEvent, EventSubscriber};
use crate::i18n::Notice;

/// Where a channel reads its turn from.
pub type ChannelSink = tau_agent::Sink<ChannelEvent>;

/// The audit events that a channel sees, as channel events (also for a call made outside
/// a turn, such as a routine's, whose questions a channel shows the same way).
pub fn from_audit(event: &AuditEvent) -> Option<ChannelEvent> {
    match event {
        AuditEvent::ToolCall {
            tool,
            tool_use_id,
            fate,
            result_summary,
            duration_ms,
            provenance,
            ..
        } => Some(ChannelEvent::ToolCallFinished {
            call_id: tool_use_id.clone(),
            tool: tool.clone(),
            fate: fate.clone(),
            duration_ms: *duration_ms,
            result_summary: result_summary.clone(),
            provenance: provenance.clone(),
        }),
        AuditEvent::ApprovalRequested(question) => {
            Some(ChannelEvent::ApprovalRequested(Box::new(question.clone())))
        }
        AuditEvent::Approval {
            approval_id,
            tool,
            tool_use_id,
            ruling,
            grant,
            ..
        } => Some(ChannelEvent::ApprovalDecided {
            approval_id: approval_id.clone(),
            call_id: tool_use_id.clone(),
            tool: tool.clone(),
            ruling: ruling.clone(),
            grant: grant.clone(),
        }),
        // Errors reach a person as notices where they matter; the turn's end is sent by
        // the turn itself with its typed stop reason.
        AuditEvent::Error { .. }
        | AuditEvent::TurnLimit { .. }
        | AuditEvent::TurnEnd { .. }
        | AuditEvent::RoutineRun { .. }
        | AuditEvent::AnswerRefused { .. }
        | AuditEvent::WebhookRefused { .. }
        | AuditEvent::ChannelStopped { .. }
        | AuditEvent::GrantCreated(_)
        | AuditEvent::GrantUsed { .. }
        | AuditEvent::GrantPinned { .. }
        | AuditEvent::GrantRevoked { .. }
        // A turn shows it as a notice in its own language (`TurnForwarder`).
        | AuditEvent::EffectUncertain { .. } => None,
    }
}

/// A loop event as a channel event; `None` for what the channel learns elsewhere (a
/// result's state comes from the gate's record) or from a notice.
pub(crate) fn from_loop(event: TurnEvent, gate: &TierGate) -> Option<ChannelEvent> {
    match event {
        TurnEvent::TextDelta { text } => Some(ChannelEvent::TextDelta { text }),
        TurnEvent::ToolUse { tool_use } => {
            let (tier, effect) = match gate.standing(&tool_use.name) {
                Standing::Known { tier, effect } => (Some(tier), Some(effect)),
                Standing::Unknown | Standing::Invalid { .. } => (None, None),
            };
            Some(ChannelEvent::ToolCallStarted {
                call_id: tool_use.tool_use_id,
                tool: tool_use.name,
                tier,
                effect,
                arguments: tool_use.input,
            })
        }
        TurnEvent::ToolProgress {
            tool_use_id,
            message,
            ..
        } => Some(ChannelEvent::ToolProgress {
            call_id: tool_use_id,
            message,
        }),
        TurnEvent::ToolResult { result } => Some(ChannelEvent::ToolOutput {
            blocks: super::output_blocks(&result),
            call_id: result.tool_use_id,
        }),
        TurnEvent::Throttled { .. } | TurnEvent::ContextReduced { .. } | TurnEvent::Stop { .. } => {
            None
        }
    }
}

pub(crate) fn stop_reason(reason: tau_agent::AgentStop) -> TurnStop {
    use tau_agent::AgentStop as Loop;
    match reason {
        Loop::EndTurn => TurnStop::EndTurn,
        Loop::ToolUse => TurnStop::ToolUse,
        Loop::MaxTokens => TurnStop::MaxTokens,
        Loop::StopSequence => TurnStop::StopSequence,
        Loop::ContentFiltered => TurnStop::ContentFiltered,
        Loop::GuardrailIntervened => TurnStop::GuardrailIntervened,
        Loop::Interrupt => TurnStop::Interrupt,
        Loop::Cancelled => TurnStop::Cancelled,
        Loop::LimitTurns => TurnStop::LimitTurns,
        Loop::LimitOutputTokens => TurnStop::LimitOutputTokens,
        Loop::LimitTotalTokens => TurnStop::LimitTotalTokens,
    }
}

/// The snake_case name of a stop reason, as the audit log writes it.
pub(crate) fn stop_reason_name(reason: TurnStop) -> &'static str {
    match reason {
        TurnStop::EndTurn => "end_turn",
        TurnStop::ToolUse => "tool_use",
        TurnStop::StopSequence => "stop_sequence",
        TurnStop::MaxTokens => "max_tokens",
        TurnStop::ContentFiltered => "content_filtered",
        TurnStop::GuardrailIntervened => "guardrail_intervened",
        TurnStop::Interrupt => "interrupt",
        TurnStop::LimitTurns => "limit_turns",
        TurnStop::LimitOutputTokens => "limit_output_tokens",
        TurnStop::LimitTotalTokens => "limit_total_tokens",
        TurnStop::Cancelled => "cancelled",
        TurnStop::Superseded => "superseded",
        TurnStop::Expired => "expired",
        TurnStop::Failed => "failed",
    }
}

/// A notice as a channel shows it, in `language` (one the hub says outside any turn).
pub fn notice_event(notice: &Notice, language: crate::i18n::Language) -> ChannelEvent {
    ChannelEvent::Notice {
        kind: notice_kind(notice),
        text: notice.text(language),
    }
}

pub(crate) fn notice_kind(notice: &Notice) -> NoticeKind {
    match notice {
        Notice::TurnLimit { .. } => NoticeKind::TurnLimit,
        Notice::TokenLimit => NoticeKind::TokenLimit,
        Notice::ModelError { .. } => NoticeKind::ModelError,
        Notice::MaxTokens => NoticeKind::MaxTokens,
        Notice::Cancelled => NoticeKind::Cancelled,
        Notice::Throttled { .. } => NoticeKind::Throttled,
        Notice::ContextReduced { .. } => NoticeKind::ContextReduced,
        Notice::ContextOverflow => NoticeKind::ContextOverflow,
        Notice::InterruptRefused { .. } => NoticeKind::InterruptRefused,
        Notice::ApprovalTimedOut { .. } => NoticeKind::ApprovalTimedOut,
        Notice::EffectUncertain { .. } => NoticeKind::EffectUncertain,
        Notice::AnswerNotUsed { .. } => NoticeKind::AnswerNotUsed,
    }
}

/// Forwards one conversation's audit events to the sink of the turn that is running, in
/// the task that emits them, so a question never overtakes the call it is about.
#[derive(Default)]
pub(crate) struct TurnForwarder {
    current: Mutex<Option<ChannelSink>>,
    /// The language of the notices it makes from audit events.
    language: crate::i18n::Language,
}

impl TurnForwarder {
    pub(crate) fn new(language: crate::i18n::Language) -> Self {
        Self {
            current: Mutex::new(None),
            language,
        }
    }

    pub(crate) fn attach(self: &Arc<Self>, sink: Option<ChannelSink>) -> Attached {
        *self.current.lock().unwrap_or_else(PoisonError::into_inner) = sink;
        Attached(Arc::clone(self))
    }
}

/// Detaches the turn's sink when the turn ends, however it ends.
pub(crate) struct Attached(Arc<TurnForwarder>);

impl Drop for Attached {
    fn drop(&mut self) {
        *self
            .0
            .current
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = None;
    }
}

impl EventSubscriber for TurnForwarder {
    fn on_event(&self, event: &AuditEvent) {
        let sink = self
            .current
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let Some(sink) = sink else { return };
        if let AuditEvent::EffectUncertain { tool, .. } = event {
            let notice = Notice::EffectUncertain { tool: tool.clone() };
            sink.send(ChannelEvent::Notice {
                kind: notice_kind(&notice),
                text: notice.text(self.language),
            });
        } else if let Some(event) = from_audit(event) {
            sink.send(event);
        }
    }
}
