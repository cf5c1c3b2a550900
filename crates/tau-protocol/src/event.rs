//! [`ChannelEvent`]: one turn as a channel sees it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::decision::{CallFate, Ruling};
use crate::grant::GrantMade;
use crate::ids::ApprovalId;
use crate::output::OutputBlock;
use crate::question::ApprovalQuestion;
use crate::tier::Tier;

/// One thing that happened during a turn, in the order it happened. Every channel renders
/// from these alone: the state is in the fields, texts are only shown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ChannelEvent {
    /// A piece of the model's answer. Untrusted: show it through the display function.
    TextDelta { text: String },
    /// The model asked for a tool; its input is complete.
    ToolCallStarted {
        call_id: String,
        tool: String,
        /// `None` when no tool of that name is registered.
        tier: Option<Tier>,
        /// tau's own one-line text of what the tool does; `None` for an unknown tool.
        effect: Option<String>,
        /// The arguments as the model sent them.
        arguments: Value,
    },
    /// A running tool's own progress line. Untrusted.
    ToolProgress { call_id: String, message: String },
    /// A tier-2 call waits for a person's answer on the question's channel.
    ApprovalRequested(Box<ApprovalQuestion>),
    /// The question was answered, timed out, withdrawn or superseded.
    ApprovalDecided {
        approval_id: ApprovalId,
        call_id: String,
        tool: String,
        /// Who decided, and what (`decision`, `decided_by`).
        #[serde(flatten)]
        ruling: Ruling,
        /// The grant this answer made ("yes, and allow this again"), if it made one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        grant: Option<GrantMade>,
    },
    /// A call's fate, whatever its tier.
    ToolCallFinished {
        call_id: String,
        tool: String,
        /// How it ended and got past the gate (`status`, `approval`, `decided_by`).
        #[serde(flatten)]
        fate: CallFate,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        duration_ms: Option<u64>,
        /// The start of what the model reads (at most 200 characters). Untrusted.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        result_summary: Option<String>,
        /// Where the call's argument values came from, and whether it was asked because
        /// the conversation had read text from outside.
        #[serde(default, skip_serializing_if = "crate::CallProvenance::is_empty")]
        provenance: crate::CallProvenance,
    },
    /// What a call gave back (the model reads the same), as text blocks; it follows the
    /// call's `tool_call_finished`. Untrusted.
    ToolOutput {
        call_id: String,
        blocks: Vec<OutputBlock>,
    },
    /// Something the person should know, already in the UI language.
    Notice { kind: NoticeKind, text: String },
    /// The turn is over.
    TurnEnded {
        stop_reason: TurnStop,
        usage: TurnUsage,
    },
}

/// Which notice a [`ChannelEvent::Notice`] carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoticeKind {
    TurnLimit,
    TokenLimit,
    ModelError,
    MaxTokens,
    Cancelled,
    Throttled,
    ContextReduced,
    ContextOverflow,
    InterruptRefused,
    ApprovalTimedOut,
    /// An approved call was let through and tau stopped before its result was stored: it
    /// may or may not have run.
    EffectUncertain,
    /// A person answered a question nothing waited for any more: the answer was not used,
    /// nothing ran, and the question was closed.
    AnswerNotUsed,
}

/// Why a conversation's turn ended, as every channel shows it: the agent loop's own
/// reason (`tau-agent`'s `AgentStop`, carried over variant for variant), or what only the
/// conversation around the loop knows (superseded, expired, failed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnStop {
    EndTurn,
    ToolUse,
    StopSequence,
    MaxTokens,
    ContentFiltered,
    GuardrailIntervened,
    /// The turn waits for answers (a question that outlives the process).
    Interrupt,
    LimitTurns,
    LimitOutputTokens,
    LimitTotalTokens,
    Cancelled,
    /// The turn's stored question was replaced by a newer message; the turn ended
    /// without asking the model again.
    Superseded,
    /// The turn's stored question expired and the conversation moved on without it.
    Expired,
    /// The turn could not finish: the model or the store failed (a notice says why).
    Failed,
}

/// What a turn cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnUsage {
    pub model_calls: u32,
    pub input_tokens: u64,
    pub output_tokens: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocabulary::{Approval, CallStatus, DecidedBy, Decision};
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn events_are_tagged_by_type() {
        let event = ChannelEvent::ToolCallFinished {
            call_id: "t1".into(),
            tool: "mqtt_publish".into(),
            fate: CallFate {
                status: CallStatus::Refused,
                approval: Approval::Rejected,
                decided_by: DecidedBy::EndOfInput,
            },
            duration_ms: Some(2),
            result_summary: None,
            provenance: Default::default(),
        };
        let value = serde_json::to_value(&event).unwrap();
        assert_eq!(
            value,
            json!({
                "type": "tool_call_finished", "call_id": "t1", "tool": "mqtt_publish",
                "status": "refused", "approval": "rejected",
                "decided_by": {"kind": "end_of_input"}, "duration_ms": 2
            })
        );
        assert_eq!(
            serde_json::from_value::<ChannelEvent>(value).unwrap(),
            event
        );
    }

    #[test]
    fn a_carried_record_keeps_the_lines_fields_in_their_order() {
        let finished = ChannelEvent::ToolCallFinished {
            call_id: "t1".into(),
            tool: "lights".into(),
            fate: CallFate {
                status: CallStatus::Success,
                approval: Approval::Approved,
                decided_by: DecidedBy::person("web"),
            },
            duration_ms: Some(2),
            result_summary: Some("on".into()),
            provenance: Default::default(),
        };
        let decided = ChannelEvent::ApprovalDecided {
            approval_id: ApprovalId::parse("ap_1").unwrap(),
            call_id: "t1".into(),
            tool: "lights".into(),
            ruling: Ruling::new(Decision::Approved, DecidedBy::person("web")),
            grant: None,
        };
        assert_eq!(
            [&finished, &decided].map(|e| serde_json::to_string(e).unwrap()),
            [
                r#"{"type":"tool_call_finished","call_id":"t1","tool":"lights","status":"success","approval":"approved","decided_by":{"kind":"person","channel":"web"},"duration_ms":2,"result_summary":"on"}"#,
                r#"{"type":"approval_decided","approval_id":"ap_1","call_id":"t1","tool":"lights","decision":"approved","decided_by":{"kind":"person","channel":"web"}}"#,
            ]
        );
        for event in [finished, decided] {
            let text = serde_json::to_string(&event).unwrap();
            assert_eq!(serde_json::from_str::<ChannelEvent>(&text).unwrap(), event);
        }
    }

    #[test]
    fn an_unknown_type_or_a_state_outside_the_vocabulary_is_refused() {
        for bad in [
            json!({"type": "tool_call_approved_by_model", "call_id": "t1"}),
            json!({"type": "approval_decided", "approval_id": "a", "call_id": "t1",
                   "tool": "x", "decision": "approved_by_default",
                   "decided_by": {"kind": "policy"}}),
            json!({"type": "approval_decided", "approval_id": "a", "call_id": "t1",
                   "tool": "x", "decision": "approved", "decided_by": {"kind": "model"}}),
            json!({"type": "tool_call_started", "call_id": "t1", "tool": "x",
                   "tier": true, "effect": null, "arguments": {}}),
        ] {
            assert!(
                serde_json::from_value::<ChannelEvent>(bad.clone()).is_err(),
                "{bad}"
            );
        }
    }
}
