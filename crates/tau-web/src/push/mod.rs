//! Web Push: TauBar tells a person's devices that a question waits for them, even when no
//! page is open. A device subscribes through the page's service worker with the public
//! half of the key pair kept in the home (`GET /api/push/key`), and the page hands the
//! subscription to tau (`POST /api/push/subscriptions`; `DELETE` ends it). Nothing is
//! pushed to a person who subscribed no device: push is off until they turn it on.
//!
//! A subscription is the person's who made it; a question is pushed to the people it
//! waits for (its conversation's person, or the approvers who alone may answer it).
//!
//! Layout: `vapid.rs` the key pair and the token that names this server to the push
//! service, `subscription.rs` what a subscription must be, `deliver.rs` the push itself,
//! this file the API and the pump that reads the hub's questions.

mod deliver;
mod subscription;
#[cfg(test)]
mod texts;
mod vapid;

use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use http::StatusCode;
use serde::Deserialize;
use serde_json::json;
use tau_hub::{ChannelPort, SessionEvent};
use tau_protocol::{ApprovalId, ChannelEvent, PersonName};
use tau_state::{PushSubscription, PushSubscriptions};
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

pub use vapid::NotAKey;

use crate::App;
use crate::api::{body_error, error_response};
use crate::auth::Speaker;

/// The most devices one person may subscribe.
const MAX_DEVICES: usize = 16;

/// The `sub` claim of the VAPID token: how a push service may reach whoever runs tau.
/// tau has no address of its own to give.
const CONTACT: &str = "mailto:tau@localhost";

/// TauBar's pushes: the key they are signed with, the subscriptions, the client.
pub struct WebPush {
    key: vapid::VapidKey,
    contact: String,
    subscriptions: PushSubscriptions,
    client: reqwest::Client,
    pushed: Mutex<deliver::Pushed>,
}

/// Push cannot start.
#[derive(Debug, thiserror::Error)]
pub enum PushError {
    #[error(transparent)]
    Key(#[from] NotAKey),
    #[error("cannot make the push client: {0}")]
    Client(#[source] reqwest::Error),
}

impl WebPush {
    /// Pushes signed with the key in `key_hex` (the home's push key file) to the devices
    /// kept in `subscriptions`.
    pub fn new(key_hex: &str, subscriptions: PushSubscriptions) -> Result<Self, PushError> {
        let client = reqwest::Client::builder()
            // An endpoint is checked once; a redirect would lead elsewhere unchecked.
            .redirect(reqwest::redirect::Policy::none())
            .timeout(deliver::SEND_TIMEOUT)
            .build()
            .map_err(PushError::Client)?;
        Ok(Self {
            key: vapid::VapidKey::from_hex(key_hex)?,
            contact: CONTACT.to_owned(),
            subscriptions,
            client,
            pushed: Mutex::new(deliver::Pushed::default()),
        })
    }
}

/// Reads the hub's events until `stop`, and pushes each question that waits to the
/// devices of the people it waits for: a question follows its person, whichever channel
/// (TauBar, Telegram) asked it.
pub(crate) async fn pump(push: Arc<WebPush>, hub: Arc<dyn ChannelPort>, stop: CancellationToken) {
    let mut events = hub.events_of_every_channel();
    loop {
        let event = tokio::select! {
            () = stop.cancelled() => return,
            event = events.recv() => event,
        };
        match event {
            Ok(event) => {
                if let SessionEvent::Turn(ChannelEvent::ApprovalRequested(question)) = event.event {
                    let deadline = question.deadline.as_deref().and_then(|d| d.parse().ok());
                    let people = who_waits(hub.as_ref(), &question.approval_id);
                    push.question_waits(people, &question.approval_id, deadline);
                }
            }
            Err(RecvError::Lagged(missed)) => {
                tracing::warn!(missed, "push: fell behind the hub's events");
            }
            Err(RecvError::Closed) => return,
        }
    }
}

/// The people question `id` waits for: its conversation's person, or the approvers who
/// alone may answer it.
fn who_waits(hub: &dyn ChannelPort, id: &ApprovalId) -> Vec<String> {
    let row = match hub.question(id) {
        Ok(Some(row)) => row,
        Ok(None) => return Vec::new(),
        Err(error) => {
            tracing::warn!(%error, "push: cannot read the question");
            return Vec::new();
        }
    };
    let household = hub.household();
    let mut everyone: Vec<PersonName> = if household.is_named() {
        household.people().iter().map(|p| p.name.clone()).collect()
    } else {
        vec![household.first()]
    };
    // Someone added to the household since the hub started is not in its list, yet the
    // questions of their own conversations wait for them.
    if let Ok(person) = hub.person_of(&row.session)
        && !everyone.contains(&person)
    {
        everyone.push(person);
    }
    everyone
        .into_iter()
        .filter(|person| hub.waits_for(&row, person))
        .map(|person| person.as_str().to_owned())
        .collect()
}

fn push_of(app: &App) -> Result<&Arc<WebPush>, Box<Response>> {
    app.push
        .as_ref()
        .ok_or_else(|| Box::new(error_response(StatusCode::NOT_FOUND, "push is not set up")))
}

/// `GET /api/push/key`: the public key a device subscribes with.
pub(crate) async fn key(State(app): State<App>) -> Response {
    match push_of(&app) {
        Ok(push) => Json(json!({ "public_key": push.key.public() })).into_response(),
        Err(response) => *response,
    }
}

/// Runs a store call off the async workers.
async fn store<T: Send + 'static>(
    call: impl FnOnce() -> Result<T, tau_state::StateError> + Send + 'static,
) -> Result<T, Response> {
    match tokio::task::spawn_blocking(call).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(error)) => {
            tracing::error!(%error, "push: the store failed");
            Err(error_response(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the store failed",
            ))
        }
        Err(error) => {
            tracing::error!(%error, "push: the store failed");
            Err(error_response(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the store failed",
            ))
        }
    }
}

/// `POST /api/push/subscriptions`: keeps this device's subscription (the browser's
/// `PushSubscription.toJSON()`) for the person.
pub(crate) async fn subscribe(
    State(app): State<App>,
    Extension(speaker): Extension<Speaker>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let push = match push_of(&app) {
        Ok(push) => Arc::clone(push),
        Err(response) => return *response,
    };
    let body = match body {
        Ok(body) => body,
        Err(rejection) => return body_error(&rejection),
    };
    let Ok(given) = serde_json::from_slice::<subscription::Given>(&body) else {
        return error_response(
            StatusCode::BAD_REQUEST,
            "the body is {\"endpoint\": URL, \"keys\": {\"p256dh\": KEY, \"auth\": SECRET}}",
        );
    };
    if let Err(refused) =
        subscription::target(&given.endpoint, &given.keys.p256dh, &given.keys.auth)
    {
        return error_response(StatusCode::UNPROCESSABLE_ENTITY, &refused.to_string());
    }
    let kept = PushSubscription {
        endpoint: given.endpoint,
        person: speaker.0.as_str().to_owned(),
        p256dh: given.keys.p256dh,
        auth: given.keys.auth,
    };
    let subscriptions = push.subscriptions.clone();
    let result = store(move || {
        let devices = subscriptions.of_person(&kept.person)?;
        let known = devices.iter().any(|d| d.endpoint == kept.endpoint);
        if !known && devices.len() >= MAX_DEVICES {
            return Ok(false);
        }
        subscriptions.keep(&kept)?;
        Ok(true)
    })
    .await;
    match result {
        Ok(true) => StatusCode::NO_CONTENT.into_response(),
        Ok(false) => error_response(
            StatusCode::UNPROCESSABLE_ENTITY,
            &format!("at most {MAX_DEVICES} devices get pushes; turn push off on one first"),
        ),
        Err(response) => response,
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Unsubscribe {
    endpoint: String,
}

/// `DELETE /api/push/subscriptions` (`{"endpoint": URL}`): this device gets no more pushes.
pub(crate) async fn unsubscribe(
    State(app): State<App>,
    Extension(speaker): Extension<Speaker>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let push = match push_of(&app) {
        Ok(push) => Arc::clone(push),
        Err(response) => return *response,
    };
    let body = match body {
        Ok(body) => body,
        Err(rejection) => return body_error(&rejection),
    };
    let Ok(Unsubscribe { endpoint }) = serde_json::from_slice(&body) else {
        return error_response(StatusCode::BAD_REQUEST, "the body is {\"endpoint\": URL}");
    };
    let subscriptions = push.subscriptions.clone();
    match store(move || subscriptions.remove(speaker.0.as_str(), &endpoint)).await {
        Ok(true) => StatusCode::NO_CONTENT.into_response(),
        Ok(false) => error_response(StatusCode::NOT_FOUND, "no such subscription"),
        Err(response) => response,
    }
}
