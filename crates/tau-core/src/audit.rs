//! Audit events: one serde enum for what the hub did (each a line of `audit.jsonl`), and
//! the bus that fans them out. Imports nothing from the agent loop, so the gate can emit
//! them anywhere. Channels do not read these: they read the `ChannelEvent`s a turn
//! projects from them (`turn/`).

use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use tau_protocol::{
    ApprovalId, ApprovalQuestion, CallFate, CallProvenance, DecidedBy, Grant, GrantId, GrantMade,
    Ruling, Tier,
};

/// Where an error event comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorSite {
    TierGate,
    Approver,
    Exemption,
    Interrupt,
    Model,
    Session,
    Agent,
    /// An MCP server tau uses: it did not start, died or did not answer in time.
    McpServer,
    /// The sandbox could not be set up for an approved command; it did not run.
    Sandbox,
}

/// One thing the hub did that a person may want to audit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AuditEvent {
    /// A tool call, whatever its tier and fate.
    ToolCall {
        tool: String,
        /// `None` when the tool is unknown or its tier is invalid.
        tier: Option<Tier>,
        tool_use_id: String,
        arguments: Value,
        /// How it ended and got past the gate (`status`, `approval`, `decided_by`).
        #[serde(flatten)]
        fate: CallFate,
        /// The question that was asked about it, if one was.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        approval_id: Option<ApprovalId>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        result_summary: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        duration_ms: Option<u64>,
        /// Which argument values came from outside text, and whether the call was asked
        /// because the conversation had read such text.
        #[serde(default, skip_serializing_if = "CallProvenance::is_empty")]
        provenance: CallProvenance,
    },
    /// A tier-2 question was put to a channel.
    ApprovalRequested(ApprovalQuestion),
    /// The question's answer, or the end of its wait.
    Approval {
        approval_id: ApprovalId,
        tool: String,
        tier: Tier,
        tool_use_id: String,
        arguments: Value,
        /// Who decided, and what (`decision`, `decided_by`).
        #[serde(flatten)]
        ruling: Ruling,
        approver: String,
        channel: String,
        /// The grant this answer made ("yes, and allow this again"); its own
        /// `grant_created` line comes just before.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        grant: Option<GrantMade>,
        /// What the question's card said of where the call's values came from (its
        /// `approval_requested` line has the whole card).
        #[serde(default, skip_serializing_if = "CallProvenance::is_empty")]
        provenance: CallProvenance,
    },
    /// A person's answer made a grant: exactly what it covers, where, for how long.
    GrantCreated(Grant),
    /// A live grant covered a call, which runs without a question (its `tool_call` line
    /// says `decided_by: grant`). `use_number` counts the grant's uses: a revoke after it
    /// says how many there were, so the order of the two is in the log whatever order
    /// their lines were written in.
    GrantUsed {
        grant_id: GrantId,
        tool: String,
        tool_use_id: String,
        session: String,
        channel: String,
        use_number: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_uses: Option<u32>,
    },
    /// A call a grant covered (or whose yes made it) ran, and the grant now pins the
    /// workspace as that call left it: what the call itself changed was allowed, anything
    /// else that changes the tree from here on asks again.
    GrantPinned {
        grant_id: GrantId,
        tool: String,
        tool_use_id: String,
        /// The SHA-256 of the workspace's tree the grant covers calls on from now.
        workspace_sha256: String,
    },
    /// A grant was revoked (by a person, or voided by tau when its tool changed); it
    /// covers nothing from now on. `uses` is how many calls it let through before.
    GrantRevoked {
        grant_id: GrantId,
        tool: String,
        revoked_by: DecidedBy,
        uses: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// Something failed; whatever it touched was refused.
    Error {
        #[serde(rename = "where")]
        site: ErrorSite,
        message: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tool: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tool_use_id: Option<String>,
    },
    /// A turn used all its model calls.
    TurnLimit { max_turns: u32 },
    /// A turn ended.
    TurnEnd {
        stop_reason: String,
        model_calls: u32,
        input_tokens: u64,
        output_tokens: u64,
    },
    /// A routine's trigger fired (or its runs were missed): what ran and how it ended.
    RoutineRun {
        routine: String,
        /// What fired it, in words: `cron 0 7 * * *`, `mqtt home/door/front`, `manual`.
        trigger: String,
        outcome: RoutineOutcome,
        /// Why it was refused, failed or skipped, or how many runs were missed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
        /// The `tool_call` of a fixed-argument action, for finding it in the log.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tool_use_id: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        duration_ms: Option<u64>,
        /// How many triggers this line stands for, when more than one: those skipped
        /// while the routine ran or backed off are recorded once per window, counted.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        count: Option<u64>,
    },
    /// An answer on a remote channel that did not count (a stranger's press, a button of
    /// another chat's question, data tau did not write). Nothing was decided.
    AnswerRefused {
        channel: String,
        /// The question the answer named, as it came (untrusted: maybe no id at all).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        approval_id: Option<String>,
        /// Who answered, as the channel names people (a Telegram user id).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        user: Option<String>,
        /// The person of `[[people]]` who answered, when tau knew them: one whose answer
        /// was not theirs to give.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        person: Option<String>,
        /// Where they answered (a Telegram chat id).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        place: Option<String>,
        reason: String,
        /// How many such answers this line stands for, when more than one: the first of
        /// a sender's in a window is recorded alone, the rest of the window in one line.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        count: Option<u64>,
    },
    /// A webhook call that was refused before its body was read (a wrong or missing
    /// secret). Nothing ran.
    WebhookRefused {
        routine: String,
        /// Who called (the peer address).
        sender: String,
        reason: String,
        /// How many such calls this line stands for, when more than one (see
        /// `answer_refused`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        count: Option<u64>,
    },
    /// An approved call was let through and tau stopped before its result was stored: it
    /// may or may not have run. It is not run again.
    EffectUncertain {
        approval_id: ApprovalId,
        tool: String,
        tool_use_id: String,
        /// The channel that asked the question.
        channel: String,
        /// When it was let through.
        dispatched_at: String,
    },
    /// A channel of the hub stopped with an error; the hub and its other channels go on.
    ChannelStopped { channel: String, error: String },
}

/// How a routine's run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RoutineOutcome {
    /// Its action ran and succeeded.
    Success,
    /// Its action ran and failed, or could not be started.
    Error,
    /// The gate refused its call: nobody said yes, or nobody could be asked.
    Refused,
    /// Nothing ran: the routine was still running, or backing off after failures.
    Skipped,
    /// Runs that fell while tau was not running; they are not replayed.
    Missed,
}

impl RoutineOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Success => "success",
            Self::Error => "error",
            Self::Refused => "refused",
            Self::Skipped => "skipped",
            Self::Missed => "missed",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        [
            Self::Success,
            Self::Error,
            Self::Refused,
            Self::Skipped,
            Self::Missed,
        ]
        .into_iter()
        .find(|o| o.as_str() == text)
    }
}

impl AuditEvent {
    pub fn error(
        site: ErrorSite,
        message: impl Into<String>,
        tool: Option<&str>,
        tool_use_id: Option<&str>,
    ) -> Self {
        Self::Error {
            site,
            message: message.into(),
            tool: tool.map(str::to_owned),
            tool_use_id: tool_use_id.map(str::to_owned),
        }
    }

    /// An `approval` line as the answer it records (what start-up confirms a stored
    /// approval against); `None` for any other event.
    pub fn into_recorded_answer(self) -> Option<tau_state::RecordedAnswer> {
        match self {
            Self::Approval {
                approval_id,
                tool,
                tool_use_id,
                arguments,
                ruling:
                    Ruling {
                        decision,
                        decided_by,
                    },
                ..
            } => Some(tau_state::RecordedAnswer {
                approval_id,
                tool,
                tool_use_id,
                arguments,
                decision,
                decided_by,
            }),
            _ => None,
        }
    }
}

/// Receives every event; must be quick (the audit log appends and flushes a line).
pub trait EventSubscriber: Send + Sync {
    fn on_event(&self, event: &AuditEvent);
}

impl<F: Fn(&AuditEvent) + Send + Sync> EventSubscriber for F {
    fn on_event(&self, event: &AuditEvent) {
        self(event);
    }
}

/// Fans events out to its subscribers, in subscription order.
#[derive(Clone, Default)]
pub struct EventBus {
    subscribers: Arc<RwLock<Vec<Arc<dyn EventSubscriber>>>>,
}

impl EventBus {
    pub fn new() -> Self {
        Self::default()
    }

    /// A bus of its own whose events also reach every subscriber of `parent`: one
    /// conversation's listeners stay its own, the audit log still hears everything.
    pub fn child_of(parent: &EventBus) -> Self {
        let child = Self::new();
        child.subscribe(Arc::new(parent.clone()));
        child
    }

    pub fn subscribe(&self, subscriber: Arc<dyn EventSubscriber>) {
        self.subscribers
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .push(subscriber);
    }

    /// Delivers `event` to every subscriber. A subscriber that panics is skipped, so it
    /// cannot take the gate down with it.
    pub fn emit(&self, event: &AuditEvent) {
        let subscribers = self
            .subscribers
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        for subscriber in subscribers {
            if std::panic::catch_unwind(AssertUnwindSafe(|| subscriber.on_event(event))).is_err() {
                tracing::error!("an event subscriber panicked");
            }
        }
    }
}

impl EventSubscriber for EventBus {
    fn on_event(&self, event: &AuditEvent) {
        self.emit(event);
    }
}

/// Keeps every event it receives, for tests and for showing a turn's events afterwards.
#[derive(Clone, Default)]
pub struct RecordedEvents {
    events: Arc<Mutex<Vec<AuditEvent>>>,
}

impl RecordedEvents {
    /// A recorder already subscribed to `bus`.
    pub fn subscribed_to(bus: &EventBus) -> Self {
        let recorder = Self::default();
        bus.subscribe(Arc::new(recorder.clone()));
        recorder
    }

    pub fn events(&self) -> Vec<AuditEvent> {
        self.events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub fn take(&self) -> Vec<AuditEvent> {
        std::mem::take(&mut *self.events.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

impl EventSubscriber for RecordedEvents {
    fn on_event(&self, event: &AuditEvent) {
        self.events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(event.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tau_protocol::{Approval, CallStatus};

    #[test]
    fn events_serialize_as_tagged_lines() {
        let event = AuditEvent::ToolCall {
            tool: "mqtt_publish".into(),
            tier: Some(Tier::Physical),
            tool_use_id: "t1".into(),
            arguments: json!({"payload": "on", "topic": "home/light"}),
            fate: CallFate {
                status: CallStatus::Refused,
                approval: Approval::Rejected,
                decided_by: DecidedBy::person("terminal"),
            },
            approval_id: Some(ApprovalId::parse("ap_1").unwrap()),
            result_summary: None,
            duration_ms: Some(3),
            provenance: CallProvenance::default(),
        };
        assert_eq!(
            serde_json::to_string(&event).unwrap(),
            r#"{"type":"tool_call","tool":"mqtt_publish","tier":2,"tool_use_id":"t1","arguments":{"payload":"on","topic":"home/light"},"status":"refused","approval":"rejected","decided_by":{"kind":"person","channel":"terminal"},"approval_id":"ap_1","duration_ms":3}"#
        );
        let error = AuditEvent::error(ErrorSite::TierGate, "boom", Some("x"), None);
        assert_eq!(
            serde_json::to_string(&error).unwrap(),
            r#"{"type":"error","where":"tier_gate","message":"boom","tool":"x"}"#
        );
        let back: AuditEvent =
            serde_json::from_str(&serde_json::to_string(&event).unwrap()).unwrap();
        assert_eq!(back, event);
    }

    #[test]
    fn an_approval_line_carries_its_ruling_in_the_fields_it_always_had() {
        let event = AuditEvent::Approval {
            approval_id: ApprovalId::parse("ap_1").unwrap(),
            tool: "lights".into(),
            tier: Tier::Physical,
            tool_use_id: "t1".into(),
            arguments: json!({"room": "porch"}),
            ruling: Ruling::new(tau_protocol::Decision::Approved, DecidedBy::person("web")),
            approver: "durable".into(),
            channel: "web".into(),
            grant: None,
            provenance: CallProvenance::default(),
        };
        let line = serde_json::to_string(&event).unwrap();
        assert_eq!(
            line,
            r#"{"type":"approval","approval_id":"ap_1","tool":"lights","tier":2,"tool_use_id":"t1","arguments":{"room":"porch"},"decision":"approved","decided_by":{"kind":"person","channel":"web"},"approver":"durable","channel":"web"}"#
        );
        assert_eq!(serde_json::from_str::<AuditEvent>(&line).unwrap(), event);
    }

    #[test]
    fn a_refused_answer_names_who_where_and_why() {
        let event = AuditEvent::AnswerRefused {
            channel: "telegram".into(),
            approval_id: Some("ap_1".into()),
            user: Some("666".into()),
            person: None,
            place: Some("4242".into()),
            reason: "not an owner".into(),
            count: None,
        };
        assert_eq!(
            serde_json::to_string(&event).unwrap(),
            r#"{"type":"answer_refused","channel":"telegram","approval_id":"ap_1","user":"666","place":"4242","reason":"not an owner"}"#
        );
        let counted = AuditEvent::AnswerRefused {
            channel: "telegram".into(),
            approval_id: None,
            user: Some("666".into()),
            person: None,
            place: Some("4242".into()),
            reason: "not an owner".into(),
            count: Some(299),
        };
        assert_eq!(
            serde_json::to_string(&counted).unwrap(),
            r#"{"type":"answer_refused","channel":"telegram","user":"666","place":"4242","reason":"not an owner","count":299}"#
        );
    }

    #[test]
    fn refused_webhooks_and_stopped_channels_are_tagged_lines() {
        let refused = AuditEvent::WebhookRefused {
            routine: "doorbell".into(),
            sender: "127.0.0.1".into(),
            reason: "wrong or missing secret".into(),
            count: Some(2999),
        };
        assert_eq!(
            serde_json::to_string(&refused).unwrap(),
            r#"{"type":"webhook_refused","routine":"doorbell","sender":"127.0.0.1","reason":"wrong or missing secret","count":2999}"#
        );
        let stopped = AuditEvent::ChannelStopped {
            channel: "telegram".into(),
            error: "Telegram does not accept the bot token (401: Unauthorized)".into(),
        };
        let line = serde_json::to_string(&stopped).unwrap();
        assert_eq!(
            line,
            r#"{"type":"channel_stopped","channel":"telegram","error":"Telegram does not accept the bot token (401: Unauthorized)"}"#
        );
        assert_eq!(serde_json::from_str::<AuditEvent>(&line).unwrap(), stopped);
    }

    #[test]
    fn a_routine_run_is_a_tagged_line() {
        let event = AuditEvent::RoutineRun {
            routine: "porch-light".into(),
            trigger: "cron 0 19 * * *".into(),
            outcome: RoutineOutcome::Refused,
            detail: Some("nobody could be asked".into()),
            tool_use_id: Some("run_1".into()),
            duration_ms: None,
            count: None,
        };
        let line = serde_json::to_string(&event).unwrap();
        assert_eq!(
            line,
            r#"{"type":"routine_run","routine":"porch-light","trigger":"cron 0 19 * * *","outcome":"refused","detail":"nobody could be asked","tool_use_id":"run_1"}"#
        );
        assert_eq!(serde_json::from_str::<AuditEvent>(&line).unwrap(), event);
        for outcome in [
            RoutineOutcome::Success,
            RoutineOutcome::Error,
            RoutineOutcome::Refused,
            RoutineOutcome::Skipped,
            RoutineOutcome::Missed,
        ] {
            assert_eq!(RoutineOutcome::parse(outcome.as_str()), Some(outcome));
            assert_eq!(
                serde_json::to_value(outcome).unwrap(),
                serde_json::Value::String(outcome.as_str().into())
            );
        }
        assert_eq!(RoutineOutcome::parse("ran_anyway"), None);
    }

    #[test]
    fn a_panicking_subscriber_does_not_stop_the_others() {
        let bus = EventBus::new();
        bus.subscribe(Arc::new(|_: &AuditEvent| panic!("subscriber bug")));
        let recorded = RecordedEvents::subscribed_to(&bus);
        bus.emit(&AuditEvent::TurnLimit { max_turns: 3 });
        assert_eq!(
            recorded.events(),
            vec![AuditEvent::TurnLimit { max_turns: 3 }]
        );
    }
}
