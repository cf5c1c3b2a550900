//! The hub's API: conversations, messages, answers, subscriptions.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tau_agent::{Message, SessionRepository};
use tau_core::approval::{DurableQuestions, StoredAnswer, answer_row};
use tau_core::{EventBus, StoredSessions};
use tau_protocol::{ApprovalId, DecidedBy, SessionId};
use tau_state::{Answered, ApprovalRow, ApprovalState, Conversation, StateDb};
use tokio::sync::{Notify, broadcast};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::channel::{Channel, ChannelError, ChannelStatus};
use crate::ids::new_session_id;
pub(crate) use crate::live::{LiveConversations, Slot, locked};
use crate::port::{ChannelPort, HubPort};
pub use crate::types::{
    ChannelEvents, ConversationEvent, ConversationInfo, HubOptions, OpenError, Opened, Recovery,
    Refused, RefusedGrant, Reply, SessionEvent, SessionFactory,
};
use crate::{GrantRefused, HubError};

/// How many events a slow subscriber of every conversation, or of every stored
/// question, may fall behind before it is told it lagged.
const STREAM_CAPACITY: usize = 1024;
/// How long shutdown waits for cancelled turns to end.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// The hub; cheap to clone, every clone is the same hub.
#[derive(Clone)]
pub struct Hub {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    /// `state.db`: sessions, questions, conversations.
    pub(crate) state: StateDb,
    pub(crate) factory: Arc<dyn SessionFactory>,
    pub(crate) options: HubOptions,
    /// Each conversation in use: which it is, its open session, its stream and its bus.
    pub(crate) live: LiveConversations,
    pub(crate) opening: tokio::sync::Mutex<()>,
    /// Every session's events, hub-wide, for channels that watch all their conversations.
    everything: broadcast::Sender<ConversationEvent>,
    pub(crate) changes: broadcast::Sender<ApprovalRow>,
    /// The hosted channels, in the order they were started.
    channels: Mutex<Vec<ChannelStatus>>,
    /// A channel that stopped with an error.
    stops: broadcast::Sender<ChannelError>,
    pub(crate) tasks: TaskTracker,
    pub(crate) stop: CancellationToken,
    pub(crate) stopping: AtomicBool,
    /// Wakes the expiry task: a new question was stored.
    pub(crate) sweep: Notify,
    /// The questions routines' runs wait on here.
    pub(crate) routine_waits: crate::unawaited::RoutineWaits,
}

impl Hub {
    /// A hub on `state.db`: its sessions, stored questions and conversations.
    pub fn open(state: StateDb, factory: Arc<dyn SessionFactory>, options: HubOptions) -> Self {
        let (changes, _) = broadcast::channel(STREAM_CAPACITY);
        let (everything, _) = broadcast::channel(STREAM_CAPACITY);
        let (stops, _) = broadcast::channel(16);
        Self {
            inner: Arc::new(Inner {
                state,
                factory,
                options,
                live: LiveConversations::default(),
                opening: tokio::sync::Mutex::new(()),
                everything,
                changes,
                channels: Mutex::default(),
                stops,
                tasks: TaskTracker::new(),
                stop: CancellationToken::new(),
                stopping: AtomicBool::new(false),
                sweep: Notify::new(),
                routine_waits: crate::unawaited::RoutineWaits::default(),
            }),
        }
    }

    /// `state.db`, for a channel that keeps its own memory there or only reads it.
    pub fn state(&self) -> &StateDb {
        &self.inner.state
    }

    /// The port of `channel`: the hub as that channel may use it.
    pub fn port(&self, channel: &str) -> Arc<dyn ChannelPort> {
        Arc::new(HubPort::new(self.clone(), channel))
    }

    /// Writes one of the hub's own audit lines.
    pub(crate) fn audit(&self, event: &tau_core::AuditEvent) {
        self.inner.options.audit.emit(event);
    }

    // ---- conversations ----

    /// A new conversation of `channel` with a session of its own; its key is the
    /// session id. Never an existing conversation: a taken id is drawn again.
    pub fn new_conversation(&self, channel: &str) -> Result<SessionId, HubError> {
        crate::ids::create_conversation(&self.inner.state, channel, || new_session_id(channel))
    }

    /// The session of the conversation `(channel, key)`, created on first use.
    pub fn open_conversation(&self, channel: &str, key: &str) -> Result<SessionId, HubError> {
        let session = new_session_id(channel)?;
        Ok(self
            .inner
            .state
            .conversations()
            .find_or_create_conversation(channel, key, &session)?
            .session)
    }

    /// The conversations of `channel`, oldest first.
    pub fn conversations(&self, channel: &str) -> Result<Vec<ConversationInfo>, HubError> {
        let summaries = self.inner.state.sessions().list_sessions()?;
        let pending = self
            .inner
            .state
            .approvals()
            .approvals(Some(ApprovalState::Pending))?;
        Ok(self
            .inner
            .state
            .conversations().conversations_of(channel)?
            .into_iter()
            .map(|conversation| {
                let summary = summaries.iter().find(|s| s.id == conversation.session);
                let title = self
                    .inner
                    .state
                    .sessions().session_title(&conversation.session)
                    .unwrap_or_else(|error| {
                        tracing::warn!(session = %conversation.session, %error, "cannot read a conversation's title");
                        None
                    });
                ConversationInfo {
                    title,
                    message_count: summary.map_or(0, |s| s.message_count),
                    updated_at: summary
                        .map_or(conversation.created_at.as_second(), |s| s.updated_at),
                    busy: self.inner.live.busy(&conversation.session),
                    pending_approvals: pending
                        .iter()
                        .filter(|r| r.session == conversation.session)
                        .count(),
                    conversation,
                }
            })
            .collect())
    }

    /// The conversation `session` is, if it is a hub conversation.
    pub fn conversation_of(&self, session: &SessionId) -> Result<Option<Conversation>, HubError> {
        if let Some(known) = self.inner.live.conversation(session) {
            return Ok(Some(known));
        }
        let found = self.inner.state.conversations().conversation_of(session)?;
        if let Some(conversation) = &found {
            self.inner.live.remember(session, conversation);
        }
        Ok(found)
    }

    /// The conversation `session` belongs to, when it is one of `channel`'s.
    pub(crate) fn owned(
        &self,
        channel: &str,
        session: &SessionId,
    ) -> Result<Conversation, HubError> {
        match self.conversation_of(session)? {
            Some(conversation) if conversation.channel == channel => Ok(conversation),
            Some(_) | None => Err(HubError::UnknownSession(session.to_string())),
        }
    }

    /// Every stored message of a session, as the model received them.
    pub fn messages(&self, channel: &str, session: &SessionId) -> Result<Vec<Message>, HubError> {
        self.owned(channel, session)?;
        Ok(StoredSessions::new(self.inner.state.sessions()).messages(session, 0)?)
    }

    // ---- messages and events ----

    /// Queues a person's message as a turn of `session`; returns once the session is
    /// open and the turn queued (it runs after the turns before it).
    pub async fn send(
        &self,
        channel: &str,
        session: &SessionId,
        text: String,
    ) -> Result<(), HubError> {
        self.send_from(channel, session, text, None).await
    }

    /// [`Self::send`] for a message the person passed on: `source` names who wrote it
    /// (a forward), so the turn reads it as outside text; `None` is the person's own.
    pub async fn send_from(
        &self,
        channel: &str,
        session: &SessionId,
        text: String,
        source: Option<tau_protocol::Source>,
    ) -> Result<(), HubError> {
        self.owned(channel, session)?;
        let slot = self.slot(session).await?;
        self.queue(slot, crate::turns::Work::Prompt { text, source })
    }

    /// The events of `session` from now on.
    pub fn subscribe(
        &self,
        channel: &str,
        session: &SessionId,
    ) -> Result<broadcast::Receiver<SessionEvent>, HubError> {
        self.owned(channel, session)?;
        Ok(self.stream(session).subscribe())
    }

    pub(crate) fn stream(&self, session: &SessionId) -> broadcast::Sender<SessionEvent> {
        self.inner.live.stream(session)
    }

    pub(crate) fn publish(&self, session: &SessionId, event: SessionEvent) {
        // Nobody listening is fine: the transcript is in the store.
        if self.inner.everything.receiver_count() > 0
            && let Ok(Some(conversation)) = self.conversation_of(session)
        {
            let _ = self.inner.everything.send(ConversationEvent {
                conversation,
                event: event.clone(),
            });
        }
        let _ = self.stream(session).send(event);
    }

    /// The events of every conversation of `channel` from now on.
    pub fn channel_events(&self, channel: &str) -> ChannelEvents {
        ChannelEvents {
            channel: Some(channel.to_owned()),
            receiver: self.inner.everything.subscribe(),
        }
    }

    /// The events of every conversation of every channel from now on: what follows a
    /// question wherever it was asked (a push to the person it waits for).
    pub fn every_channels_events(&self) -> ChannelEvents {
        ChannelEvents {
            channel: None,
            receiver: self.inner.everything.subscribe(),
        }
    }

    /// Cancels the running turn of `session` (a command it runs stops with it); false when
    /// none runs. Questions it waits on stay.
    pub fn cancel(&self, channel: &str, session: &SessionId) -> Result<bool, HubError> {
        self.owned(channel, session)?;
        match self.inner.live.slot(session) {
            Some(slot) if slot.busy() => {
                slot.cancel();
                Ok(true)
            }
            Some(_) | None => Ok(false),
        }
    }

    pub(crate) fn bus(&self, session: &SessionId) -> EventBus {
        self.inner
            .live
            .bus(session, || self.inner.factory.events(session))
    }

    /// True while a turn of `session` runs or waits to run.
    pub fn is_busy(&self, session: &SessionId) -> bool {
        self.inner.live.busy(session)
    }

    // ---- approvals ----

    /// The stored questions of `channel` in `state` (all of them for `None`), oldest first.
    pub fn approvals(
        &self,
        channel: &str,
        state: Option<ApprovalState>,
    ) -> Result<Vec<ApprovalRow>, HubError> {
        Ok(self
            .inner
            .state
            .approvals()
            .approvals(state)?
            .into_iter()
            .filter(|r| r.channel == channel)
            .collect())
    }

    /// The stored questions of every channel in `state` (all of them for `None`), oldest
    /// first: what waits for the person wherever it was asked. Only a question's own
    /// channel may answer it ([`Hub::answer`] checks).
    pub fn approvals_of_every_channel(
        &self,
        state: Option<ApprovalState>,
    ) -> Result<Vec<ApprovalRow>, HubError> {
        Ok(self.inner.state.approvals().approvals(state)?)
    }

    /// One stored question of `channel` and the conversation it belongs to; `None` for an
    /// unknown id or another channel's question.
    pub fn approval(
        &self,
        channel: &str,
        approval_id: &ApprovalId,
    ) -> Result<Option<(ApprovalRow, Conversation)>, HubError> {
        let Some(row) = self.inner.state.approvals().approval(approval_id)? else {
            return Ok(None);
        };
        if row.channel != channel {
            return Ok(None);
        }
        Ok(self.conversation_of(&row.session)?.map(|c| (row, c)))
    }

    /// Every stored question as it is asked or decided.
    pub fn approval_changes(&self) -> broadcast::Receiver<ApprovalRow> {
        self.inner.changes.subscribe()
    }

    /// A person's answer on `channel` (`user` names them where the channel knows). The
    /// first answer decides and resumes the turn (of a shared store, the asking hub's
    /// while it lives: `held_turns.rs`); a later one changes nothing and is
    /// told the final state. An answer to a question nothing waits on any more is not
    /// used ([`Answered::NotUsed`], `unawaited.rs`).
    pub async fn answer(
        &self,
        channel: &str,
        user: Option<String>,
        approval_id: &ApprovalId,
        reply: Reply,
    ) -> Result<Answered, HubError> {
        self.answer_as(channel, None, user, approval_id, reply)
            .await
    }

    /// [`Hub::answer`] by `person` of the household (`None`: the channel did not say,
    /// which only a home without `[[people]]` takes). An answer that is not theirs to
    /// give is refused ([`HubError::NotYours`]) and audited; nothing is decided.
    pub async fn answer_as(
        &self,
        channel: &str,
        person: Option<&tau_protocol::PersonName>,
        user: Option<String>,
        approval_id: &ApprovalId,
        reply: Reply,
    ) -> Result<Answered, HubError> {
        let unknown = || HubError::UnknownApproval(approval_id.to_string());
        let row = self
            .inner
            .state
            .approvals()
            .approval(approval_id)?
            .ok_or_else(unknown)?;
        if row.channel != channel {
            return Err(unknown());
        }
        if let Some(reason) = self.answer_refusal(&row, person)? {
            self.audit_not_theirs(channel, &row, user, person, reason.clone());
            return Err(HubError::NotYours(reason));
        }
        // Once anyone has a passkey, a lock-class yes is TauBar's, with one.
        let step = &self.inner.options.passkey_step;
        if step.refuses(&self.inner.state, &row, &reply) {
            let refused = step.elsewhere(&row);
            tracing::info!(approval_id = %row.id, channel, "a yes that takes a passkey, given where none can be asked");
            self.audit(&tau_core::AuditEvent::AnswerRefused {
                channel: channel.to_owned(),
                approval_id: Some(row.id.to_string()),
                user,
                place: None,
                reason: crate::PASSKEY_ELSEWHERE_REASON.to_owned(),
                count: None,
                person: person.map(|p| p.as_str().to_owned()),
            });
            return Err(refused.into());
        }
        let (to, confirmation, grant) = match reply {
            Reply::Approve => (ApprovalState::Approved, None, None),
            // The passkey stands in for the typed second step.
            Reply::Passkey => (
                ApprovalState::Approved,
                row.card.confirm.as_ref().map(|step| step.word.clone()),
                None,
            ),
            Reply::Confirm(typed) => (ApprovalState::Approved, Some(typed), None),
            Reply::ApproveWithGrant(wanted) => {
                let Some(offer) = &row.grant_offer else {
                    return Err(GrantRefused::NotOffered.into());
                };
                if let Err(error) = wanted.checked_hours(offer.hours) {
                    return Err(GrantRefused::from(error).into());
                }
                (ApprovalState::Approved, None, Some(wanted))
            }
            Reply::Reject => (ApprovalState::Rejected, None, None),
        };
        if row.state == ApprovalState::Pending && !self.awaited(&row).await? {
            return self.not_used(&row, channel, user);
        }
        let by = DecidedBy::Person {
            channel: channel.to_owned(),
            user,
            // Named only in a home that names people: a one-person home's record is as
            // before.
            person: person
                .filter(|_| self.household().is_named())
                .map(ToString::to_string),
        };
        // The row read above is the one answered: the compare-and-set decides on the
        // stored state, so an answer that lost a race learns the winner's.
        let answer = StoredAnswer {
            to,
            decided_by: &by,
            confirmation: confirmation.as_deref(),
            grant: grant.as_ref(),
        };
        let answered = self.decide_as(&row, answer)?;
        // Of a store several hubs share, another live hub that asked resumes its own turn.
        if let Answered::Decided(_) = &answered
            && self.holds_turn(&row.id, &row.session)
        {
            self.settle_later(&row.session).await;
        }
        Ok(answered)
    }

    /// Where a yes to question `id` must be given instead, when it takes a passkey and
    /// anyone has one (a channel that cannot ask for one says so on the question).
    pub fn passkey_elsewhere(&self, id: &ApprovalId) -> Option<crate::PasskeyElsewhere> {
        let row = self.inner.state.approvals().approval(id).ok()??;
        let step = &self.inner.options.passkey_step;
        step.refuses(&self.inner.state, &row, &Reply::Approve)
            .then(|| step.elsewhere(&row))
    }

    /// Shows a question stored outside a turn (a routine's, asked on its `ask` channel), or
    /// how it ended, on its conversation and hub-wide, as a turn's own questions are shown.
    pub fn show_question(&self, row: &ApprovalRow) {
        let event = match tau_core::approval::decided_event(row) {
            Some(decided) => decided,
            None => {
                // Shown by the routine's run that waits on it here.
                self.inner.routine_waits.waits(&row.id);
                self.inner.sweep.notify_one();
                tau_core::approval::requested_event(row)
            }
        };
        let _ = self.inner.changes.send(row.clone());
        self.publish(&row.session, SessionEvent::Turn(event));
    }

    /// The compare-and-set on a row, recorded on its session's bus; a decision that
    /// lands is published to the session and hub-wide.
    pub(crate) fn decide(
        &self,
        row: &ApprovalRow,
        to: ApprovalState,
        by: &DecidedBy,
    ) -> Result<Answered, HubError> {
        let answer = StoredAnswer {
            to,
            decided_by: by,
            confirmation: None,
            grant: None,
        };
        self.decide_as(row, answer)
    }

    /// [`Hub::decide`] with what the person typed or pressed for a second step, and the
    /// grant they asked for.
    fn decide_as(&self, row: &ApprovalRow, answer: StoredAnswer<'_>) -> Result<Answered, HubError> {
        let (answered, closing) = answer_row(
            &self.inner.state.approvals(),
            &self.bus(&row.session),
            row,
            answer,
        )?;
        if let Some(event) = closing {
            self.publish(&row.session, SessionEvent::Turn(event));
        }
        if let Answered::Decided(decided) = &answered {
            let _ = self.inner.changes.send(decided.clone());
        }
        Ok(answered)
    }

    /// Queues the turn of `session` to go on with its decided questions. A session that
    /// cannot be opened now is tried again at the next start (its rows stay unsettled).
    pub(crate) async fn settle_later(&self, session: &SessionId) {
        match self.slot(session).await {
            Ok(slot) => {
                if let Err(error) = self.queue(slot, crate::turns::Work::Settle) {
                    tracing::warn!(%session, %error, "cannot resume the turn");
                }
            }
            Err(error) => tracing::warn!(%session, %error, "cannot resume the turn now"),
        }
    }

    // ---- sessions ----

    /// The open session, opening it (and taking its lock) on first use.
    pub(crate) async fn slot(&self, session: &SessionId) -> Result<Arc<Slot>, HubError> {
        if let Some(slot) = self.inner.live.slot(session) {
            return Ok(slot);
        }
        if self.stopping() {
            return Err(HubError::ShuttingDown);
        }
        let _opening = self.inner.opening.lock().await;
        if let Some(slot) = self.inner.live.slot(session) {
            return Ok(slot);
        }
        let conversation = self
            .inner
            .state
            .conversations()
            .conversation_of(session)?
            .ok_or_else(|| HubError::UnknownSession(session.to_string()))?;
        let durable = DurableQuestions {
            store: self.inner.state.approvals(),
            session: session.clone(),
            channel: conversation.channel.clone(),
            timeout: self.inner.options.remote_timeout,
        };
        let opened = self
            .inner
            .factory
            .open(session, durable, self.bus(session))
            .await
            .map_err(|e| HubError::Open {
                session: session.to_string(),
                reason: e.to_string(),
            })?;
        let slot = Arc::new(Slot::new(session, opened));
        self.inner.live.open(session, &slot);
        Ok(slot)
    }

    pub(crate) fn stopping(&self) -> bool {
        self.inner.stopping.load(Ordering::SeqCst)
    }

    // ---- channels and shutdown ----

    /// Runs the channels until `stop` resolves (SIGTERM, Ctrl-C), then shuts the hub down:
    /// running turns are cancelled, pending questions stay. A channel that fails stops
    /// alone, logged once with why; the hub and the other channels go on.
    pub async fn run_channels(
        &self,
        channels: Vec<Arc<dyn Channel>>,
        stop: impl std::future::Future<Output = ()>,
    ) -> Result<(), ChannelError> {
        let mut names: Vec<&str> = channels.iter().map(|c| c.name()).collect();
        names.sort_unstable();
        if let Some(pair) = names.windows(2).find(|w| w.first() == w.get(1)) {
            return Err(ChannelError {
                channel: pair.first().copied().unwrap_or_default().to_owned(),
                message: "two channels of that name".into(),
            });
        }
        *locked(&self.inner.channels) = channels
            .iter()
            .map(|c| ChannelStatus {
                name: c.name().to_owned(),
                stopped: None,
            })
            .collect();
        let mut running = tokio::task::JoinSet::new();
        for channel in channels {
            let hub = self.clone();
            let stop = self.inner.stop.child_token();
            running.spawn(async move {
                let name = channel.name().to_owned();
                let ended = channel.run(hub.port(&name), stop).await;
                hub.channel_ended(&name, ended);
            });
        }
        stop.await;
        self.shutdown().await;
        while let Some(ended) = running.join_next().await {
            if let Err(error) = ended
                && error.is_panic()
            {
                tracing::error!(%error, "a channel panicked");
            }
        }
        Ok(())
    }

    /// A channel's task ended: while the hub runs, that is a channel down.
    fn channel_ended(&self, name: &str, ended: Result<(), ChannelError>) {
        if self.stopping() && ended.is_ok() {
            return;
        }
        let error = ended.err().unwrap_or_else(|| ChannelError {
            channel: name.to_owned(),
            message: "it ended without saying why".to_owned(),
        });
        tracing::error!(
            channel = name,
            error = %error.message,
            "a channel stopped; the hub and its other channels go on"
        );
        if let Some(status) = locked(&self.inner.channels)
            .iter_mut()
            .find(|c| c.name == name)
        {
            status.stopped = Some(error.message.clone());
        }
        let _ = self.inner.stops.send(error);
    }

    /// The hosted channels and whether each runs.
    pub fn channels(&self) -> Vec<ChannelStatus> {
        locked(&self.inner.channels).clone()
    }

    /// Every channel that stops with an error from now on.
    pub fn channel_stops(&self) -> broadcast::Receiver<ChannelError> {
        self.inner.stops.subscribe()
    }

    /// Stops taking work, cancels running turns and waits (a few seconds at most) for
    /// them to end. Pending questions stay pending for the next start.
    pub async fn shutdown(&self) {
        self.inner.stopping.store(true, Ordering::SeqCst);
        self.inner.stop.cancel();
        for slot in self.inner.live.slots() {
            slot.cancel();
        }
        self.inner.tasks.close();
        if tokio::time::timeout(SHUTDOWN_GRACE, self.inner.tasks.wait())
            .await
            .is_err()
        {
            tracing::warn!("turns still running at shutdown were left behind");
        }
    }
}
