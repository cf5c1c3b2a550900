//! `GET /api/sessions/{id}/events`: a session's events as Server-Sent Events. Each turn
//! event is a `message` whose data is the `ChannelEvent` JSON; a person's message is a
//! `prompt` event (`{"text": ...}`); a reader that fell behind gets `lagged` (and should
//! read the messages again). The stream ends when the hub stops; a reader that goes away
//! costs nothing.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Extension, Path, Query, State};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use serde_json::{Value, json};
use tau_hub::SessionEvent;
use tau_protocol::SessionId;
use tokio::sync::broadcast::error::RecvError;

use crate::App;
use crate::api::{View, error};
use crate::shown::shown;

pub(crate) async fn stream(
    State(app): State<App>,
    Extension(speaker): Extension<crate::auth::Speaker>,
    Path(id): Path<String>,
    query: Result<Query<View>, QueryRejection>,
) -> Response {
    let Ok(Query(view)) = query else {
        return error(
            StatusCode::BAD_REQUEST,
            "the only parameter is display=true",
        )
        .into_response();
    };
    let Ok(session) = SessionId::parse(&id) else {
        return error(StatusCode::NOT_FOUND, "no such session").into_response();
    };
    if let Err(refused) = app.owned(&speaker, &session) {
        return *refused;
    }
    let Ok(receiver) = app.hub.subscribe(&session) else {
        return error(StatusCode::NOT_FOUND, "no such session").into_response();
    };
    let stop = app.stop.clone();
    let display = view.display;
    let events =
        futures::stream::unfold((receiver, stop), move |(mut receiver, stop)| async move {
            let next = tokio::select! {
                () = stop.cancelled() => return None,
                next = receiver.recv() => next,
            };
            let event = match next {
                Ok(event) => sse_event(event, display),
                Err(RecvError::Lagged(missed)) => {
                    Event::default().event("lagged").data(missed.to_string())
                }
                Err(RecvError::Closed) => return None,
            };
            Some((Ok::<_, Infallible>(event), (receiver, stop)))
        });
    Sse::new(events)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response()
}

fn sse_event(event: SessionEvent, display: bool) -> Event {
    let (name, value) = match event {
        SessionEvent::Prompt { text } => (Some("prompt"), json!({ "text": text })),
        SessionEvent::Turn(event) => (None, serde_json::to_value(event).unwrap_or(Value::Null)),
    };
    let value = if display { shown(value) } else { value };
    // serde_json writes no raw line breaks, so the data is one SSE line.
    let event = Event::default().data(value.to_string());
    match name {
        Some(name) => event.event(name),
        None => event,
    }
}
