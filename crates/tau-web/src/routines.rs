//! Routines on the web listener: `POST /hooks/{name}` (a routine's webhook, checked by the
//! routine's own secret, not the page's token) and `GET /api/routines` (the list the page
//! shows). What they answer comes from the host through [`Routines`]; this crate knows no
//! routine engine.

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, StatusCode, header};
use serde_json::{Value, json};

use crate::App;
use crate::api::{View, error};
use crate::shown::shown;

/// What the host offers about its routines.
pub trait Routines: Send + Sync {
    /// Answers `POST /hooks/{name}`: the HTTP status and a one-line text.
    fn webhook(&self, name: &str, authorization: Option<&str>, body: &[u8]) -> (u16, String);
    /// Every routine as the page lists it (a JSON array).
    fn list(&self) -> Value;
}

/// `POST /hooks/{name}`.
pub(crate) async fn hook(
    State(app): State<App>,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let Some(routines) = &app.routines else {
        return error(StatusCode::NOT_FOUND, "no such webhook").into_response();
    };
    let body = match body {
        Ok(body) => body,
        Err(rejection) if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            return error(StatusCode::PAYLOAD_TOO_LARGE, "the body is too large").into_response();
        }
        Err(_) => {
            return error(StatusCode::BAD_REQUEST, "the body could not be read").into_response();
        }
    };
    let authorization = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    let (status, text) = routines.webhook(&name, authorization, &body);
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let key = if status.is_success() {
        "status"
    } else {
        "error"
    };
    (status, Json(json!({ key: text }))).into_response()
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
