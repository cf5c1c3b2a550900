//! tau-web: TauBar, tau's web page, and the JSON API and event stream it uses.
//!
//! Owns the `[web]` config, the HTTP server (axum on hyper), who may use it (a bearer
//! token, the HttpOnly cookie the page trades it for, or the session a passkey sign-in
//! gives; `Host` checked on every request, `Origin` on every change), the API handlers, the page's assets (embedded) and the
//! `display=true` view that runs every string through tau's display function. Talks to
//! the hub only through the `ChannelPort` `tau-hub` hands it, bound to `web`; knows no model, tool or other channel.
//!
//! Layout: `config.rs` `[web]`, `auth.rs` the checks and headers every response gets,
//! `api.rs` the JSON API, `answer.rs` a person's answer (a yes names the card it
//! approves), `events.rs` the event stream, `shown.rs` the display view,
//! `routines.rs` webhooks and the routine list, `grants.rs` grants listed and revoked,
//! `decisions.rs` the history of decisions (read by the host), `server.rs` the accept
//! loop and its deadlines, `peers.rs` connections by peer and their caps, `push/` Web Push
//! (subscriptions, and a push to a person's devices when a question waits for them),
//! `assets/` the page, its service worker, manifest and icons.
//! `decisions.rs` the history of decisions (read by the host), `passkey.rs` TauBar as a
//! WebAuthn relying party (enrollment, sign-in), `step_up.rs` the passkey a lock-class
//! yes takes, its challenge bound to one question,
//! `signin.rs` their routes and the session cookie, `server.rs` the accept
//! loop and its deadlines, `peers.rs` connections by peer and their caps, `assets/` the page.

mod answer;
mod api;
mod auth;
mod config;
mod decisions;
mod events;
mod grants;
mod passkey;
mod peers;
mod push;
mod routines;
mod server;
mod sessions;
mod shown;
mod signin;
mod step_up;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, patch, post};
use http::{HeaderValue, StatusCode, header};
use tau_hub::{Channel, ChannelError, ChannelPort, RoutineOrigin, Routines};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tower_http::timeout::TimeoutLayer;

pub use config::{REMOTE_RISK, WebConfig, WebConfigError};
pub use decisions::{Decisions, DecisionsError};
pub use passkey::PasskeyError;
pub use push::{NotAKey, PushError, WebPush};
pub use server::raise_open_files_limit;
pub use signin::{ENROLL_HOURS, IMPLICIT_PERSON, enroll_secret};

/// The channel's name: what approval rows and `decided_by` say.
pub const WEB: &str = "web";

/// The largest request body, in bytes.
const MAX_BODY_BYTES: usize = 64 * 1024;
/// A request whose answer is not under way by then (a body sent slowly, or stalled) is
/// answered 408 and its connection closed. An event stream is under way at once.
const REQUEST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

const INDEX_HTML: &str = include_str!("../assets/index.html");
const APP_JS: &str = include_str!("../assets/app.js");
const CARDS_JS: &str = include_str!("../assets/cards.js");
const PANELS_JS: &str = include_str!("../assets/panels.js");
const APP_CSS: &str = include_str!("../assets/app.css");
const PUSH_JS: &str = include_str!("../assets/push.js");
const SERVICE_WORKER_JS: &str = include_str!("../assets/sw.js");
const MANIFEST: &str = include_str!("../assets/manifest.webmanifest");
const ICON_SVG: &str = include_str!("../assets/icon.svg");
const ICON_MASKABLE_SVG: &str = include_str!("../assets/icon-maskable.svg");

#[derive(Clone)]
pub(crate) struct App {
    /// The hub, as this channel may use it.
    hub: Arc<dyn ChannelPort>,
    auth: Arc<auth::Auth>,
    stop: CancellationToken,
    routines: Option<Arc<dyn Routines>>,
    decisions: Option<Arc<dyn Decisions>>,
    push: Option<Arc<WebPush>>,
    /// Passkeys: enrollment, sign-in and the step-up of lock-class questions.
    passkeys: Option<signin::PasskeySite>,
}

/// TauBar could not start.
#[derive(Debug, thiserror::Error)]
pub enum WebError {
    #[error(transparent)]
    Config(#[from] WebConfigError),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("an empty token protects nothing; refusing to serve")]
    EmptyToken,
}

/// The web channel, bound and ready to be run by the hub.
pub struct WebChannel {
    listener: Mutex<Option<TcpListener>>,
    bound: SocketAddr,
    token: String,
    hosts: Vec<String>,
    routines: Option<Arc<dyn Routines>>,
    decisions: Option<Arc<dyn Decisions>>,
    push: Option<Arc<WebPush>>,
    /// `[web] hosts` as configured: the first name among them is the passkeys' relying party.
    configured_hosts: Vec<String>,
    passkeys: Option<tau_state::Passkeys>,
    /// Tools whose yes takes a passkey (`[tools.step_up]`), besides lock-class devices.
    step_up_tools: Vec<String>,
    people: Option<tau_state::People>,
}

impl WebChannel {
    /// Checks `config` and binds its address, so a mistake shows before anything starts.
    pub async fn bind(config: &WebConfig, token: &str) -> Result<Self, WebError> {
        config.validate()?;
        if token.trim().is_empty() {
            return Err(WebError::EmptyToken);
        }
        let listener = server::listen(config.listen).map_err(|source| WebError::Bind {
            addr: config.listen,
            source,
        })?;
        let bound = listener.local_addr().map_err(|source| WebError::Bind {
            addr: config.listen,
            source,
        })?;
        Ok(Self {
            listener: Mutex::new(Some(listener)),
            bound,
            hosts: config.allowed_hosts(bound),
            token: token.to_owned(),
            routines: None,
            decisions: None,
            push: None,
            configured_hosts: config.hosts.clone(),
            passkeys: None,
            step_up_tools: Vec::new(),
            people: None,
        })
    }

    /// Serves routines' webhooks (`POST /hooks/{name}`) and their list for the page.
    #[must_use]
    pub fn with_routines(mut self, routines: Arc<dyn Routines>) -> Self {
        self.routines = Some(routines);
        self
    }

    /// Serves the history of decisions (`GET /api/decisions`) from `decisions`.
    #[must_use]
    pub fn with_decisions(mut self, decisions: Arc<dyn Decisions>) -> Self {
        self.decisions = Some(decisions);
        self
    }

    /// Serves Web Push (`/api/push/...`) and pushes each question that waits to the
    /// devices its person subscribed.
    #[must_use]
    pub fn with_push(mut self, push: WebPush) -> Self {
        self.push = Some(Arc::new(push));
        self
    }

    /// Keeps passkeys in `store`: TauBar then enrolls them (`/enroll`), signs people in
    /// with them, and asks for one to approve a lock-class question, or one of
    /// `step_up_tools`, once anyone has one.
    #[must_use]
    pub fn with_passkeys(mut self, store: tau_state::Passkeys, step_up_tools: Vec<String>) -> Self {
        self.passkeys = Some(store);
        self.step_up_tools = step_up_tools;
        self
    }

    /// Takes people's own tokens (`tau people token NAME`), each as its person's.
    #[must_use]
    pub fn with_people(mut self, people: tau_state::People) -> Self {
        self.people = Some(people);
        self
    }

    /// Where it listens (the port is known even when `listen` asked for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.bound
    }

    /// The address to open in a browser.
    pub fn url(&self) -> String {
        format!("http://{}/", self.bound)
    }

    /// The address passkeys work at: by the relying party's name (the first name in
    /// `[web] hosts`, else `localhost`), never by an IP address.
    pub fn passkey_url(&self) -> String {
        let name = self
            .configured_hosts
            .iter()
            .map(|host| host.split(':').next().unwrap_or(host))
            .find(|name| !name.is_empty() && name.parse::<std::net::IpAddr>().is_err())
            .unwrap_or("localhost");
        format!("http://{name}:{}/", self.bound.port())
    }
}

#[async_trait]
impl Channel for WebChannel {
    fn name(&self) -> &str {
        WEB
    }

    async fn run(
        self: Arc<Self>,
        hub: Arc<dyn ChannelPort>,
        stop: CancellationToken,
    ) -> Result<(), ChannelError> {
        let listener = self
            .listener
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
            .ok_or_else(|| ChannelError {
                channel: WEB.into(),
                message: "already running".into(),
            })?;
        let app = App {
            hub,
            auth: Arc::new(
                auth::Auth::new(&self.token, self.hosts.clone()).with_people(self.people.clone()),
            ),
            stop: stop.clone(),
            routines: self.routines.clone(),
            decisions: self.decisions.clone(),
            push: self.push.clone(),
            passkeys: self.passkeys.clone().and_then(|store| {
                signin::PasskeySite::new(
                    store,
                    &self.hosts,
                    &self.configured_hosts,
                    self.step_up_tools.clone(),
                )
            }),
        };
        let pump = self
            .push
            .clone()
            .map(|push| tokio::spawn(push::pump(push, Arc::clone(&app.hub), stop.clone())));
        server::serve(listener, router(app), stop).await;
        if let Some(pump) = pump {
            pump.abort();
        }
        Ok(())
    }
}

impl App {
    /// Whether `session` is `speaker`'s conversation: another person's is not found here.
    pub(crate) fn owns(&self, speaker: &auth::Speaker, session: &tau_protocol::SessionId) -> bool {
        self.hub
            .person_of(session)
            .is_ok_and(|person| person == speaker.0)
    }

    /// [`Self::owns`] for a request about one conversation: another person's is not found
    /// (404); a store that cannot say whose it is answers as the store does (503 while a
    /// shared store is away), never as "not found".
    pub(crate) fn owned(
        &self,
        speaker: &auth::Speaker,
        session: &tau_protocol::SessionId,
    ) -> Result<(), Box<axum::response::Response>> {
        match self.hub.person_of(session) {
            Ok(person) if person == speaker.0 => Ok(()),
            Ok(_) => Err(Box::new(api::error_response(
                http::StatusCode::NOT_FOUND,
                "no such session",
            ))),
            Err(error) => Err(Box::new(api::hub_error(&error))),
        }
    }

    /// The routine whose conversation has `key`, when it is a routine's.
    pub(crate) fn origin_of_key(&self, key: &str) -> Option<RoutineOrigin> {
        self.routines.as_ref()?.origin(key)
    }

    /// The routine whose conversation `session` is, when it is a routine's.
    pub(crate) fn origin_of_session(
        &self,
        session: &tau_protocol::SessionId,
    ) -> Option<RoutineOrigin> {
        let conversation = self.hub.conversation_of(session).ok().flatten()?;
        self.origin_of_key(&conversation.key)
    }
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    let mut response = body.into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

fn router(app: App) -> Router {
    Router::new()
        .route(
            "/",
            get(|| async { asset("text/html; charset=utf-8", INDEX_HTML) }),
        )
        .route(
            "/app.js",
            get(|| async { asset("text/javascript; charset=utf-8", APP_JS) }),
        )
        .route(
            "/cards.js",
            get(|| async { asset("text/javascript; charset=utf-8", CARDS_JS) }),
        )
        .route(
            "/panels.js",
            get(|| async { asset("text/javascript; charset=utf-8", PANELS_JS) }),
        )
        .route(
            "/app.css",
            get(|| async { asset("text/css; charset=utf-8", APP_CSS) }),
        )
        .route(
            "/push.js",
            get(|| async { asset("text/javascript; charset=utf-8", PUSH_JS) }),
        )
        .route(
            "/sw.js",
            get(|| async { asset("text/javascript; charset=utf-8", SERVICE_WORKER_JS) }),
        )
        .route(
            "/manifest.webmanifest",
            get(|| async { asset("application/manifest+json", MANIFEST) }),
        )
        .route(
            "/icon.svg",
            get(|| async { asset("image/svg+xml", ICON_SVG) }),
        )
        .route(
            "/icon-maskable.svg",
            get(|| async { asset("image/svg+xml", ICON_MASKABLE_SVG) }),
        )
        .route("/api/push/key", get(push::key))
        .route(
            "/api/push/subscriptions",
            post(push::subscribe).delete(push::unsubscribe),
        )
        .route("/api/login", post(api::login))
        .route(
            "/enroll",
            get(|| async { asset("text/html; charset=utf-8", signin::ENROLL_HTML) }),
        )
        .route(
            "/passkey.js",
            get(|| async { asset("text/javascript; charset=utf-8", signin::PASSKEY_JS) }),
        )
        .route("/passkeys/enroll/start", post(signin::enroll_start))
        .route("/passkeys/enroll/finish", post(signin::enroll_finish))
        .route("/passkeys/signin/start", post(signin::sign_in_start))
        .route("/passkeys/signin/finish", post(signin::sign_in_finish))
        .route("/api/passkeys", get(signin::list))
        .route("/api/passkeys/{id}", delete(signin::remove))
        .route("/api/approvals/{id}/step_up", post(signin::step_up))
        .route(
            "/api/sessions",
            get(api::sessions).post(api::create_session),
        )
        .route(
            "/api/sessions/{id}",
            patch(sessions::rename).delete(sessions::delete),
        )
        .route(
            "/api/sessions/{id}/messages",
            get(api::messages).post(api::send),
        )
        .route("/api/sessions/{id}/events", get(events::stream))
        .route("/api/approvals", get(api::approvals))
        .route("/api/channels", get(api::channels))
        .route("/api/routines", get(routines::list))
        .route("/hooks/{name}", post(routines::hook))
        .route("/api/approvals/{id}", post(answer::answer))
        .route("/api/grants", get(grants::list))
        .route("/api/grants/{id}", delete(grants::revoke))
        .route("/api/decisions", get(decisions::list))
        .fallback(|| async { api::error(StatusCode::NOT_FOUND, "no such page") })
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(axum::middleware::from_fn_with_state(
            app.clone(),
            auth::guard,
        ))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            REQUEST_TIMEOUT,
        ))
        .with_state(app)
}
