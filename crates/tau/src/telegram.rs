//! Telegram under `tau serve`: the hub as `tau-telegram` sees it, and the channel as the
//! hub hosts it. A chat's conversations are the hub's `(telegram, key)`; a routine that asks
//! on Telegram has a conversation of its own (`routine:NAME`), whose questions are shown in
//! the first owner's private chat and answered there.

use std::sync::Arc;

use async_trait::async_trait;
use tau_agent::SessionId;
use tau_core::approval::{Answered, ApprovalRow, ApprovalState};
use tau_core::{ApprovalId, DecidedBy, GrantId, GrantRequest};
use tau_core::{AuditEvent, EventBus};
use tau_hub::{Channel, ChannelError, Conversation, Hub, HubError, SessionEvent};
use tau_protocol::Allowance;
use tau_state::Revoked;
use tau_telegram::{
    CHANNEL, ChatConversation, Happened, HubEvent, Question, RefusedPress, Reply, TelegramChannel,
    TelegramConfig, chat_of,
};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Events waiting for the channel; past this the pump waits (the chats' tasks pace it).
const EVENT_QUEUE: usize = 1024;

/// The hub, as the Telegram channel uses it.
pub(crate) struct TelegramHub {
    hub: Hub,
    /// The chat where questions of conversations that are no chat's (routines) are shown.
    home_chat: Option<i64>,
    /// The hub's own audit lines (presses that did not count).
    events: EventBus,
    /// Which conversations are routines' (and what fires each).
    routines: Arc<dyn tau_web::Routines>,
}

impl TelegramHub {
    pub(crate) fn new(
        hub: Hub,
        config: &TelegramConfig,
        events: EventBus,
        routines: Arc<dyn tau_web::Routines>,
    ) -> Self {
        Self {
            hub,
            home_chat: config.owners.first().copied(),
            events,
            routines,
        }
    }

    /// The channel's key for a conversation: its own for a chat's, the home chat's for a
    /// routine's; `None` for another channel's.
    fn key_of(&self, conversation: &Conversation) -> Option<String> {
        if conversation.channel != CHANNEL {
            return None;
        }
        if chat_of(&conversation.key).is_some() {
            return Some(conversation.key.clone());
        }
        self.home_chat.map(|chat| chat.to_string())
    }

    fn question_of(&self, row: ApprovalRow) -> Result<Question, tau_telegram::HubError> {
        let conversation = self
            .hub
            .conversation_of(&row.session)
            .map_err(hub_error)?
            .and_then(|c| self.key_of(&c));
        Ok(Question { row, conversation })
    }

    fn session(&self, key: &str) -> Result<SessionId, tau_telegram::HubError> {
        self.hub.open_conversation(CHANNEL, key).map_err(hub_error)
    }
}

#[allow(clippy::needless_pass_by_value)] // the shape `map_err` wants
fn hub_error(error: HubError) -> tau_telegram::HubError {
    tau_telegram::HubError(error.to_string())
}

#[async_trait]
impl tau_telegram::Hub for TelegramHub {
    async fn send(&self, key: &str, text: &str) -> Result<(), tau_telegram::HubError> {
        let session = self.session(key)?;
        self.hub
            .send(CHANNEL, &session, text.to_owned())
            .await
            .map_err(hub_error)
    }

    async fn cancel(&self, key: &str) -> Result<bool, tau_telegram::HubError> {
        let session = self.session(key)?;
        self.hub.cancel(CHANNEL, &session).map_err(hub_error)
    }

    async fn question(
        &self,
        approval_id: &str,
    ) -> Result<Option<Question>, tau_telegram::HubError> {
        // Read from the store itself, not through the channel's view: a question of another
        // channel must be told apart from one that does not exist (the audit says which).
        let Ok(id) = ApprovalId::parse(approval_id) else {
            return Ok(None);
        };
        let row = self
            .hub
            .state()
            .approval(&id)
            .map_err(|e| tau_telegram::HubError(e.to_string()))?;
        row.map(|row| self.question_of(row)).transpose()
    }

    async fn answer(
        &self,
        approval_id: &str,
        reply: Reply,
        user: &str,
    ) -> Result<Answered, tau_telegram::HubError> {
        let reply = match reply {
            Reply::Approve => tau_hub::Reply::Approve,
            Reply::Confirm(number) => tau_hub::Reply::Confirm(number),
            // For the hours the question offers.
            Reply::ApproveAlways(scope) => tau_hub::Reply::ApproveWithGrant(GrantRequest {
                scope,
                ..GrantRequest::default()
            }),
            Reply::Reject => tau_hub::Reply::Reject,
        };
        let Ok(id) = ApprovalId::parse(approval_id) else {
            return Ok(Answered::NotFound);
        };
        match self
            .hub
            .answer(CHANNEL, Some(user.to_owned()), &id, reply)
            .await
        {
            Ok(answered) => Ok(answered),
            Err(HubError::UnknownApproval(_)) => Ok(Answered::NotFound),
            Err(error) => Err(hub_error(error)),
        }
    }

    async fn pending(&self) -> Result<Vec<Question>, tau_telegram::HubError> {
        self.hub
            .approvals(CHANNEL, Some(ApprovalState::Pending))
            .map_err(hub_error)?
            .into_iter()
            .map(|row| self.question_of(row))
            .collect()
    }

    async fn waiting(&self) -> Result<Vec<Question>, tau_telegram::HubError> {
        self.hub
            .approvals_of_every_channel(Some(ApprovalState::Pending))
            .map_err(hub_error)?
            .into_iter()
            .map(|row| self.question_of(row))
            .collect()
    }

    async fn allowances(&self, user: &str) -> Result<Vec<Allowance>, tau_telegram::HubError> {
        let grants = self.hub.grants(CHANNEL).map_err(hub_error)?;
        let mut allowances: Vec<Allowance> = grants
            .into_iter()
            .filter(|grant| grant.person.as_deref() == Some(user))
            .map(|grant| Allowance::Grant(Box::new(grant)))
            .collect();
        allowances.extend(
            self.routines
                .allowances()
                .into_iter()
                .map(Allowance::Routine),
        );
        Ok(allowances)
    }

    async fn revoke(&self, grant: &GrantId, user: &str) -> Result<Revoked, tau_telegram::HubError> {
        // Only the person who made a grant revokes it here: another owner's is unknown.
        let theirs = self
            .hub
            .state()
            .grant(grant)
            .map_err(|e| tau_telegram::HubError(e.to_string()))?
            .is_some_and(|g| g.channel == CHANNEL && g.person.as_deref() == Some(user));
        if !theirs {
            return Ok(Revoked::NotFound);
        }
        let by = DecidedBy::Person {
            channel: CHANNEL.to_owned(),
            user: Some(user.to_owned()),
        };
        self.hub
            .revoke_grant(CHANNEL, grant, &by)
            .map_err(hub_error)
    }

    async fn conversations(
        &self,
        chat: i64,
        search: Option<&str>,
    ) -> Result<Vec<ChatConversation>, tau_telegram::HubError> {
        let found = match search {
            Some(text) => Some(
                self.hub
                    .search_conversations(CHANNEL, text)
                    .map_err(hub_error)?,
            ),
            None => None,
        };
        let mut listed: Vec<ChatConversation> = self
            .hub
            .conversations(CHANNEL)
            .map_err(hub_error)?
            .into_iter()
            .filter(|info| chat_of(&info.conversation.key) == Some(chat))
            .filter(|info| {
                found
                    .as_ref()
                    .is_none_or(|f| f.contains(&info.conversation.session))
            })
            .map(|info| ChatConversation {
                key: info.conversation.key,
                title: info.title,
                message_count: info.message_count,
                updated_at: info.updated_at,
            })
            .collect();
        listed.sort_by(|a, b| b.updated_at.cmp(&a.updated_at).then(b.key.cmp(&a.key)));
        Ok(listed)
    }

    async fn rename(&self, key: &str, title: Option<&str>) -> Result<(), tau_telegram::HubError> {
        let session = self.session(key)?;
        match self.hub.rename_conversation(CHANNEL, &session, title) {
            Ok(()) => Ok(()),
            Err(HubError::UnknownSession(_)) => Err(tau_telegram::HubError(
                "nothing is written in this conversation yet".into(),
            )),
            Err(error) => Err(hub_error(error)),
        }
    }

    fn refused_press(&self, press: &RefusedPress) {
        self.events.emit(&AuditEvent::AnswerRefused {
            channel: CHANNEL.to_owned(),
            approval_id: press.approval_id.clone(),
            user: press.user.map(|u| u.to_string()),
            place: press.chat.map(|c| c.to_string()),
            reason: press.reason.as_str().to_owned(),
            count: press.count,
        });
    }
}

/// The Telegram channel as the hub hosts it.
pub(crate) struct HostedTelegram {
    pub channel: Arc<TelegramChannel>,
    pub hub: Arc<TelegramHub>,
}

#[async_trait]
impl Channel for HostedTelegram {
    fn name(&self) -> &str {
        CHANNEL
    }

    async fn run(self: Arc<Self>, hub: Hub, stop: CancellationToken) -> Result<(), ChannelError> {
        let (sender, receiver) = mpsc::channel(EVENT_QUEUE);
        let mut events = hub.channel_events(CHANNEL);
        let adapter = Arc::clone(&self.hub);
        let pump = tokio::spawn(async move {
            loop {
                match events.recv().await {
                    Ok(event) => {
                        let Some(conversation) = adapter.key_of(&event.conversation) else {
                            continue;
                        };
                        let happened = match event.event {
                            SessionEvent::Turn(turn) => Happened::Turn(turn),
                            // A person's prompt is their own message in the chat; a
                            // routine's is shown as the routine's.
                            SessionEvent::Prompt { text } => {
                                let Some(origin) = adapter.routines.origin(&event.conversation.key)
                                else {
                                    continue;
                                };
                                Happened::RoutinePrompt {
                                    routine: origin.routine,
                                    trigger: origin.trigger,
                                    text,
                                }
                            }
                        };
                        let event = HubEvent {
                            conversation,
                            event: happened,
                        };
                        if sender.send(event).await.is_err() {
                            return;
                        }
                    }
                    // What was missed is in the store; the turn's message ends incomplete.
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(missed)) => {
                        tracing::warn!(missed, "telegram: fell behind the hub's events");
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                }
            }
        });
        let result = tokio::select! {
            error = Arc::clone(&self.channel).run(receiver) => Err(ChannelError {
                channel: CHANNEL.to_owned(),
                message: error.to_string(),
            }),
            () = stop.cancelled() => Ok(()),
        };
        pump.abort();
        result
    }
}

/// The channel for `[telegram]`, its memory beside the hub's in `state.db`, speaking
/// `[ui] language` and showing times in tau's zone (`tau`, the whole config); the channel
/// itself too, for what tau tells the owner outside a conversation.
pub(crate) fn host(
    config: &TelegramConfig,
    token: &str,
    hub: Hub,
    events: EventBus,
    state: tau_state::StateDb,
    tau: &crate::settings::TauConfig,
    routines: Arc<dyn tau_web::Routines>,
) -> anyhow::Result<(Arc<dyn Channel>, Arc<TelegramChannel>)> {
    let store = tau_telegram::Store::new(state);
    let adapter = Arc::new(TelegramHub::new(hub, config, events, routines));
    let channel = TelegramChannel::new(
        config,
        token,
        Arc::clone(&adapter) as Arc<dyn tau_telegram::Hub>,
        store,
        tau.ui.language(),
        crate::routines::zone(tau)?,
    )?;
    let hosted: Arc<dyn Channel> = Arc::new(HostedTelegram {
        channel: Arc::clone(&channel),
        hub: adapter,
    });
    Ok((hosted, channel))
}
