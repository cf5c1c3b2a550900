//! The ports every channel reaches the hub through, and their adapters over [`Hub`].
//!
//! A channel is handed a [`ChannelPort`] bound to its own name: every conversation it
//! opens, answer it gives and grant it revokes is recorded as that channel's, and none of
//! another channel's can be reached through it (an answer names no channel, so a bug in
//! one channel cannot answer for another). Routines reach the hub through a
//! [`RoutinePort`]; what the host knows of its routines reaches the channels through
//! [`Routines`]. Only the binary wires them.

use std::time::Duration;

use async_trait::async_trait;
use tau_agent::Message;
use tau_core::{AuditEvent, Household};

use tau_protocol::{
    ApprovalId, CallFate, CallStatus, ChannelEvent, DecidedBy, Grant, GrantId, PersonName,
    RoutineAllowance, SessionId, TurnStop,
};
use tau_state::{
    Answered, ApprovalRow, ApprovalState, Approvals, Conversation, Revoked, routine_key,
};
use tokio::sync::broadcast;

use crate::HubError;
use crate::channel::ChannelStatus;
use crate::hub::Hub;
use crate::types::{ChannelEvents, ConversationInfo, Reply, SessionEvent};

/// An answer or press a channel took and did not count, for the audit log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefusedAnswer {
    /// The question it named, when it named one.
    pub approval_id: Option<String>,
    /// Who answered, as the channel names people (a Telegram user id).
    pub user: Option<String>,
    /// The person of `[[people]]` who answered, when the channel knew them.
    pub person: Option<String>,
    /// Where they answered (a Telegram chat id).
    pub place: Option<String>,
    pub reason: String,
    /// How many answers this stands for, when more than one.
    pub count: Option<u64>,
}

/// The hub as one channel sees it: its own conversations, its own questions to answer,
/// its own grants; every question of every channel to list.
#[async_trait]
pub trait ChannelPort: Send + Sync {
    /// The channel this port speaks for.
    fn channel(&self) -> &str;
    /// The hosted channels and whether each runs.
    fn channels(&self) -> Vec<ChannelStatus>;

    /// A new conversation with a session of its own (its key is the session id).
    fn new_conversation(&self) -> Result<SessionId, HubError>;
    /// The session of the conversation `key`, created on first use.
    fn open_conversation(&self, key: &str) -> Result<SessionId, HubError>;
    /// This channel's conversations, oldest first.
    fn conversations(&self) -> Result<Vec<ConversationInfo>, HubError>;
    /// This channel's conversations whose title or message text holds `text`, most
    /// recently updated first.
    fn search_conversations(&self, text: &str) -> Result<Vec<SessionId>, HubError>;
    /// The conversation `session` is, of any channel: a question lists where it waits.
    fn conversation_of(&self, session: &SessionId) -> Result<Option<Conversation>, HubError>;
    /// Every stored message of one of this channel's sessions.
    fn messages(&self, session: &SessionId) -> Result<Vec<Message>, HubError>;
    /// What a conversation is called now: a person's title, else its first prompt's.
    fn title(&self, session: &SessionId) -> Result<Option<String>, HubError>;
    /// What the conversation of a question that waits is called, of any channel: the
    /// lists of what waits name it by it rather than by its id.
    fn waiting_title(&self, session: &SessionId) -> Result<Option<String>, HubError>;
    /// Names a conversation (`None`: back to its first prompt's title).
    fn rename_conversation(&self, session: &SessionId, title: Option<&str>)
    -> Result<(), HubError>;
    /// Deletes a conversation with everything it holds; refused while it is in use.
    async fn delete_conversation(&self, session: &SessionId) -> Result<(), HubError>;

    /// Queues a person's message as a turn of `session`.
    async fn send(&self, session: &SessionId, text: String) -> Result<(), HubError>;
    /// Queues a message the person passed on from someone else (a forward, a quote) as a
    /// turn of `session`: `source` names who wrote it, and the turn reads it as outside
    /// text.
    async fn send_from(
        &self,
        session: &SessionId,
        text: String,
        source: tau_protocol::Source,
    ) -> Result<(), HubError>;
    /// Cancels the running turn of `session`; false when none runs.
    fn cancel(&self, session: &SessionId) -> Result<bool, HubError>;
    /// The events of `session` from now on.
    fn subscribe(&self, session: &SessionId)
    -> Result<broadcast::Receiver<SessionEvent>, HubError>;
    /// The events of every conversation of this channel from now on.
    fn events(&self) -> ChannelEvents;
    /// The events of every conversation of every channel from now on, read only: a
    /// question asked elsewhere is still pushed to the person it waits for.
    fn events_of_every_channel(&self) -> ChannelEvents;

    /// One stored question of any channel, read only: a channel tells another channel's
    /// question apart from one that does not exist. Only its own channel answers it.
    fn question(&self, id: &ApprovalId) -> Result<Option<ApprovalRow>, HubError>;
    /// This channel's stored questions in `state` (all of them for `None`), oldest first.
    fn approvals(&self, state: Option<ApprovalState>) -> Result<Vec<ApprovalRow>, HubError>;
    /// Every channel's stored questions in `state`, oldest first: what waits for the
    /// person wherever it was asked.
    fn approvals_of_every_channel(
        &self,
        state: Option<ApprovalState>,
    ) -> Result<Vec<ApprovalRow>, HubError>;
    /// A person's answer on this channel (`user` names them where the channel knows):
    /// the first answer decides; one of another channel's questions is unknown here.
    async fn answer(
        &self,
        user: Option<String>,
        id: &ApprovalId,
        reply: Reply,
    ) -> Result<Answered, HubError>;
    /// [`ChannelPort::answer`] by `person` of the household: refused, and audited, when
    /// the question is not theirs to answer.
    async fn answer_as(
        &self,
        person: &PersonName,
        user: Option<String>,
        id: &ApprovalId,
        reply: Reply,
    ) -> Result<Answered, HubError>;
    /// Records an answer that did not count.
    fn refused_answer(&self, refused: RefusedAnswer);
    /// Where a yes to question `id` must be given instead, when it takes a passkey this
    /// channel cannot ask for (see `passkey_step.rs`); `None` when a yes here may count.
    fn passkey_elsewhere(&self, id: &ApprovalId) -> Option<crate::PasskeyElsewhere> {
        let _ = id;
        None
    }

    /// The household (one implicit person when `[[people]]` names nobody).
    fn household(&self) -> &Household;
    /// Whose conversation `session` is.
    fn person_of(&self, session: &SessionId) -> Result<PersonName, HubError>;
    /// Records `person` as whose conversation `session` is, when nobody was yet; whose
    /// it is.
    fn claim_conversation(
        &self,
        session: &SessionId,
        person: &PersonName,
    ) -> Result<PersonName, HubError>;
    /// Whether question `row` waits for `person`: theirs to answer.
    fn waits_for(&self, row: &ApprovalRow, person: &PersonName) -> bool;

    /// The live grants made on this channel, oldest first.
    fn grants(&self) -> Result<Vec<Grant>, HubError>;
    /// One grant made on this channel, live or not; another channel's is `None`.
    fn grant(&self, id: &GrantId) -> Result<Option<Grant>, HubError>;
    /// Revokes a grant made on this channel, by `by`.
    fn revoke_grant(&self, id: &GrantId, by: &DecidedBy) -> Result<Revoked, HubError>;
}

/// The [`ChannelPort`] of one channel over the hub.
pub(crate) struct HubPort {
    hub: Hub,
    channel: String,
}

impl HubPort {
    pub(crate) fn new(hub: Hub, channel: &str) -> Self {
        Self {
            hub,
            channel: channel.to_owned(),
        }
    }
}

#[async_trait]
impl ChannelPort for HubPort {
    fn channel(&self) -> &str {
        &self.channel
    }

    fn channels(&self) -> Vec<ChannelStatus> {
        self.hub.channels()
    }

    fn new_conversation(&self) -> Result<SessionId, HubError> {
        self.hub.new_conversation(&self.channel)
    }

    fn open_conversation(&self, key: &str) -> Result<SessionId, HubError> {
        self.hub.open_conversation(&self.channel, key)
    }

    fn conversations(&self) -> Result<Vec<ConversationInfo>, HubError> {
        self.hub.conversations(&self.channel)
    }

    fn search_conversations(&self, text: &str) -> Result<Vec<SessionId>, HubError> {
        self.hub.search_conversations(&self.channel, text)
    }

    fn conversation_of(&self, session: &SessionId) -> Result<Option<Conversation>, HubError> {
        self.hub.conversation_of(session)
    }

    fn messages(&self, session: &SessionId) -> Result<Vec<Message>, HubError> {
        self.hub.messages(&self.channel, session)
    }

    fn title(&self, session: &SessionId) -> Result<Option<String>, HubError> {
        self.hub.owned(&self.channel, session)?;
        Ok(self.hub.state().sessions().session_title(session)?)
    }

    fn waiting_title(&self, session: &SessionId) -> Result<Option<String>, HubError> {
        Ok(self.hub.state().sessions().session_title(session)?)
    }

    fn rename_conversation(
        &self,
        session: &SessionId,
        title: Option<&str>,
    ) -> Result<(), HubError> {
        self.hub.rename_conversation(&self.channel, session, title)
    }

    async fn delete_conversation(&self, session: &SessionId) -> Result<(), HubError> {
        self.hub.delete_conversation(&self.channel, session).await
    }

    async fn send(&self, session: &SessionId, text: String) -> Result<(), HubError> {
        self.hub.send(&self.channel, session, text).await
    }

    async fn send_from(
        &self,
        session: &SessionId,
        text: String,
        source: tau_protocol::Source,
    ) -> Result<(), HubError> {
        self.hub
            .send_from(&self.channel, session, text, Some(source))
            .await
    }

    fn cancel(&self, session: &SessionId) -> Result<bool, HubError> {
        self.hub.cancel(&self.channel, session)
    }

    fn subscribe(
        &self,
        session: &SessionId,
    ) -> Result<broadcast::Receiver<SessionEvent>, HubError> {
        self.hub.subscribe(&self.channel, session)
    }

    fn events(&self) -> ChannelEvents {
        self.hub.channel_events(&self.channel)
    }

    fn events_of_every_channel(&self) -> ChannelEvents {
        self.hub.every_channels_events()
    }

    fn question(&self, id: &ApprovalId) -> Result<Option<ApprovalRow>, HubError> {
        Ok(self.hub.state().approvals().approval(id)?)
    }

    fn approvals(&self, state: Option<ApprovalState>) -> Result<Vec<ApprovalRow>, HubError> {
        self.hub.approvals(&self.channel, state)
    }

    fn approvals_of_every_channel(
        &self,
        state: Option<ApprovalState>,
    ) -> Result<Vec<ApprovalRow>, HubError> {
        self.hub.approvals_of_every_channel(state)
    }

    async fn answer(
        &self,
        user: Option<String>,
        id: &ApprovalId,
        reply: Reply,
    ) -> Result<Answered, HubError> {
        self.hub.answer(&self.channel, user, id, reply).await
    }

    fn passkey_elsewhere(&self, id: &ApprovalId) -> Option<crate::PasskeyElsewhere> {
        self.hub.passkey_elsewhere(id)
    }

    async fn answer_as(
        &self,
        person: &PersonName,
        user: Option<String>,
        id: &ApprovalId,
        reply: Reply,
    ) -> Result<Answered, HubError> {
        self.hub
            .answer_as(&self.channel, Some(person), user, id, reply)
            .await
    }

    fn household(&self) -> &Household {
        self.hub.household()
    }

    fn person_of(&self, session: &SessionId) -> Result<PersonName, HubError> {
        self.hub.person_of(session)
    }

    fn claim_conversation(
        &self,
        session: &SessionId,
        person: &PersonName,
    ) -> Result<PersonName, HubError> {
        self.hub.claim_conversation(session, person)
    }

    fn waits_for(&self, row: &ApprovalRow, person: &PersonName) -> bool {
        self.hub.waits_for(row, person)
    }

    fn refused_answer(&self, refused: RefusedAnswer) {
        self.hub.audit(&AuditEvent::AnswerRefused {
            channel: self.channel.clone(),
            approval_id: refused.approval_id,
            user: refused.user,
            person: refused.person,
            place: refused.place,
            reason: refused.reason,
            count: refused.count,
        });
    }

    fn grants(&self) -> Result<Vec<Grant>, HubError> {
        self.hub.grants(&self.channel)
    }

    fn grant(&self, id: &GrantId) -> Result<Option<Grant>, HubError> {
        Ok(self
            .hub
            .state()
            .grants()
            .grant(id)?
            .filter(|grant| grant.channel == self.channel))
    }

    fn revoke_grant(&self, id: &GrantId, by: &DecidedBy) -> Result<Revoked, HubError> {
        self.hub.revoke_grant(&self.channel, id, by)
    }
}

/// What the host offers about its routines, to every channel.
pub trait Routines: Send + Sync {
    /// Checks a webhook call before its body is read: the routine, and its secret in
    /// `authorization` (the header as sent). `sender` names who called (the peer
    /// address) for the log. `Err` is the HTTP status and a one-line text.
    fn webhook(
        &self,
        name: &str,
        authorization: Option<&str>,
        sender: &str,
    ) -> Result<WebhookDelivery, (u16, String)>;
    /// Every routine as a page lists it (a JSON array).
    fn list(&self) -> serde_json::Value;
    /// The routine whose conversation has `key`, if it is a routine's: its prompts are
    /// the routine's, never a person's.
    fn origin(&self, key: &str) -> Option<RoutineOrigin>;
    /// The routines' exemptions (their own fixed tool calls), as the lists of grants show
    /// them; disabling the routine is their revoke.
    fn allowances(&self) -> Vec<RoutineAllowance>;
}

/// Where a webhook call whose secret was right takes its body: the HTTP status and a
/// one-line text.
pub type WebhookDelivery = Box<dyn FnOnce(&[u8]) -> (u16, String) + Send>;

/// Where a routine's conversation comes from, as a channel says it instead of "you".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoutineOrigin {
    pub routine: String,
    /// What fires it: `webhook doorbell`, `mqtt home/door/+`.
    pub trigger: String,
}

/// How a routine's turn in its conversation ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoutineTurn {
    pub stop_reason: TurnStop,
    /// The tools of calls that did not run (refused, unknown, invalid), in order.
    pub refused: Vec<String>,
}

/// The hub as the routines hosted beside it see it: their questions stored with every
/// other question and shown on the channel they ask on, their prompts run as turns of
/// their own conversation there.
#[async_trait]
pub trait RoutinePort: Send + Sync {
    /// Where the routines' questions are stored: the gate's handle on them, nothing else
    /// of `state.db`.
    fn questions(&self) -> Approvals;
    /// The session of routine `routine`'s conversation on `channel`: its `owner`'s (a
    /// person of `[[people]]`), or, with none, the household's one person's.
    fn open_conversation(
        &self,
        channel: &str,
        routine: &str,
        owner: Option<&PersonName>,
    ) -> Result<SessionId, HubError>;
    /// Runs `prompt` as a turn of that conversation and waits, up to `wait`, until the
    /// turn is over (its questions answered or closed).
    async fn run_turn(
        &self,
        channel: &str,
        session: &SessionId,
        prompt: String,
        wait: Duration,
    ) -> Result<RoutineTurn, HubError>;
    /// Shows a question stored outside a turn, or how it ended, on its channel.
    fn show_question(&self, row: &ApprovalRow);
    /// The routine is done with question `id`: no turn waits on it.
    fn settled(&self, id: &ApprovalId);
    /// Resolves when question `id` may have been answered, or after `within`.
    async fn changed(&self, id: &ApprovalId, within: Duration);
}

#[async_trait]
impl RoutinePort for Hub {
    fn questions(&self) -> Approvals {
        self.state().approvals()
    }

    fn open_conversation(
        &self,
        channel: &str,
        routine: &str,
        owner: Option<&PersonName>,
    ) -> Result<SessionId, HubError> {
        let session = Hub::open_conversation(self, channel, &routine_key(routine, owner))?;
        if let Some(owner) = owner {
            // Its questions are the owner's to answer, its conversation theirs to read.
            self.claim_conversation(&session, owner)?;
        }
        Ok(session)
    }

    async fn run_turn(
        &self,
        channel: &str,
        session: &SessionId,
        prompt: String,
        wait: Duration,
    ) -> Result<RoutineTurn, HubError> {
        let mut events = self.subscribe(channel, session)?;
        self.send(channel, session, prompt).await?;
        let mut refused = Vec::new();
        let ended =
            tokio::time::timeout(wait, async {
                loop {
                    match events.recv().await {
                        Ok(SessionEvent::Turn(ChannelEvent::ToolCallFinished {
                            tool,
                            fate:
                                CallFate {
                                    status:
                                        CallStatus::Refused
                                        | CallStatus::UnknownTool
                                        | CallStatus::Invalid,
                                    ..
                                },
                            ..
                        })) => refused.push(tool),
                        // An interrupted turn waits for its question; the turn that
                        // resumes it ends for good.
                        Ok(SessionEvent::Turn(ChannelEvent::TurnEnded { stop_reason, .. }))
                            if stop_reason != TurnStop::Interrupt =>
                        {
                            return Ok(stop_reason);
                        }
                        Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                        Err(broadcast::error::RecvError::Closed) => {
                            return Err(HubError::ShuttingDown);
                        }
                    }
                }
            })
            .await
            .map_err(|_| HubError::TimedOut { waited: wait })??;
        Ok(RoutineTurn {
            stop_reason: ended,
            refused,
        })
    }

    fn show_question(&self, row: &ApprovalRow) {
        Hub::show_question(self, row);
    }

    fn settled(&self, id: &ApprovalId) {
        self.inner.routine_waits.done(id);
        if let Err(error) = self.state().approvals().mark_approval_settled(id) {
            tracing::warn!(approval_id = %id, %error, "cannot settle a routine's question");
        }
    }

    async fn changed(&self, id: &ApprovalId, within: Duration) {
        let mut changes = self.approval_changes();
        let _ = tokio::time::timeout(within, async {
            while let Ok(row) = changes.recv().await {
                if row.id == *id {
                    return;
                }
            }
        })
        .await;
    }
}
