//! tau-web: TauBar, tau's web page, and the JSON API and event stream it uses.
//!
//! Owns the `[web]` config, the HTTP server (axum on hyper), who may use it (a bearer
//! token, or the HttpOnly cookie the page trades it for; `Host` checked on every request,
//! `Origin` on every change), the API handlers, the page's assets (embedded) and the
//! `display=true` view that runs every string through tau's display function. Talks to
//! the hub only through the `ChannelPort` `tau-hub` hands it, bound to `web`; knows no model, tool or other channel.
//!
//! Layout: `config.rs` `[web]`, `auth.rs` the checks and headers every response gets,
//! `api.rs` the JSON API, `answer.rs` a person's answer (a yes names the card it
//! approves), `events.rs` the event stream, `shown.rs` the display view,
//! `routines.rs` webhooks and the routine list, `grants.rs` grants listed and revoked,
//! `decisions.rs` the history of decisions (read by the host), `server.rs` the accept
//! loop and its deadlines, `peers.rs` connections by peer and their caps, `assets/` the page.

mod answer;
mod api;
mod auth;
mod config;
mod decisions;
mod events;
mod grants;
mod peers;
mod routines;
mod server;
mod sessions;
mod shown;

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
pub use server::raise_open_files_limit;

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

#[derive(Clone)]
pub(crate) struct App {
    /// The hub, as this channel may use it.
    hub: Arc<dyn ChannelPort>,
    auth: Arc<auth::Auth>,
    stop: CancellationToken,
    routines: Option<Arc<dyn Routines>>,
    decisions: Option<Arc<dyn Decisions>>,
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
        };
        server::serve(listener, router(app), stop).await;
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
        .route("/api/login", post(api::login))
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
