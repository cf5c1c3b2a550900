//! The channel over the hub's port: the [`Hub`] this channel's chats use, made of the
//! `ChannelPort` `tau-hub` binds to `telegram`, and the channel as the hub hosts it. A
//! chat's conversations are the hub's `(telegram, key)`; a routine that asks on Telegram
//! has a conversation of its own (`routine:NAME`), whose questions are shown in its owner's
//! private chat (with no `[[people]]`, the first owner's) and answered there.

use std::sync::Arc;

use async_trait::async_trait;
use tau_hub::{Channel, ChannelError, ChannelPort, RefusedAnswer, Routines, SessionEvent};
use tau_protocol::{Allowance, ApprovalId, DecidedBy, GrantId, GrantRequest, SessionId, Source};
use tau_state::{Answered, ApprovalRow, ApprovalState, Conversation, Revoked};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::channel::{CHANNEL, TelegramChannel};
use crate::hub::{
    ChatConversation, Happened, Hub, HubError, HubEvent, Question, RefusedPress, Reply, chat_of,
};

/// Events waiting for the channel; past this the pump waits (the chats' tasks pace it).
const EVENT_QUEUE: usize = 1024;

/// The hub, as the Telegram channel uses it.
pub(crate) struct PortHub {
    hub: Arc<dyn ChannelPort>,
    /// The chat where questions of conversations that are no chat's (routines) are shown.
    home_chat: Option<i64>,
    /// Which conversations are routines' (and what fires each).
    routines: Arc<dyn Routines>,
}

impl PortHub {
    pub(crate) fn new(
        hub: Arc<dyn ChannelPort>,
        home_chat: Option<i64>,
        routines: Arc<dyn Routines>,
    ) -> Self {
        Self {
            hub,
            home_chat,
            routines,
        }
    }

    /// The channel's key for a conversation: its own for a chat's; for a routine's, its
    /// owner's private chat when `[[people]]` names anyone (nowhere when the owner has no
    /// Telegram id: never another person's chat), else the home chat; `None` for another
    /// channel's.
    fn key_of(&self, conversation: &Conversation) -> Option<String> {
        if conversation.channel != CHANNEL {
            return None;
        }
        if chat_of(&conversation.key).is_some() {
            return Some(conversation.key.clone());
        }
        let household = self.hub.household();
        if !household.is_named() {
            return self.home_chat.map(|chat| chat.to_string());
        }
        let owner = match self.hub.person_of(&conversation.session) {
            Ok(owner) => owner,
            Err(error) => {
                tracing::warn!(session = %conversation.session, %error, "telegram: cannot tell whose a routine's conversation is");
                return None;
            }
        };
        household
            .get(owner.as_str())
            .and_then(|person| person.telegram)
            .map(|chat| chat.to_string())
    }

    fn question_of(&self, row: ApprovalRow) -> Result<Question, HubError> {
        let conversation = self
            .hub
            .conversation_of(&row.session)
            .map_err(HubError::Hub)?
            .and_then(|c| self.key_of(&c));
        Ok(Question { row, conversation })
    }

    /// The session of conversation `key`; a private chat's is the person whose Telegram
    /// id the chat is (a private chat's id is its user's).
    fn session(&self, key: &str) -> Result<SessionId, HubError> {
        let session = self.hub.open_conversation(key).map_err(HubError::Hub)?;
        if let Some(person) = chat_of(key)
            .filter(|chat| *chat > 0)
            .and_then(|chat| self.hub.household().by_telegram(chat).cloned())
        {
            self.hub
                .claim_conversation(&session, &person)
                .map_err(HubError::Hub)?;
        }
        Ok(session)
    }
}

#[async_trait]
impl Hub for PortHub {
    async fn send(&self, key: &str, text: &str) -> Result<(), HubError> {
        let session = self.session(key)?;
        self.hub
            .send(&session, text.to_owned())
            .await
            .map_err(HubError::Hub)
    }

    async fn send_passed_on(&self, key: &str, text: &str, source: Source) -> Result<(), HubError> {
        let session = self.session(key)?;
        self.hub
            .send_from(&session, text.to_owned(), source)
            .await
            .map_err(HubError::Hub)
    }

    async fn cancel(&self, key: &str) -> Result<bool, HubError> {
        let session = self.session(key)?;
        self.hub.cancel(&session).map_err(HubError::Hub)
    }

    async fn question(&self, approval_id: &str) -> Result<Option<Question>, HubError> {
        // Read from the store itself, not through the channel's view: a question of another
        // channel must be told apart from one that does not exist (the audit says which).
        let Ok(id) = ApprovalId::parse(approval_id) else {
            return Ok(None);
        };
        let row = self.hub.question(&id).map_err(HubError::Hub)?;
        row.map(|row| self.question_of(row)).transpose()
    }

    fn passkey_elsewhere(&self, approval_id: &str) -> Option<tau_hub::PasskeyElsewhere> {
        let id = ApprovalId::parse(approval_id).ok()?;
        self.hub.passkey_elsewhere(&id)
    }

    async fn answer(
        &self,
        approval_id: &str,
        reply: Reply,
        user: &str,
    ) -> Result<Answered, HubError> {
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
        // In a home that names people, the user id is a person's (or nobody's: then the
        // hub refuses the answer as nobody's to give, and records it).
        let person = user
            .parse::<i64>()
            .ok()
            .and_then(|id| self.hub.household().by_telegram(id).cloned());
        let answered = match &person {
            Some(person) => {
                self.hub
                    .answer_as(person, Some(user.to_owned()), &id, reply)
                    .await
            }
            None => self.hub.answer(Some(user.to_owned()), &id, reply).await,
        };
        match answered {
            Ok(answered) => Ok(answered),
            Err(tau_hub::HubError::UnknownApproval(_)) => Ok(Answered::NotFound),
            Err(error) => Err(HubError::Hub(error)),
        }
    }

    async fn pending(&self) -> Result<Vec<Question>, HubError> {
        self.hub
            .approvals(Some(ApprovalState::Pending))
            .map_err(HubError::Hub)?
            .into_iter()
            .map(|row| self.question_of(row))
            .collect()
    }

    async fn waiting(&self) -> Result<Vec<Question>, HubError> {
        self.hub
            .approvals_of_every_channel(Some(ApprovalState::Pending))
            .map_err(HubError::Hub)?
            .into_iter()
            .map(|row| self.question_of(row))
            .collect()
    }

    async fn allowances(&self, user: &str) -> Result<Vec<Allowance>, HubError> {
        let grants = self.hub.grants().map_err(HubError::Hub)?;
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

    async fn revoke(&self, grant: &GrantId, user: &str) -> Result<Revoked, HubError> {
        // Only the person who made a grant revokes it here: another owner's is unknown.
        let theirs = self
            .hub
            .grant(grant)
            .map_err(HubError::Hub)?
            .is_some_and(|g| g.person.as_deref() == Some(user));
        if !theirs {
            return Ok(Revoked::NotFound);
        }
        let by = DecidedBy::Person {
            channel: CHANNEL.to_owned(),
            user: Some(user.to_owned()),
            person: None,
        };
        self.hub.revoke_grant(grant, &by).map_err(HubError::Hub)
    }

    async fn conversations(
        &self,
        chat: i64,
        search: Option<&str>,
    ) -> Result<Vec<ChatConversation>, HubError> {
        let found = match search {
            Some(text) => Some(self.hub.search_conversations(text).map_err(HubError::Hub)?),
            None => None,
        };
        let mut listed: Vec<ChatConversation> = self
            .hub
            .conversations()
            .map_err(HubError::Hub)?
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

    async fn rename(&self, key: &str, title: Option<&str>) -> Result<(), HubError> {
        let session = self.session(key)?;
        match self.hub.rename_conversation(&session, title) {
            Ok(()) => Ok(()),
            Err(tau_hub::HubError::UnknownSession(_)) => Err(HubError::NothingWritten),
            Err(error) => Err(HubError::Hub(error)),
        }
    }

    async fn delete(&self, key: &str) -> Result<bool, HubError> {
        let written = self
            .hub
            .conversations()
            .map_err(HubError::Hub)?
            .into_iter()
            .find(|info| info.conversation.key == key && info.message_count > 0);
        let Some(info) = written else {
            return Ok(false);
        };
        self.hub
            .delete_conversation(&info.conversation.session)
            .await
            .map_err(HubError::Hub)?;
        Ok(true)
    }

    fn refused_press(&self, press: &RefusedPress) {
        self.hub.refused_answer(RefusedAnswer {
            approval_id: press.approval_id.clone(),
            user: press.user.map(|u| u.to_string()),
            person: None,
            place: press.chat.map(|c| c.to_string()),
            reason: press.reason.as_str().to_owned(),
            count: press.count,
        });
    }
}

/// The Telegram channel as the hub hosts it.
pub(crate) struct HostedTelegram {
    pub(crate) channel: Arc<TelegramChannel>,
    pub(crate) hub: Arc<PortHub>,
}

#[async_trait]
impl Channel for HostedTelegram {
    fn name(&self) -> &str {
        CHANNEL
    }

    async fn run(
        self: Arc<Self>,
        port: Arc<dyn ChannelPort>,
        stop: CancellationToken,
    ) -> Result<(), ChannelError> {
        let (sender, receiver) = mpsc::channel(EVENT_QUEUE);
        let mut events = port.events();
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

/// The channel for `[telegram]` over the hub's `port` (bound to `telegram`), its memory
/// in `store`, speaking `language` and showing times in `zone`; also the channel itself,
/// for what tau tells the owner outside a conversation (the audit witness).
pub fn host(
    config: &crate::TelegramConfig,
    token: &str,
    port: Arc<dyn ChannelPort>,
    routines: Arc<dyn Routines>,
    store: crate::Store,
    language: tau_core::Language,
    zone: jiff::tz::TimeZone,
) -> Result<(Arc<dyn Channel>, Arc<TelegramChannel>), crate::ApiError> {
    let adapter = Arc::new(PortHub::new(port, config.owners.first().copied(), routines));
    let channel = TelegramChannel::new(
        config,
        token,
        Arc::clone(&adapter) as Arc<dyn Hub>,
        store,
        language,
        zone,
    )?;
    let hosted: Arc<dyn Channel> = Arc::new(HostedTelegram {
        channel: Arc::clone(&channel),
        hub: adapter,
    });
    Ok((hosted, channel))
}
