//! A web conversation renamed or deleted: `PATCH /api/sessions/{id}` with
//! `{"title": "..."}` (or `null`: back to its first prompt's) and `DELETE
//! /api/sessions/{id}`, refused (409) while a turn runs or a question waits in it.

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Extension, Path, State};
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use serde::Deserialize;
use serde_json::json;

use crate::App;
use crate::api::{error_response, hub_error, session_id};
use crate::auth::Speaker;

/// The body of a rename: the title, or `null` for the first prompt's.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Rename {
    title: Option<String>,
}

/// `PATCH /api/sessions/{id}`: 200 with the title it has now; 422 for an empty or
/// overlong title; 404 for no conversation of this page.
pub(crate) async fn rename(
    State(app): State<App>,
    Extension(speaker): Extension<Speaker>,
    Path(id): Path<String>,
    body: Result<Json<Rename>, JsonRejection>,
) -> Response {
    let session = match session_id(&id) {
        Ok(session) => session,
        Err(response) => return *response,
    };
    if let Err(refused) = app.owned(&speaker, &session) {
        return *refused;
    }
    let Ok(Json(Rename { title })) = body else {
        return error_response(
            StatusCode::BAD_REQUEST,
            "the body must be {\"title\": \"...\"} (or null for the first prompt's)",
        );
    };
    if let Err(error) = app.hub.rename_conversation(&session, title.as_deref()) {
        return hub_error(&error);
    }
    let now = app.hub.title(&session).unwrap_or_default();
    Json(json!({ "id": session.as_str(), "title": now })).into_response()
}

/// `DELETE /api/sessions/{id}`: 204 once it and its messages are gone; 409 while a turn
/// runs or a question waits in it; 404 for no conversation of this page.
pub(crate) async fn delete(
    State(app): State<App>,
    Extension(speaker): Extension<Speaker>,
    Path(id): Path<String>,
) -> Response {
    let session = match session_id(&id) {
        Ok(session) => session,
        Err(response) => return *response,
    };
    if let Err(refused) = app.owned(&speaker, &session) {
        return *refused;
    }
    match app.hub.delete_conversation(&session).await {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(error) => hub_error(&error),
    }
}
