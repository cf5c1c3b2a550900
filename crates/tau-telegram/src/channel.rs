//! The channel: reads updates, lets only the owners through, turns their messages and
//! presses into hub calls, and routes each conversation's events to its chat.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use tau_core::flood::{FLOOD_WINDOW, Flood, Sender};
use tau_core::{Language, approval::requested_event};
use tokio::sync::mpsc;

use crate::api::{ApiError, BotApi};
use crate::auth::{Access, Verdict};
use crate::chat::{self, ChatCommand, ChatParts};
use crate::config::TelegramConfig;
use crate::grants::grants_message;
use crate::hub::{
    Happened, Hub, HubEvent, PressRefusal, Question, RefusedPress, chat_of, conversation_key,
};
use crate::names::Names;
use crate::pending::pending_text;
use crate::poller::{self, Handler, Pacing, PollError};
use crate::sessions::sessions_text;
use crate::store::Store;
use crate::texts::texts;
use crate::updates::{Incoming, Update, UpdateKind};

mod press;

/// The channel name questions and answers carry.
pub const CHANNEL: &str = "telegram";
/// The longest message passed on to the model, in bytes (Telegram's own limit is 4096
/// characters; anything longer did not come from Telegram).
const MAX_TEXT_BYTES: usize = 16 * 1024;

/// tau's Telegram channel.
pub struct TelegramChannel {
    api: BotApi,
    hub: Arc<dyn Hub>,
    store: Arc<Store>,
    access: Access,
    /// The first owner: where [`TelegramChannel::tell_owner`] writes.
    owner: Option<i64>,
    language: Language,
    /// tau's zone, for the times questions show.
    zone: jiff::tz::TimeZone,
    pacing: Pacing,
    parts: Arc<ChatParts>,
    chats: Mutex<HashMap<i64, mpsc::UnboundedSender<ChatCommand>>>,
    /// Presses that did not count, by (user, chat, why): logged and audited once per
    /// window, the rest counted.
    refused: Flood<Presser>,
}

/// Who pressed, where, and why it did not count.
type Presser = (Option<i64>, Option<i64>, PressRefusal);

/// The summary of presses refused in one window.
fn refused_summary(hub: Arc<dyn Hub>) -> impl Fn(&Sender<Presser>, u64) + Send + Sync {
    move |sender, count| {
        let (user, chat, reason) = match sender {
            Sender::One((user, chat, reason)) => (*user, *chat, *reason),
            Sender::Others => (None, None, PressRefusal::NotAnOwner),
        };
        tracing::warn!(user = ?user, chat = ?chat, reason = reason.as_str(), count, "telegram: presses were refused");
        hub.refused_press(&RefusedPress {
            approval_id: None,
            user,
            chat,
            reason,
            count: Some(count),
        });
    }
}

impl std::fmt::Debug for TelegramChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TelegramChannel")
    }
}

impl TelegramChannel {
    pub fn new(
        config: &TelegramConfig,
        token: &str,
        hub: Arc<dyn Hub>,
        store: Store,
        language: Language,
        zone: jiff::tz::TimeZone,
    ) -> Result<Arc<Self>, ApiError> {
        let api = BotApi::new(config.api_base(), token, config.poll_timeout())?;
        let store = Arc::new(store);
        let refused = Flood::new(FLOOD_WINDOW, refused_summary(Arc::clone(&hub)));
        let parts = Arc::new(ChatParts {
            api: api.clone(),
            hub: Arc::clone(&hub),
            store: Arc::clone(&store),
            language,
            zone: zone.clone(),
            interval: config.edit_interval(),
            names: Names::default(),
        });
        Ok(Arc::new(Self {
            api,
            hub,
            store,
            access: Access::new(config.owner_set(), config.chat_set()),
            owner: config.owners.first().copied(),
            language,
            zone,
            pacing: Pacing {
                timeout_seconds: config.poll_timeout_seconds,
                min_interval: config.min_poll_interval(),
                backoff_min: Duration::from_secs(1),
                backoff_max: Duration::from_secs(60),
            },
            parts,
            chats: Mutex::new(HashMap::new()),
            refused,
        }))
    }

    /// Sends tau's own `text` (multi-line, written by tau) to the first owner's private
    /// chat: what tau has to tell the owner outside any conversation.
    pub async fn tell_owner(&self, text: &str) -> Result<(), ApiError> {
        let Some(owner) = self.owner else {
            return Ok(());
        };
        let html = crate::html::escape(&tau_core::display_multiline(text));
        self.api.send_message(owner, &html, None).await.map(|_| ())
    }

    /// Runs the channel until polling meets a failure no retry mends (409: another
    /// program polls with this token; 401: the token is refused). `events` carries the
    /// events of this channel's conversations.
    pub async fn run(self: Arc<Self>, mut events: mpsc::Receiver<HubEvent>) -> PollError {
        self.recover().await;
        let pump = Arc::clone(&self);
        let _pumping = AbortOnDrop(tokio::spawn(async move {
            while let Some(HubEvent {
                conversation,
                event,
            }) = events.recv().await
            {
                match chat_of(&conversation) {
                    Some(chat) if pump.access.chat_allowed(chat) => match event {
                        Happened::Turn(event) => pump.to_chat(chat, ChatCommand::Event(event)),
                        Happened::RoutinePrompt {
                            routine,
                            trigger,
                            text,
                        } => pump.to_chat(
                            chat,
                            ChatCommand::Say(routine_prompt(
                                pump.language,
                                &routine,
                                &trigger,
                                &text,
                            )),
                        ),
                    },
                    // A conversation of a chat no longer allowed (the config changed).
                    Some(_) | None => {
                        tracing::debug!(%conversation, "telegram: an event for no allowed chat");
                    }
                }
            }
        }));
        let offset = self.store.offset().unwrap_or_else(|error| {
            tracing::warn!("telegram: {error}");
            None
        });
        let handler: Arc<dyn Handler> = Arc::new(Updates(Arc::clone(&self)));
        poller::poll(&self.api, handler, offset, self.pacing).await
    }

    fn to_chat(&self, chat: i64, command: ChatCommand) {
        let mut chats = self.chats.lock().unwrap_or_else(PoisonError::into_inner);
        let sender = chats
            .entry(chat)
            .or_insert_with(|| chat::spawn(chat, Arc::clone(&self.parts)));
        if let Err(mpsc::error::SendError(command)) = sender.send(command) {
            // The chat's task ended (it never should); start another.
            let sender = chat::spawn(chat, Arc::clone(&self.parts));
            let _ = sender.send(command);
            chats.insert(chat, sender);
        }
    }

    fn say(&self, chat: i64, text: &str) {
        let shown = crate::html::escape(&tau_core::display_multiline(text));
        self.to_chat(chat, ChatCommand::Say(shown));
    }

    /// After a start: questions closed while tau was down lose their buttons; questions
    /// still open that no message shows are shown.
    async fn recover(&self) {
        match self.store.open_questions() {
            Ok(ids) => {
                for id in ids {
                    if let Ok(Some(shown)) = self.store.shown(&id) {
                        self.to_chat(shown.chat, ChatCommand::Close(id));
                    }
                }
            }
            Err(error) => tracing::warn!("telegram: {error}"),
        }
        match self.hub.pending().await {
            Ok(questions) => {
                for Question { row, conversation } in questions {
                    let shown = self.store.shown(row.id.as_str()).ok().flatten();
                    let chat = conversation
                        .as_deref()
                        .and_then(chat_of)
                        .filter(|c| self.access.chat_allowed(*c));
                    if let (None, Some(chat)) = (shown, chat) {
                        self.to_chat(chat, ChatCommand::Event(requested_event(&row)));
                    }
                }
            }
            Err(error) => tracing::warn!("telegram: cannot list open questions: {error}"),
        }
    }

    fn close_everywhere(&self, approval_id: &str) {
        if let Ok(Some(shown)) = self.store.shown(approval_id) {
            self.to_chat(shown.chat, ChatCommand::Close(approval_id.to_owned()));
        }
    }

    async fn message(&self, message: Incoming) {
        let Incoming {
            chat,
            from,
            from_name,
            text,
            passed_on,
        } = message;
        // 1. strangers and chats not allowed: ignored, logged once per sender
        match self.access.check(from, chat) {
            Verdict::Owner => {
                if let Some(user) = from {
                    self.parts.names.learn(user, from_name.as_deref());
                }
            }
            verdict @ (Verdict::Stranger | Verdict::ChatNotAllowed) => {
                if self.access.first_time(from, chat) {
                    tracing::warn!(user = ?from, chat = ?chat, ?verdict, "telegram: ignoring messages of a sender who may not use this bot");
                }
                return;
            }
        }
        let (Some(chat), Some(from)) = (chat, from) else {
            return;
        };
        let t = texts(self.language);
        // 2. no text (a photo, a sticker): nothing for the model
        if text.is_none() && passed_on.is_none() {
            tracing::debug!(chat, "telegram: a message without text was ignored");
            return;
        }
        // 3. more than Telegram itself allows: not from Telegram
        let bytes = [text.as_deref(), passed_on.as_ref().map(|p| p.text.as_str())]
            .into_iter()
            .flatten()
            .map(str::len)
            .max()
            .unwrap_or(0);
        if bytes > MAX_TEXT_BYTES {
            tracing::warn!(chat, bytes, "telegram: an oversized message was refused");
            self.say(chat, t.too_long);
            return;
        }
        let key = match self.store.generation(chat) {
            Ok(generation) => conversation_key(chat, generation),
            Err(error) => {
                tracing::warn!("telegram: {error}");
                self.say(chat, &format!("{} {error}", t.not_taken));
                return;
            }
        };
        // 4. someone else's text (a forward, a quote) goes to the model as theirs, before
        // the person's own words about it; a command's reply context is not for the model
        if let Some(passed_on) = passed_on
            && text.as_deref().and_then(command).is_none()
        {
            tracing::info!(
                chat,
                user = from,
                "telegram: a forwarded or quoted message for the model"
            );
            let source = tau_protocol::Source::Forwarded {
                channel: CHANNEL.to_owned(),
                from: passed_on.from,
            };
            if let Err(error) = self.hub.send_passed_on(&key, &passed_on.text, source).await {
                self.say(chat, &format!("{} {error}", t.not_taken));
                return;
            }
        }
        let Some(text) = text else {
            return;
        };
        // 5. commands; anything else goes to the model
        match command(&text) {
            Some("start") => {
                self.say(chat, t.greeting);
            }
            // The chat's next conversation; questions of the earlier one stay answerable
            // here until they are decided or expire.
            Some("new") => match self.store.next_generation(chat) {
                Ok(_) => self.say(chat, t.new_session),
                Err(error) => self.say(chat, &format!("{} {error}", t.not_taken)),
            },
            Some("grants") => match self.hub.allowances(&from.to_string()).await {
                Ok(allowances) => {
                    let (html, keyboard) = grants_message(t, &allowances, &self.zone);
                    self.to_chat(chat, ChatCommand::SayWithButtons(html, keyboard));
                }
                Err(error) => self.say(chat, &format!("{} {error}", t.not_taken)),
            },
            Some("sessions") => self.sessions(chat, &key, None).await,
            Some("search") => match argument(&text) {
                Some(words) => self.sessions(chat, &key, Some(words)).await,
                None => self.say(chat, t.search_usage),
            },
            Some("rename") => {
                let title = argument(&text);
                match self.hub.rename(&key, title).await {
                    Ok(()) => match self.hub.conversations(chat, None).await {
                        Ok(listed) => {
                            let now = listed
                                .into_iter()
                                .find(|c| c.key == key)
                                .and_then(|c| c.title)
                                .unwrap_or_default();
                            self.say(chat, &t.renamed.replace("{title}", &now));
                        }
                        Err(error) => self.say(chat, &format!("{} {error}", t.not_taken)),
                    },
                    Err(error) if title.is_none() => {
                        self.say(
                            chat,
                            &format!("{} {error}\n{}", t.not_taken, t.rename_usage),
                        );
                    }
                    Err(error) => self.say(chat, &format!("{} {error}", t.not_taken)),
                }
            }
            // The chat's next message opens its conversation again, with a new session.
            Some("delete") => match self.hub.delete(&key).await {
                Ok(true) => self.say(chat, t.deleted),
                Ok(false) => self.say(chat, t.delete_nothing),
                Err(error) => self.say(chat, &format!("{} {error}", t.not_taken)),
            },
            Some("pending") => match self.hub.waiting().await {
                Ok(questions) => self.say(chat, &pending_text(t, chat, &questions)),
                Err(error) => self.say(chat, &format!("{} {error}", t.not_taken)),
            },
            Some("cancel") => match self.hub.cancel(&key).await {
                Ok(true) => self.say(chat, t.cancelling),
                Ok(false) => self.say(chat, t.nothing_running),
                Err(error) => self.say(chat, &format!("{} {error}", t.not_taken)),
            },
            _ => {
                tracing::info!(chat, user = from, "telegram: a message for the model");
                if let Err(error) = self.hub.send(&key, &text).await {
                    self.say(chat, &format!("{} {error}", t.not_taken));
                }
            }
        }
    }

    /// `/sessions` (or `/search WORDS`): the chat's conversations by title, the open one
    /// (`key`) marked.
    async fn sessions(&self, chat: i64, key: &str, search: Option<&str>) {
        let t = texts(self.language);
        match self.hub.conversations(chat, search).await {
            Ok(listed) => self.say(
                chat,
                &sessions_text(t, &listed, key, search.is_some(), &self.zone),
            ),
            Err(error) => self.say(chat, &format!("{} {error}", t.not_taken)),
        }
    }
}

/// A routine's prompt as the chat shows it: whose it is and what fired it (tau's words,
/// bold), then the prompt, escaped like everything else.
fn routine_prompt(language: Language, routine: &str, trigger: &str, text: &str) -> String {
    let header = texts(language)
        .routine_prompt
        .replace("{routine}", &tau_core::display(routine))
        .replace("{trigger}", &tau_core::display(trigger));
    format!(
        "<b>{}</b>\n{}",
        crate::html::escape(&header),
        crate::html::escape(&tau_core::display_multiline(text))
    )
}

/// What follows a command's name (`/rename Garden chores` -> `Garden chores`); `None`
/// when nothing does.
fn argument(text: &str) -> Option<&str> {
    let rest = text.trim_start().split_once(char::is_whitespace)?.1.trim();
    (!rest.is_empty()).then_some(rest)
}

/// `/new`, `/new@tau_bot`, `/new args` -> `new`. `None` for anything but a command.
fn command(text: &str) -> Option<&str> {
    let word = text.strip_prefix('/')?.split(char::is_whitespace).next()?;
    let name = word.split('@').next()?;
    (!name.is_empty()).then_some(name)
}

/// Ends a task when the future that started it is dropped (the channel stopped).
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

struct Updates(Arc<TelegramChannel>);

#[async_trait]
impl Handler for Updates {
    async fn handle(&self, update: Update) {
        match update.kind {
            UpdateKind::Message(message) => self.0.message(message).await,
            UpdateKind::Press(press) => self.0.press(press).await,
            UpdateKind::Other(kind) => {
                tracing::debug!(update = update.id, %kind, "telegram: an update of another kind was ignored");
            }
        }
    }

    fn handled_until(&self, offset: i64) {
        if let Err(error) = self.0.store.set_offset(offset) {
            tracing::warn!("telegram: {error}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_routine_prompt_says_whose_it_is_and_stays_text() {
        assert_eq!(
            routine_prompt(
                Language::En,
                "doorbell",
                "webhook doorbell",
                "Open <b>the</b> door\u{202e}"
            ),
            "<b>⚙ Routine doorbell (webhook doorbell) asks tau:</b>\nOpen &lt;b&gt;the&lt;/b&gt; door\\u{202e}"
        );
    }

    #[test]
    fn commands_are_read_with_or_without_the_bot_name() {
        for (text, expected) in [
            ("/new", Some("new")),
            ("/new@tau_bot", Some("new")),
            ("/cancel now", Some("cancel")),
            ("/", None),
            ("/ new", None),
            ("new", None),
            ("/@x", None),
        ] {
            assert_eq!(command(text), expected, "{text}");
        }
    }
}
