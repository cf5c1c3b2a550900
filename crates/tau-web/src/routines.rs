//! Routines on the web listener: `POST /hooks/{name}` (a routine's webhook, checked by the
//! routine's own secret, not the page's token) and `GET /api/routines` (the list the page
//! shows). What they answer comes from the host through [`Routines`]; this crate knows no
//! routine engine. A webhook's secret is checked before a byte of its body is read, so a
//! sender without it costs one request head, never a body's wait.

use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, Request, State};
use axum::response::{IntoResponse, Response};
use http::{StatusCode, header};
use serde_json::json;

use crate::api::{View, error};
use crate::peers::Connection;
use crate::shown::shown;
use crate::{App, MAX_BODY_BYTES};

fn reply(status: u16, text: &str) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let key = if status.is_success() {
        "status"
    } else {
        "error"
    };
    (status, Json(json!({ key: text }))).into_response()
}

/// `POST /hooks/{name}`: 1. the routine and its secret, from the head alone; 2. the body,
/// up to the limit and within the request's deadline; 3. the routine's answer.
pub(crate) async fn hook(
    State(app): State<App>,
    Path(name): Path<String>,
    request: Request,
) -> Response {
    let Some(routines) = &app.routines else {
        return error(StatusCode::NOT_FOUND, "no such webhook").into_response();
    };
    let connection = request.extensions().get::<Arc<Connection>>().cloned();
    let sender = connection
        .as_ref()
        .map_or_else(|| "unknown".to_owned(), |c| c.peer.ip().to_string());
    let authorization = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    let deliver = match routines.webhook(&name, authorization, &sender) {
        Ok(deliver) => deliver,
        Err((status, text)) => return reply(status, &text),
    };
    if let Some(connection) = &connection {
        connection.prove();
    }
    let too_large =
        || error(StatusCode::PAYLOAD_TOO_LARGE, "the body is too large").into_response();
    let announced = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if announced.is_some_and(|length| length > MAX_BODY_BYTES as u64) {
        return too_large();
    }
    let body = match axum::body::to_bytes(request.into_body(), MAX_BODY_BYTES).await {
        Ok(body) => body,
        Err(failure) => {
            let over = std::error::Error::source(&failure)
                .is_some_and(<dyn std::error::Error>::is::<http_body_util::LengthLimitError>);
            if over {
                return too_large();
            }
            return error(StatusCode::BAD_REQUEST, "the body could not be read").into_response();
        }
    };
    let (status, text) = deliver(&body);
    reply(status, &text)
}

/// `GET /api/routines`: every routine, its trigger, action and last run.
pub(crate) async fn list(
    State(app): State<App>,
    query: Result<Query<View>, QueryRejection>,
) -> Response {
    let Ok(Query(wanted)) = query else {
        return error(
            StatusCode::BAD_REQUEST,
            "the only parameter is display=true",
        )
        .into_response();
    };
    let value = app
        .routines
        .as_ref()
        .map_or_else(|| json!([]), |r| r.list());
    let value = if wanted.display { shown(value) } else { value };
    Json(value).into_response()
}
