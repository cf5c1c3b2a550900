//! A Bot API server that answers what a test scripts and records every request, and a hub
//! that keeps questions in memory: enough to drive the channel through its public API.

#![allow(dead_code)]

use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use jiff::Timestamp;
use serde_json::{Value, json};
use tau_core::EventBus;
use tau_core::approval::{answer_durable, requested_event};
use tau_protocol::{Allowance, ApprovalId, DecidedBy, GrantId, SessionId, Tier};
use tau_state::{Answered, ApprovalState, NewApproval, Revoked, StateDb};
use tau_telegram::{Hub, HubError, HubEvent, Question, RefusedPress, Reply, Store, TelegramConfig};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio::time::Instant;

pub const TOKEN: &str = "123456:TEST-token_x";
pub const OWNER: i64 = 4242;
pub const STRANGER: i64 = 666;

/// One request the bot made.
#[derive(Debug, Clone)]
pub struct Call {
    pub method: String,
    pub body: Value,
    pub at: Instant,
}

#[derive(Default)]
struct ServerState {
    calls: Vec<Call>,
    scripted: VecDeque<(u16, String)>,
    /// Answers scripted for other methods, by method.
    scripted_for: HashMap<String, VecDeque<(u16, String)>>,
    next_message_id: i64,
    bad_paths: Vec<String>,
}

/// A Bot API that answers getUpdates from a script (an empty list when the script is
/// done), sends with fresh message ids, and `true` for the rest.
#[derive(Clone)]
pub struct FakeBotApi {
    pub url: String,
    state: Arc<Mutex<ServerState>>,
}

impl FakeBotApi {
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new(ServerState {
            next_message_id: 100,
            ..ServerState::default()
        }));
        let shared = Arc::clone(&state);
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let state = Arc::clone(&shared);
                tokio::spawn(async move {
                    let service = service_fn(move |req| answer(Arc::clone(&state), req));
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Self { url, state }
    }

    /// The next getUpdates answers `updates`.
    pub fn push_updates(&self, updates: &[Value]) {
        self.push_raw(200, json!({"ok": true, "result": updates}).to_string());
    }

    /// The next getUpdates answers this status and body.
    pub fn push_raw(&self, status: u16, body: String) {
        self.state
            .lock()
            .unwrap()
            .scripted
            .push_back((status, body));
    }

    /// The next call of `method` answers this status and body.
    pub fn push_for(&self, method: &str, status: u16, body: String) {
        self.state
            .lock()
            .unwrap()
            .scripted_for
            .entry(method.to_owned())
            .or_default()
            .push_back((status, body));
    }

    pub fn calls(&self, method: &str) -> Vec<Call> {
        self.state
            .lock()
            .unwrap()
            .calls
            .iter()
            .filter(|c| c.method == method)
            .cloned()
            .collect()
    }

    pub fn all_calls(&self) -> Vec<Call> {
        self.state.lock().unwrap().calls.clone()
    }

    /// Requests to any path other than `/bot<TOKEN>/<method>`.
    pub fn bad_paths(&self) -> Vec<String> {
        self.state.lock().unwrap().bad_paths.clone()
    }

    /// Waits until `method` was called `count` times; returns those calls.
    pub async fn wait_calls(&self, method: &str, count: usize) -> Vec<Call> {
        until(&format!("{count} × {method}"), || {
            let calls = self.calls(method);
            (calls.len() >= count).then_some(calls)
        })
        .await
    }

    pub fn config(&self) -> TelegramConfig {
        let mut config = TelegramConfig::for_owners(vec![OWNER]);
        config.api_url = Some(self.url.clone());
        config.poll_timeout_seconds = 0;
        config.min_poll_interval_ms = 20;
        config.edit_interval_ms = 10;
        config
    }
}

async fn answer(
    state: Arc<Mutex<ServerState>>,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let path = req.uri().path().to_owned();
    let bytes = req
        .into_body()
        .collect()
        .await
        .map(http_body_util::Collected::to_bytes)
        .unwrap_or_default();
    let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let prefix = format!("/bot{TOKEN}/");
    let mut state = state.lock().unwrap();
    let Some(method) = path.strip_prefix(&prefix).map(str::to_owned) else {
        state.bad_paths.push(path);
        return Ok(reply(
            404,
            r#"{"ok":false,"error_code":404,"description":"Not Found"}"#,
        ));
    };
    state.calls.push(Call {
        method: method.clone(),
        body,
        at: Instant::now(),
    });
    let scripted = state
        .scripted_for
        .get_mut(&method)
        .and_then(VecDeque::pop_front);
    let (status, text) = match method.as_str() {
        _ if scripted.is_some() => scripted.unwrap_or_default(),
        "getUpdates" => state
            .scripted
            .pop_front()
            .unwrap_or((200, r#"{"ok":true,"result":[]}"#.to_owned())),
        "sendMessage" => {
            state.next_message_id += 1;
            let id = state.next_message_id;
            (
                200,
                json!({"ok": true, "result": {"message_id": id}}).to_string(),
            )
        }
        _ => (200, r#"{"ok":true,"result":true}"#.to_owned()),
    };
    Ok(reply(status, &text))
}

fn reply(status: u16, body: &str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body.to_owned())));
    *response.status_mut() = hyper::StatusCode::from_u16(status).unwrap();
    response
}

/// Polls `check` until it gives a value; fails the test after 10 s.
pub async fn until<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(value) = check() {
            return value;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A message update.
pub fn message(update_id: i64, chat: i64, from: i64, text: &str) -> Value {
    json!({"update_id": update_id, "message": {"message_id": update_id, "date": 1_700_000_000,
        "chat": {"id": chat, "type": "private"}, "from": {"id": from, "is_bot": false, "first_name": "P"},
        "text": text}})
}

/// A press on a button under message `message_id` in `chat`.
pub fn press(update_id: i64, chat: i64, from: i64, message_id: i64, data: &str) -> Value {
    json!({"update_id": update_id, "callback_query": {"id": format!("cb{update_id}"),
        "from": {"id": from, "is_bot": false, "first_name": "P"}, "chat_instance": "1",
        "message": {"message_id": message_id, "date": 1_700_000_000, "chat": {"id": chat, "type": "private"}},
        "data": data}})
}

/// The hub's side: questions in a `state.db` of its own, answers through the same
/// compare-and-set and closing event as the real hub.
pub struct FakeHub {
    /// The folder of its `state.db`, kept while any hub of it lives.
    dir: Arc<tempfile::TempDir>,
    pub approvals: StateDb,
    events: mpsc::Sender<HubEvent>,
    bus: EventBus,
    pub sent: Mutex<Vec<(String, String)>>,
    /// What was passed on (forwards, quotes), with its source.
    pub passed_on: Mutex<Vec<(String, String, tau_protocol::Source)>>,
    pub refused: Mutex<Vec<RefusedPress>>,
    pub answers: Mutex<Vec<(String, ApprovalState, DecidedBy)>>,
    sessions: Mutex<HashMap<String, String>>,
    next: Mutex<u32>,
}

impl FakeHub {
    pub fn new() -> (Arc<Self>, mpsc::Receiver<HubEvent>) {
        Self::on(Arc::new(tempfile::tempdir().unwrap()))
    }

    /// The hub after a restart: the same stored questions and conversations, nothing in
    /// memory besides.
    pub fn restarted(&self) -> (Arc<Self>, mpsc::Receiver<HubEvent>) {
        let (hub, rx) = Self::on(Arc::clone(&self.dir));
        *hub.sessions.lock().unwrap() = self.sessions.lock().unwrap().clone();
        *hub.next.lock().unwrap() = *self.next.lock().unwrap();
        (hub, rx)
    }

    /// A hub process on the `state.db` in `dir`, with a connection of its own.
    fn on(dir: Arc<tempfile::TempDir>) -> (Arc<Self>, mpsc::Receiver<HubEvent>) {
        let (events, rx) = mpsc::channel(256);
        let approvals = StateDb::open(&dir.path().join("state.db")).unwrap();
        let hub = Arc::new(Self {
            dir,
            approvals,
            events,
            bus: EventBus::new(),
            sent: Mutex::default(),
            passed_on: Mutex::default(),
            refused: Mutex::default(),
            answers: Mutex::default(),
            sessions: Mutex::default(),
            next: Mutex::new(0),
        });
        (hub, rx)
    }

    /// The channel's memory, in the same `state.db` as the hub's, as `tau serve` has it.
    pub fn store(&self) -> Store {
        Store::new(self.approvals.telegram_memory())
    }

    pub fn session_of(&self, key: &str) -> String {
        self.sessions
            .lock()
            .unwrap()
            .entry(key.to_owned())
            .or_insert_with(|| format!("s-{key}-0"))
            .clone()
    }

    fn key_of(&self, session: &str) -> Option<String> {
        self.sessions
            .lock()
            .unwrap()
            .iter()
            .find(|(_, s)| *s == session)
            .map(|(k, _)| k.clone())
    }

    pub async fn emit(&self, key: &str, event: tau_protocol::ChannelEvent) {
        self.events
            .send(HubEvent {
                conversation: key.to_owned(),
                event: event.into(),
            })
            .await
            .unwrap();
    }

    /// Stores a tier-2 question for conversation `key` and announces it.
    pub async fn ask(&self, key: &str, arguments: Value) -> String {
        self.ask_about(
            key,
            "run_command",
            "runs a shell command in the workspace — code the agent wrote",
            arguments,
            tau_protocol::CallCard::default(),
        )
        .await
    }

    /// Stores a question about `tool` with tau's `card` in the conversation of `key`.
    pub async fn ask_about(
        &self,
        key: &str,
        tool: &str,
        effect: &str,
        arguments: Value,
        card: tau_protocol::CallCard,
    ) -> String {
        let id = {
            let mut next = self.next.lock().unwrap();
            *next += 1;
            format!("ap_{:032x}", *next)
        };
        let now = Timestamp::now();
        let row = NewApproval {
            id: ApprovalId::parse(&id).unwrap(),
            session: SessionId::parse(&self.session_of(key)).unwrap(),
            call_id: format!("t{id}"),
            tool: tool.into(),
            tier: Tier::Physical,
            effect: effect.into(),
            arguments,
            channel: "telegram".into(),
            created_at: now,
            deadline: now + jiff::SignedDuration::from_mins(30),
            card,
        }
        .into_row();
        self.approvals.approvals().create_approval(&row).unwrap();
        self.emit(key, requested_event(&row)).await;
        id
    }

    /// The hub's compare-and-set and the closing event to the conversation.
    pub async fn decide(
        &self,
        approval_id: &str,
        to: ApprovalState,
        by: &DecidedBy,
    ) -> Result<Answered, HubError> {
        self.decide_with(approval_id, to, by, None).await
    }

    /// [`FakeHub::decide`] with what was pressed for a second step.
    pub async fn decide_with(
        &self,
        approval_id: &str,
        to: ApprovalState,
        by: &DecidedBy,
        confirmation: Option<&str>,
    ) -> Result<Answered, HubError> {
        let Ok(id) = ApprovalId::parse(approval_id) else {
            return Ok(Answered::NotFound);
        };
        let (answered, event) = answer_durable(
            &self.approvals.approvals(),
            &self.bus,
            &id,
            to,
            by,
            confirmation,
        )
        .map_err(|e| HubError::Hub(e.into()))?;
        if let (Some(event), Answered::Decided(row)) = (event, &answered)
            && let Some(key) = self.key_of(row.session.as_str())
        {
            let _ = self
                .events
                .send(HubEvent {
                    conversation: key,
                    event: event.into(),
                })
                .await;
        }
        Ok(answered)
    }

    /// Changes a stored row behind the hub's back, as someone with the database could.
    pub fn tamper(&self, id: &str, set: &str) {
        tau_test_support::tamper_approval(&self.dir.path().join("state.db"), id, set);
    }

    pub fn state(&self, id: &str) -> ApprovalState {
        self.row(id).state
    }

    pub fn row(&self, id: &str) -> tau_state::ApprovalRow {
        self.approvals
            .approvals()
            .approval(&ApprovalId::parse(id).unwrap())
            .unwrap()
            .unwrap()
    }
}

#[async_trait]
impl Hub for FakeHub {
    async fn send(&self, key: &str, text: &str) -> Result<(), HubError> {
        self.sent
            .lock()
            .unwrap()
            .push((key.to_owned(), text.to_owned()));
        Ok(())
    }

    async fn send_passed_on(
        &self,
        key: &str,
        text: &str,
        source: tau_protocol::Source,
    ) -> Result<(), HubError> {
        self.passed_on
            .lock()
            .unwrap()
            .push((key.to_owned(), text.to_owned(), source));
        Ok(())
    }

    async fn cancel(&self, _key: &str) -> Result<bool, HubError> {
        Ok(false)
    }

    async fn question(&self, approval_id: &str) -> Result<Option<Question>, HubError> {
        let Ok(id) = ApprovalId::parse(approval_id) else {
            return Ok(None);
        };
        let row = self
            .approvals
            .approvals()
            .approval(&id)
            .map_err(|e| HubError::Hub(e.into()))?;
        Ok(row.map(|row| Question {
            conversation: self
                .key_of(row.session.as_str())
                .filter(|_| row.channel == "telegram"),
            row,
        }))
    }

    async fn answer(
        &self,
        approval_id: &str,
        reply: Reply,
        user: &str,
    ) -> Result<Answered, HubError> {
        let (to, confirmation) = match reply {
            Reply::Approve => (ApprovalState::Approved, None),
            Reply::Confirm(number) => (ApprovalState::Approved, Some(number)),
            // This hub's questions offer no grant, as a hub's must refuse then.
            Reply::ApproveAlways(_) => {
                return Err(HubError::Hub(tau_hub::HubError::Grant(
                    tau_hub::GrantRefused::NotOffered,
                )));
            }
            Reply::Reject => (ApprovalState::Rejected, None),
        };
        let by = DecidedBy::Person {
            channel: "telegram".into(),
            user: Some(user.to_owned()),
            person: None,
        };
        self.answers
            .lock()
            .unwrap()
            .push((approval_id.to_owned(), to, by.clone()));
        self.decide_with(approval_id, to, &by, confirmation.as_deref())
            .await
    }

    async fn pending(&self) -> Result<Vec<Question>, HubError> {
        let rows = self
            .approvals
            .approvals()
            .approvals(Some(ApprovalState::Pending))
            .map_err(|e| HubError::Hub(e.into()))?;
        Ok(rows
            .into_iter()
            .filter(|r| r.channel == "telegram")
            .map(|row| Question {
                conversation: self.key_of(row.session.as_str()),
                row,
            })
            .collect())
    }

    async fn allowances(&self, user: &str) -> Result<Vec<Allowance>, HubError> {
        let grants = self
            .approvals
            .grants()
            .grants(Some(Timestamp::now()))
            .map_err(|e| HubError::Hub(e.into()))?;
        Ok(grants
            .into_iter()
            .filter(|g| g.channel == "telegram" && g.person.as_deref() == Some(user))
            .map(|g| Allowance::Grant(Box::new(g)))
            .collect())
    }

    async fn revoke(&self, grant: &GrantId, user: &str) -> Result<Revoked, HubError> {
        match self.approvals.grants().grant(grant) {
            Ok(Some(g)) if g.channel == "telegram" && g.person.as_deref() == Some(user) => {}
            Ok(_) => return Ok(Revoked::NotFound),
            Err(e) => return Err(HubError::Hub(e.into())),
        }
        let by = DecidedBy::Person {
            channel: "telegram".into(),
            user: Some(user.to_owned()),
            person: None,
        };
        self.approvals
            .grants()
            .revoke_grant(grant, &by, Timestamp::now())
            .map_err(|e| HubError::Hub(e.into()))
    }

    async fn conversations(
        &self,
        chat: i64,
        search: Option<&str>,
    ) -> Result<Vec<tau_telegram::ChatConversation>, HubError> {
        let sessions = self.sessions.lock().unwrap().clone();
        let found = match search {
            Some(text) => Some(
                self.approvals
                    .sessions()
                    .search_sessions(text)
                    .map_err(|e| HubError::Hub(e.into()))?,
            ),
            None => None,
        };
        let mut listed = Vec::new();
        for (key, session) in sessions {
            if tau_telegram::chat_of(&key) != Some(chat) {
                continue;
            }
            let id = SessionId::parse(&session).unwrap();
            if found.as_ref().is_some_and(|f| !f.contains(&id)) {
                continue;
            }
            listed.push(tau_telegram::ChatConversation {
                title: self
                    .approvals
                    .sessions()
                    .session_title(&id)
                    .unwrap_or_default(),
                key,
                message_count: 0,
                updated_at: 0,
            });
        }
        listed.sort_by(|a, b| b.key.cmp(&a.key));
        Ok(listed)
    }

    async fn rename(&self, key: &str, title: Option<&str>) -> Result<(), HubError> {
        let session = self.sessions.lock().unwrap().get(key).cloned();
        let Some(session) = session else {
            return Err(HubError::NothingWritten);
        };
        let id = SessionId::parse(&session).unwrap();
        match self.approvals.sessions().rename_session(&id, title) {
            Ok(true) => Ok(()),
            Ok(false) => Err(HubError::NothingWritten),
            Err(error) => Err(HubError::Hub(error.into())),
        }
    }

    async fn delete(&self, key: &str) -> Result<bool, HubError> {
        Ok(self.sessions.lock().unwrap().remove(key).is_some())
    }

    async fn waiting(&self) -> Result<Vec<Question>, HubError> {
        let rows = self
            .approvals
            .approvals()
            .approvals(Some(ApprovalState::Pending))
            .map_err(|e| HubError::Hub(e.into()))?;
        Ok(rows
            .into_iter()
            .map(|row| Question {
                conversation: (row.channel == "telegram")
                    .then(|| self.key_of(row.session.as_str()))
                    .flatten(),
                row,
            })
            .collect())
    }

    fn refused_press(&self, press: &RefusedPress) {
        self.refused.lock().unwrap().push(press.clone());
    }
}

/// A message's buttons as (label, callback data), row by row.
pub fn buttons(call: &Call) -> Vec<(String, String)> {
    call.body["reply_markup"]["inline_keyboard"]
        .as_array()
        .map(|rows| {
            rows.iter()
                .flat_map(|row| row.as_array().cloned().unwrap_or_default())
                .map(|b| {
                    (
                        b["text"].as_str().unwrap_or_default().to_owned(),
                        b["callback_data"].as_str().unwrap_or_default().to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The texts of the first `count` answers to presses (the toasts), once there are that many.
pub async fn toasts(api: &FakeBotApi, count: usize) -> Vec<Value> {
    api.wait_calls("answerCallbackQuery", count)
        .await
        .iter()
        .map(|c| c.body["text"].clone())
        .collect()
}

/// The channel on `hub` with `config`, in English and UTC, running until aborted.
pub fn run_channel(
    config: &TelegramConfig,
    hub: &Arc<FakeHub>,
    events: mpsc::Receiver<HubEvent>,
) -> tokio::task::JoinHandle<tau_telegram::PollError> {
    let channel = tau_telegram::TelegramChannel::new(
        config,
        TOKEN,
        Arc::clone(hub) as Arc<dyn Hub>,
        hub.store(),
        tau_core::Language::En,
        jiff::tz::TimeZone::UTC,
    )
    .unwrap();
    tokio::spawn(channel.run(events))
}
