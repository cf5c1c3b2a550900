//! Grants on the web listener: `GET /api/grants` (the live grants made on TauBar: what
//! each covers, until when, its uses; then the routines' exemptions, marked as theirs)
//! and `DELETE /api/grants/{id}` (a revoke, which takes effect before any later call). A grant is made by answering a question with
//! `"grant"` (`POST /api/approvals/{id}`, in `api.rs`). Each person lists and revokes
//! their own grants only; one made before people were named is the first person's.

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Extension, Path, Query, State};
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use serde_json::json;
use tau_protocol::{Allowance, DecidedBy, GrantId};
use tau_state::Revoked;

use crate::api::{View, error, hub_error, view};
use crate::auth::Speaker;
use crate::{App, WEB};

/// `GET /api/grants`: what runs without a question: the live grants made on this page,
/// oldest first (`"kind": "grant"`), then the routines' exemptions (`"kind": "routine"`,
/// revoked by disabling the routine); with `display=true` every string as the display
/// function shows it (the arguments are the model's).
pub(crate) async fn list(
    State(app): State<App>,
    Extension(speaker): Extension<Speaker>,
    query: Result<Query<View>, QueryRejection>,
) -> Response {
    let Ok(Query(wanted)) = query else {
        return error(
            StatusCode::BAD_REQUEST,
            "the only parameter is display=true",
        )
        .into_response();
    };
    let grants = match app.hub.grants() {
        Ok(grants) => grants,
        Err(failure) => return hub_error(&failure),
    };
    let mut allowances: Vec<Allowance> = grants
        .into_iter()
        .filter(|grant| app.grant_is(grant, &speaker))
        .map(|grant| Allowance::Grant(Box::new(grant)))
        .collect();
    if let Some(routines) = &app.routines {
        allowances.extend(routines.allowances().into_iter().map(Allowance::Routine));
    }
    Json(view(
        serde_json::to_value(allowances).unwrap_or_default(),
        &wanted,
    ))
    .into_response()
}

/// `DELETE /api/grants/{id}`: 200 with the grant as revoked, 409 when it was revoked
/// before, 404 for an id this page never made.
pub(crate) async fn revoke(
    State(app): State<App>,
    Extension(speaker): Extension<Speaker>,
    Path(id): Path<String>,
) -> Response {
    let not_found = || error(StatusCode::NOT_FOUND, "no such grant").into_response();
    let Ok(id) = GrantId::parse(&id) else {
        return not_found();
    };
    // Another person's grant is not found here.
    match app.hub.grant(&id) {
        Ok(Some(grant)) if app.grant_is(&grant, &speaker) => {}
        Ok(_) => return not_found(),
        Err(failure) => return hub_error(&failure),
    }
    match app.hub.revoke_grant(&id, &DecidedBy::person(WEB)) {
        Ok(Revoked::Revoked(grant)) => Json(json!({ "revoked": grant })).into_response(),
        Ok(Revoked::AlreadyRevoked(grant)) => (
            StatusCode::CONFLICT,
            Json(json!({ "error": "the grant was revoked already", "grant": grant })),
        )
            .into_response(),
        Ok(Revoked::NotFound) => not_found(),
        Err(failure) => hub_error(&failure),
    }
}

impl App {
    /// Whether `grant` is `speaker`'s: made by them (a grant that names nobody was made
    /// before people were named, by the first person).
    fn grant_is(&self, grant: &tau_protocol::Grant, speaker: &Speaker) -> bool {
        match &grant.person {
            Some(person) => person == speaker.0.as_str(),
            None => self.hub.household().first() == speaker.0,
        }
    }
}
