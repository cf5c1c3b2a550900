//! The JSON API: exactly what the page uses, documented in docs/hub.md.

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{Extension, Path, Query, State};
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, StatusCode, header};
use serde::Deserialize;
use serde_json::{Value, json};
use tau_agent::{ContentBlock, Message};
use tau_core::output_blocks;
use tau_hub::HubError;
use tau_protocol::{GrantScope, SessionId};
use tau_state::{ApprovalRow, ApprovalState};

use crate::App;
use crate::auth::Speaker;
use crate::shown::{card_sha256, shown};

/// The longest message a person may send, in bytes.
pub(crate) const MAX_TEXT_BYTES: usize = 32 * 1024;

/// `{"error": text}` with `status`.
pub(crate) fn error(status: StatusCode, text: &str) -> (StatusCode, Json<Value>) {
    (status, Json(json!({ "error": text })))
}

pub(crate) fn hub_error(error: &HubError) -> Response {
    let status = match error {
        HubError::UnknownApproval(_) | HubError::UnknownSession(_) => StatusCode::NOT_FOUND,
        HubError::Open { .. } | HubError::InUse(_) => StatusCode::CONFLICT,
        HubError::Busy => StatusCode::TOO_MANY_REQUESTS,
        // A store that does not answer (a shared one's connection lost): nothing is taken
        // in until it does, and the client may try again.
        HubError::ShuttingDown | HubError::Store(tau_state::StateError::Unavailable { .. }) => {
            StatusCode::SERVICE_UNAVAILABLE
        }
        HubError::TimedOut { .. } => StatusCode::GATEWAY_TIMEOUT,
        HubError::Grant(_) | HubError::Title(_) | HubError::PasskeyElsewhere(_) => {
            StatusCode::UNPROCESSABLE_ENTITY
        }
        HubError::NotYours(_) => StatusCode::FORBIDDEN,
        HubError::Store(_)
        | HubError::StoredTurn(_)
        | HubError::Session(_)
        | HubError::NoRandomness(_)
        | HubError::InvalidSessionId(_)
        | HubError::NoFreshId { .. } => StatusCode::INTERNAL_SERVER_ERROR,
    };
    let text = match error {
        // The id came from the request: not echoed back.
        HubError::UnknownApproval(_) => "no such approval".to_owned(),
        HubError::UnknownSession(_) => "no such session".to_owned(),
        HubError::Open { .. }
        | HubError::NotYours(_)
        | HubError::Busy
        | HubError::ShuttingDown
        | HubError::Grant(_)
        | HubError::InUse(_)
        | HubError::Title(_)
        | HubError::TimedOut { .. }
        | HubError::Store(_)
        | HubError::StoredTurn(_)
        | HubError::Session(_)
        | HubError::NoRandomness(_)
        | HubError::InvalidSessionId(_)
        | HubError::NoFreshId { .. }
        | HubError::PasskeyElsewhere(_) => error.to_string(),
    };
    if status == StatusCode::INTERNAL_SERVER_ERROR {
        tracing::error!(%error, "web request failed");
    }
    error_response(status, &text)
}

pub(crate) fn error_response(status: StatusCode, text: &str) -> Response {
    error(status, text).into_response()
}

pub(crate) fn body_error(rejection: &BytesRejection) -> Response {
    let status = rejection.status();
    let text = if status == StatusCode::PAYLOAD_TOO_LARGE {
        "the body is too large"
    } else {
        "the body could not be read"
    };
    error_response(status, text)
}

/// `?display=true` asks for the view a person reads (see `shown`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct View {
    #[serde(default)]
    pub display: bool,
}

pub(crate) fn view(value: Value, view: &View) -> Value {
    if view.display { shown(value) } else { value }
}

pub(crate) fn session_id(text: &str) -> Result<SessionId, Box<Response>> {
    SessionId::parse(text)
        .map_err(|_| Box::new(error_response(StatusCode::NOT_FOUND, "no such session")))
}

/// `POST /api/login`: the page trades the token for its cookie.
pub(crate) async fn login(State(app): State<App>, headers: HeaderMap) -> Response {
    if !app.auth.bearer(&headers) {
        return error_response(StatusCode::UNAUTHORIZED, "the token is required");
    }
    let mut response = StatusCode::NO_CONTENT.into_response();
    response
        .headers_mut()
        .insert(header::SET_COOKIE, app.auth.set_cookie());
    response
}

/// `GET /api/sessions`'s parameters: `display=true`, and `search=TEXT` for the
/// conversations whose title or message text holds it.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SessionsQuery {
    #[serde(default)]
    display: bool,
    #[serde(default)]
    search: Option<String>,
}

/// `GET /api/sessions`: the web conversations, the most recent first.
pub(crate) async fn sessions(
    State(app): State<App>,
    Extension(speaker): Extension<Speaker>,
    query: Result<Query<SessionsQuery>, QueryRejection>,
) -> Response {
    let Ok(Query(query)) = query else {
        return error_response(
            StatusCode::BAD_REQUEST,
            "the parameters are display=true and search=TEXT",
        );
    };
    let wanted = View {
        display: query.display,
    };
    let mut list = match app.hub.conversations() {
        Ok(list) => list,
        Err(error) => return hub_error(&error),
    };
    // Another person's conversations are not listed: they are not found here at all.
    list.retain(|info| app.owns(&speaker, &info.conversation.session));
    if let Some(text) = query.search.as_deref().filter(|t| !t.trim().is_empty()) {
        let found = match app.hub.search_conversations(text) {
            Ok(found) => found,
            Err(error) => return hub_error(&error),
        };
        list.retain(|info| found.contains(&info.conversation.session));
    }
    list.sort_by(|a, b| {
        b.updated_at
            .cmp(&a.updated_at)
            .then(b.conversation.created_at.cmp(&a.conversation.created_at))
    });
    let rows: Vec<Value> = list
        .into_iter()
        .map(|info| {
            let updated = jiff::Timestamp::from_second(info.updated_at)
                .map_or_else(|_| info.updated_at.to_string(), |t| t.to_string());
            let mut row = json!({
                "id": info.conversation.session.as_str(),
                "kind": "chat",
                "created_at": info.conversation.created_at.to_string(),
                "updated_at": updated,
                "message_count": info.message_count,
                "busy": info.busy,
                "pending_approvals": info.pending_approvals,
            });
            if let Some(title) = info.title
                && let Value::Object(fields) = &mut row
            {
                fields.insert("title".into(), json!(title));
            }
            if let Some(origin) = app.origin_of_key(&info.conversation.key)
                && let Value::Object(fields) = &mut row
            {
                fields.insert("kind".into(), json!("routine"));
                fields.insert("routine".into(), json!(origin.routine));
                fields.insert("trigger".into(), json!(origin.trigger));
            }
            row
        })
        .collect();
    Json(view(Value::Array(rows), &wanted)).into_response()
}

/// `GET /api/channels`: the hub's channels; a stopped one says why.
pub(crate) async fn channels(
    State(app): State<App>,
    query: Result<Query<View>, QueryRejection>,
) -> Response {
    let Ok(Query(wanted)) = query else {
        return error_response(
            StatusCode::BAD_REQUEST,
            "the only parameter is display=true",
        );
    };
    let rows: Vec<Value> = app
        .hub
        .channels()
        .into_iter()
        .map(|channel| match channel.stopped {
            None => json!({ "name": channel.name, "state": "running" }),
            Some(why) => json!({ "name": channel.name, "state": "stopped", "error": why }),
        })
        .collect();
    Json(view(Value::Array(rows), &wanted)).into_response()
}

/// `POST /api/sessions`: a new conversation.
pub(crate) async fn create_session(
    State(app): State<App>,
    Extension(speaker): Extension<Speaker>,
) -> Response {
    let made = app
        .hub
        .new_conversation()
        .and_then(|id| app.hub.claim_conversation(&id, &speaker.0).map(|_| id));
    match made {
        Ok(id) => (StatusCode::CREATED, Json(json!({ "id": id.as_str() }))).into_response(),
        Err(error) => hub_error(&error),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NewMessage {
    text: String,
}

/// `POST /api/sessions/{id}/messages`: 202, the turn runs (after the one before it).
pub(crate) async fn send(
    State(app): State<App>,
    Extension(speaker): Extension<Speaker>,
    Path(id): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let body = match body {
        Ok(body) => body,
        Err(rejection) => return body_error(&rejection),
    };
    let session = match session_id(&id) {
        Ok(session) => session,
        Err(response) => return *response,
    };
    let Ok(NewMessage { text }) = serde_json::from_slice::<NewMessage>(&body) else {
        return error_response(
            StatusCode::BAD_REQUEST,
            "the body must be {\"text\": \"...\"}",
        );
    };
    if let Err(refused) = app.owned(&speaker, &session) {
        return *refused;
    }
    if text.trim().is_empty() {
        return error_response(StatusCode::BAD_REQUEST, "the text is empty");
    }
    if text.len() > MAX_TEXT_BYTES {
        return error_response(StatusCode::PAYLOAD_TOO_LARGE, "the text is too long");
    }
    // A routine's conversation speaks with the routine's prompts only: a message from a
    // person there would be drawn as the routine's.
    if let Some(origin) = app.origin_of_session(&session) {
        return error_response(
            StatusCode::CONFLICT,
            &format!(
                "this is routine {}'s conversation: its prompts come from its trigger ({}); start a new chat to write",
                origin.routine, origin.trigger
            ),
        );
    }
    match app.hub.send(&session, text).await {
        Ok(()) => (
            StatusCode::ACCEPTED,
            Json(json!({ "session": session.as_str() })),
        )
            .into_response(),
        Err(error) => hub_error(&error),
    }
}

/// `GET /api/sessions/{id}/messages`: the stored messages in the Converse shape.
pub(crate) async fn messages(
    State(app): State<App>,
    Extension(speaker): Extension<Speaker>,
    Path(id): Path<String>,
    query: Result<Query<View>, QueryRejection>,
) -> Response {
    let Ok(Query(wanted)) = query else {
        return error_response(
            StatusCode::BAD_REQUEST,
            "the only parameter is display=true",
        );
    };
    let session = match session_id(&id) {
        Ok(session) => session,
        Err(response) => return *response,
    };
    if let Err(refused) = app.owned(&speaker, &session) {
        return *refused;
    }
    match app.hub.messages(&session) {
        Ok(messages) => {
            let mut value = serde_json::to_value(&messages).unwrap_or(Value::Null);
            if wanted.display {
                add_output_blocks(&mut value, &messages);
            }
            Json(view(value, &wanted)).into_response()
        }
        Err(error) => hub_error(&error),
    }
}

/// Beside each stored tool result, in the view a person reads: `blocks`, what the call
/// gave back as text blocks (the same as the live `tool_output` event), so the page never
/// shows the JSON the model read.
fn add_output_blocks(value: &mut Value, messages: &[Message]) {
    let Some(shown) = value.as_array_mut() else {
        return;
    };
    for (message, shown) in messages.iter().zip(shown) {
        let Some(blocks) = shown.get_mut("content").and_then(Value::as_array_mut) else {
            continue;
        };
        for (block, shown) in message.content.iter().zip(blocks) {
            if let ContentBlock::ToolResult(result) = block
                && let Some(Value::Object(fields)) = shown.get_mut("toolResult")
            {
                let output = serde_json::to_value(output_blocks(result)).unwrap_or(Value::Null);
                fields.insert("blocks".into(), output);
            }
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ApprovalQuery {
    state: Option<String>,
    /// `all` for the questions of every channel (those of another channel are shown, not
    /// answered here); the web's own without it.
    channel: Option<String>,
    #[serde(default)]
    display: bool,
}

/// A question as the API lists it: the row, what a grant would cover, whose it is, and
/// `card_sha256`, the hash of its card as the page draws it (see `shown::card_sha256`),
/// which an approving answer must carry; with `display` in the display view.
pub(crate) fn row_json(app: &App, row: &ApprovalRow, display: bool) -> Value {
    let value = row_value(app, row);
    let drawn = shown(value.clone());
    let hash = card_sha256(&drawn);
    let mut value = if display { drawn } else { value };
    if let Value::Object(fields) = &mut value {
        fields.insert("card_sha256".into(), Value::String(hash));
        // Not part of the card: how a yes to it is confirmed.
        if let Some(offer) = crate::signin::step_up_offer(app, row) {
            fields.insert("step_up".into(), offer);
        }
    }
    value
}

/// The hash of the card the page would draw for `row` now.
pub(crate) fn current_card_sha256(app: &App, row: &ApprovalRow) -> String {
    card_sha256(&shown(row_value(app, row)))
}

/// A question's row with what the API says beside it, as stored (not yet shown).
fn row_value(app: &App, row: &ApprovalRow) -> Value {
    let mut value = serde_json::to_value(row).unwrap_or(Value::Null);
    // What "yes, and allow this again" would cover, in tau's words, before anyone can
    // press it (a grant from this page is for this conversation).
    if let Some(offer) = &row.grant_offer
        && let Value::Object(fields) = &mut value
    {
        fields.insert("grant_line".into(), Value::String(offer.line()));
        fields.insert(
            "grant_covers".into(),
            Value::String(offer.covers_text(&row.tool, GrantScope::Conversation)),
        );
        fields.insert(
            "grant_covers_channel".into(),
            Value::String(offer.covers_text(&row.tool, GrantScope::Channel)),
        );
        // The person keeps approving exactly this call: the card says so (tau never
        // makes the grant itself).
        if let Some(suggestion) = &offer.suggestion {
            fields.insert("grant_suggestion".into(), Value::String(suggestion.text()));
        }
    }
    // The conversation it waits in, by its title where it has one (the list of what
    // waits elsewhere names it so); never part of the card.
    if let Ok(Some(title)) = app.hub.waiting_title(&row.session)
        && let Value::Object(fields) = &mut value
    {
        fields.insert("session_title".into(), Value::String(title));
    }
    // A routine's question says whose it is.
    if let Some(origin) = app.origin_of_session(&row.session)
        && let Value::Object(fields) = &mut value
    {
        fields.insert(
            "routine".into(),
            json!({ "name": origin.routine, "trigger": origin.trigger }),
        );
    }
    value
}

/// `GET /api/approvals?state=pending&channel=all`: the stored questions, the web's own or
/// every channel's, oldest first.
pub(crate) async fn approvals(
    State(app): State<App>,
    Extension(speaker): Extension<Speaker>,
    query: Result<Query<ApprovalQuery>, QueryRejection>,
) -> Response {
    let Ok(Query(query)) = query else {
        return error_response(
            StatusCode::BAD_REQUEST,
            "the parameters are state=STATE, channel=all and display=true",
        );
    };
    let every_channel = match query.channel.as_deref() {
        None => false,
        Some("all") => true,
        Some(_) => {
            return error_response(
                StatusCode::BAD_REQUEST,
                "channel is all, or left out for the web's own questions",
            );
        }
    };
    let state = match query.state.as_deref().map(ApprovalState::parse) {
        None => None,
        Some(Some(state)) => Some(state),
        Some(None) => {
            return error_response(
                StatusCode::BAD_REQUEST,
                "state is one of pending, approved, rejected, expired, superseded, cancelled",
            );
        }
    };
    let rows = if every_channel {
        app.hub.approvals_of_every_channel(state)
    } else {
        app.hub.approvals(state)
    };
    match rows {
        Ok(rows) => Json(Value::Array(
            rows.iter()
                // What waits for this person (theirs to answer, wherever it was asked),
                // and what their own conversations asked; never another's.
                .filter(|r| app.hub.waits_for(r, &speaker.0) || app.owns(&speaker, &r.session))
                .map(|r| row_json(&app, r, query.display))
                .collect(),
        ))
        .into_response(),
        Err(error) => hub_error(&error),
    }
}
