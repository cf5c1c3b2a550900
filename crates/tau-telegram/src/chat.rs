//! One chat's output, as a task of its own: the turn streams into one message by
//! throttled edits (at most one call per `interval` in this chat), questions go out as
//! their own messages with buttons, and a closed question's message is edited to say how
//! it ended, its buttons gone. Everything for a chat goes through its task, in order.

use std::sync::Arc;
use std::time::Duration;

use tau_core::Language;
use tau_protocol::{ApprovalQuestion, ChannelEvent, TurnStop};
use tau_state::ApprovalState;
use tokio::sync::mpsc;
use tokio::time::{Instant, sleep, sleep_until};

use crate::api::{ApiError, BotApi, Keyboard};
use crate::hub::Hub;
use crate::names::Names;
use crate::question::{all_arguments, closed, not_found, question_or_passkey};
use crate::store::Store;
use crate::view::TurnView;

/// Attempts for one call that meets 429 or a lost connection.
const ATTEMPTS: u32 = 3;
/// The longest a chat waits on one 429 before giving that call up.
const MAX_WAIT: Duration = Duration::from_secs(60);

/// What a chat's task is asked to do.
#[derive(Debug, Clone)]
pub(crate) enum ChatCommand {
    /// An event of the chat's conversation.
    Event(ChannelEvent),
    /// A message of the channel's own (HTML).
    Say(String),
    /// A message of the channel's own (HTML) with buttons.
    SayWithButtons(String, Keyboard),
    /// Every argument of a question, whole.
    ShowAll(Box<ApprovalQuestion>),
    /// Make the question's message show how it ended, if it did.
    Close(String),
}

/// What every chat's task shares.
pub(crate) struct ChatParts {
    pub api: BotApi,
    pub hub: Arc<dyn Hub>,
    pub store: Arc<Store>,
    pub language: Language,
    /// tau's zone: the times a question shows ("open until", when it was decided).
    pub zone: jiff::tz::TimeZone,
    pub interval: Duration,
    /// The owners' names, for who decided a question.
    pub names: Names,
}

/// Starts the task for `chat`; it ends when the sender is dropped.
pub(crate) fn spawn(chat: i64, parts: Arc<ChatParts>) -> mpsc::UnboundedSender<ChatCommand> {
    let (tx, rx) = mpsc::unbounded_channel();
    let language = parts.language;
    let actor = Chat {
        chat,
        parts,
        view: TurnView::new(language),
        sent: Vec::new(),
        dirty: false,
        next_call: Instant::now(),
    };
    tokio::spawn(actor.run(rx));
    tx
}

/// How a call ended.
enum Outcome<T> {
    Done(T),
    /// Telegram refused it for good (the message is gone, the bot was blocked, ...).
    Refused(ApiError),
    /// It could not be made (429 or no connection, attempts used up).
    Failed,
}

struct Chat {
    chat: i64,
    parts: Arc<ChatParts>,
    view: TurnView,
    /// The messages of the current stretch: id and the HTML they show.
    sent: Vec<(i64, String)>,
    dirty: bool,
    next_call: Instant,
}

impl Chat {
    async fn run(mut self, mut rx: mpsc::UnboundedReceiver<ChatCommand>) {
        loop {
            let due = self.dirty.then_some(self.next_call);
            tokio::select! {
                command = rx.recv() => match command {
                    Some(command) => self.apply(command).await,
                    None => break,
                },
                () = sleep_until(due.unwrap_or_else(Instant::now)), if due.is_some() => {
                    self.flush().await;
                }
            }
        }
        self.flush().await;
    }

    async fn apply(&mut self, command: ChatCommand) {
        match command {
            ChatCommand::Event(event) => self.event(event).await,
            ChatCommand::Say(html) => {
                self.flush().await;
                self.send(&html, None).await;
                self.next_stretch();
            }
            ChatCommand::SayWithButtons(html, keyboard) => {
                self.flush().await;
                self.send(&html, Some(&keyboard)).await;
                self.next_stretch();
            }
            ChatCommand::ShowAll(asked) => {
                self.flush().await;
                for html in all_arguments(&asked, self.parts.language) {
                    self.send(&html, None).await;
                }
                self.next_stretch();
            }
            ChatCommand::Close(approval_id) => self.close(&approval_id).await,
        }
    }

    async fn event(&mut self, event: ChannelEvent) {
        if self.view.apply(&event) {
            self.dirty = true;
            return;
        }
        match event {
            ChannelEvent::ApprovalRequested(asked) => {
                self.flush().await;
                self.ask(&asked).await;
                self.next_stretch();
            }
            ChannelEvent::ApprovalDecided { approval_id, .. } => {
                self.flush().await;
                self.close(approval_id.as_str()).await;
            }
            ChannelEvent::TurnEnded { stop_reason, .. } => {
                self.flush().await;
                if stop_reason == TurnStop::Interrupt {
                    // Paused on a question: the turn goes on once it is answered.
                    self.view.next_stretch();
                } else {
                    self.view.next_turn();
                }
                self.sent.clear();
            }
            // Taken in by the view above.
            ChannelEvent::TextDelta { .. }
            | ChannelEvent::ToolCallStarted { .. }
            | ChannelEvent::ToolProgress { .. }
            | ChannelEvent::ToolCallFinished { .. }
            | ChannelEvent::ToolOutput { .. }
            | ChannelEvent::Notice { .. } => {}
        }
    }

    fn next_stretch(&mut self) {
        self.view.next_stretch();
        self.sent.clear();
        self.dirty = false;
    }

    /// Shows the stretch as it is now: edits the messages that changed, sends new ones.
    async fn flush(&mut self) {
        self.dirty = false;
        for (i, html) in self.view.messages().into_iter().enumerate() {
            match self.sent.get(i).cloned() {
                Some((_, shown)) if shown == html => {}
                Some((id, _)) => {
                    if let Outcome::Done(()) = self.edit(self.chat, id, &html).await
                        && let Some(entry) = self.sent.get_mut(i)
                    {
                        entry.1 = html;
                    }
                }
                None => match self.send(&html, None).await {
                    Some(id) => self.sent.push((id, html)),
                    None => break,
                },
            }
        }
    }

    /// Sends a question, unless its message exists already (a question shown again after
    /// a restart keeps its first message, whose buttons still work).
    async fn ask(&mut self, asked: &ApprovalQuestion) {
        match self.parts.store.shown(asked.approval_id.as_str()) {
            Ok(None) => {}
            Ok(Some(_)) => return,
            Err(error) => tracing::warn!("telegram: {error}"),
        }
        let passkey = self.parts.hub.passkey_elsewhere(asked.approval_id.as_str());
        let (html, keyboard) = question_or_passkey(
            asked,
            self.parts.language,
            &self.parts.zone,
            passkey.as_ref(),
        );
        let Some(message_id) = self.send(&html, Some(&keyboard)).await else {
            return;
        };
        if let Err(error) =
            self.parts
                .store
                .remember(asked.approval_id.as_str(), self.chat, message_id)
        {
            tracing::warn!(approval_id = %asked.approval_id, "telegram: {error}");
        }
    }

    /// Edits a question's message to say how it ended and drops its buttons, once.
    async fn close(&mut self, approval_id: &str) {
        let shown = match self.parts.store.shown(approval_id) {
            Ok(Some(shown)) if !shown.closed => shown,
            Ok(_) => return,
            Err(error) => {
                tracing::warn!(approval_id, "telegram: {error}");
                return;
            }
        };
        let html = match self.parts.hub.question(approval_id).await {
            Ok(Some(q)) if q.row.state == ApprovalState::Pending => return,
            Ok(Some(q)) => closed(
                &q.row,
                self.parts.language,
                &self.parts.zone,
                &self.parts.names,
            ),
            Ok(None) => not_found(self.parts.language),
            Err(error) => {
                tracing::warn!(approval_id, "telegram: {error}");
                return;
            }
        };
        match self.edit(shown.chat, shown.message_id, &html).await {
            Outcome::Done(()) | Outcome::Refused(_) => {
                if let Err(error) = self.parts.store.close(approval_id) {
                    tracing::warn!(approval_id, "telegram: {error}");
                }
            }
            // Left open: the next start tries again.
            Outcome::Failed => {}
        }
    }

    async fn send(&mut self, html: &str, keyboard: Option<&Keyboard>) -> Option<i64> {
        let api = self.parts.api.clone();
        let chat = self.chat;
        match self
            .call(|| {
                let api = api.clone();
                async move { api.send_message(chat, html, keyboard).await }
            })
            .await
        {
            Outcome::Done(id) => Some(id),
            Outcome::Refused(_) | Outcome::Failed => None,
        }
    }

    async fn edit(&mut self, chat: i64, message_id: i64, html: &str) -> Outcome<()> {
        let api = self.parts.api.clone();
        let outcome = self
            .call(|| {
                let api = api.clone();
                async move { api.edit_message(chat, message_id, html, None).await }
            })
            .await;
        match outcome {
            // Nothing to change is what was wanted.
            Outcome::Refused(ApiError::Refused { description, .. })
                if description.contains("message is not modified") =>
            {
                Outcome::Done(())
            }
            other => other,
        }
    }

    /// One Bot API call in this chat's pace: waits its turn, waits out a 429, retries a
    /// lost connection; gives up after [`ATTEMPTS`] with one log line.
    async fn call<T, F, Fut>(&mut self, make: F) -> Outcome<T>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<T, ApiError>>,
    {
        for attempt in 1..=ATTEMPTS {
            sleep_until(self.next_call).await;
            let result = make().await;
            self.next_call = Instant::now() + self.parts.interval;
            match result {
                Ok(value) => return Outcome::Done(value),
                Err(ApiError::TooManyRequests(seconds)) if attempt < ATTEMPTS => {
                    let wait = Duration::from_secs(seconds.max(1)).min(MAX_WAIT);
                    self.next_call = Instant::now() + wait;
                }
                Err(ApiError::Transport(error)) if attempt < ATTEMPTS => {
                    tracing::debug!(chat = self.chat, "telegram: {error}; retrying");
                    sleep(Duration::from_secs(u64::from(attempt))).await;
                }
                Err(error @ (ApiError::Refused { .. } | ApiError::Malformed(_))) => {
                    tracing::warn!(chat = self.chat, "telegram: {error}");
                    return Outcome::Refused(error);
                }
                Err(error) => {
                    tracing::warn!(chat = self.chat, "telegram: {error}");
                    return Outcome::Failed;
                }
            }
        }
        Outcome::Failed
    }
}
