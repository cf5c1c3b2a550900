//! Passkeys on TauBar, as routes: the enrollment page (`/enroll#<secret>`) and its two
//! calls, passkey sign-in and the session cookie it gives, the list of a person's passkeys
//! and their removal, and the step-up challenge of a question that takes a passkey.
//!
//! The ceremonies' own calls (`/passkeys/...`) need no token (whoever enrolls or signs in
//! has none yet) but, like every change, must come from this page (`Origin`).

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use serde::Deserialize;
use serde_json::{Value, json};
use tau_hub::RefusedAnswer;
use tau_protocol::ApprovalId;
use tau_state::{ApprovalRow, ApprovalState, Passkeys};
use webauthn_rs::prelude::{PublicKeyCredential, RegisterPublicKeyCredential, Webauthn};

use crate::App;
use crate::api::{body_error, current_card_sha256, error_response};
use crate::auth::Via;
use crate::passkey;
use crate::step_up::{self, Binding, StepUpAnswer, StepUpRefusal};

pub(crate) const ENROLL_HTML: &str = include_str!("../assets/enroll.html");
pub(crate) const PASSKEY_JS: &str = include_str!("../assets/passkey.js");

/// The person a request speaks for when no people are configured: the token's.
pub const IMPLICIT_PERSON: &str = "owner";

/// The cookie a passkey sign-in gives: a random id, kept only as its hash.
pub(crate) const SESSION_COOKIE: &str = "tau_session";

/// How long a signed-in session lasts, in seconds.
const SESSION_SECONDS: i64 = 12 * 60 * 60;

/// How long an enrollment link works, in hours.
pub const ENROLL_HOURS: i64 = 24;

/// Who a request speaks for, as the checks found it (an extension on every API request).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Person(pub String);

/// Passkeys as TauBar serves them: the store and the relying party.
#[derive(Clone)]
pub(crate) struct PasskeySite {
    store: Passkeys,
    rp: std::sync::Arc<Webauthn>,
    /// Tools whose yes takes a passkey, besides lock-class devices.
    step_up_tools: std::sync::Arc<[String]>,
}

impl PasskeySite {
    /// `None` (said in the log) when TauBar's addresses name no relying party.
    pub(crate) fn new(
        store: Passkeys,
        hosts: &[String],
        configured: &[String],
        step_up_tools: Vec<String>,
    ) -> Option<Self> {
        match passkey::relying_party(hosts, configured) {
            Ok(rp) => Some(Self {
                store,
                rp: std::sync::Arc::new(rp),
                step_up_tools: step_up_tools.into(),
            }),
            Err(error) => {
                tracing::warn!(%error, "TauBar serves no passkeys");
                None
            }
        }
    }

    /// Whether anyone has enrolled a passkey: until then no question asks for one.
    fn any(&self) -> bool {
        self.store.any().unwrap_or_else(|error| {
            // Unreadable: ask for one, so a store that fails never lowers the step.
            tracing::error!(%error, "passkeys could not be read");
            true
        })
    }
}

/// Makes an enrollment secret for `person` that works for [`ENROLL_HOURS`]; TauBar's
/// `/enroll#<secret>` takes it.
pub fn enroll_secret(store: &Passkeys, person: &str) -> Result<String, passkey::PasskeyError> {
    let secret = passkey::random_hex()?;
    let now = passkey::now();
    store.add_enrollment(&secret, person, now, now + ENROLL_HOURS * 3600)?;
    Ok(secret)
}

fn cookie_value<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|h| h.to_str().ok())
        .flat_map(|h| h.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find_map(|(key, value)| (key == name).then_some(value))
}

/// The person a passkey session cookie signed in, while it lasts.
pub(crate) fn session_person(app: &App, headers: &HeaderMap) -> Option<String> {
    let site = app.passkeys.as_ref()?;
    let id = cookie_value(headers, SESSION_COOKIE)?;
    site.store
        .session_person(id, passkey::now())
        .unwrap_or_else(|error| {
            tracing::error!(%error, "a session could not be read");
            None
        })
}

/// `Set-Cookie` for a signed-in session: HttpOnly, SameSite=Strict, and Secure when the
/// page came over https.
pub(crate) fn session_cookie(id: &str, secure: bool) -> HeaderValue {
    let secure = if secure { "; Secure" } else { "" };
    HeaderValue::from_str(&format!(
        "{SESSION_COOKIE}={id}; HttpOnly; SameSite=Strict; Path=/; Max-Age={SESSION_SECONDS}{secure}"
    ))
    .unwrap_or_else(|_| HeaderValue::from_static(""))
}

fn no_passkeys() -> Response {
    error_response(
        StatusCode::NOT_FOUND,
        "TauBar serves no passkeys here (open it by its name, such as localhost)",
    )
}

/// A ceremony's call must come from this page, like every change made with a cookie.
/// The answer a request gets instead of going on.
type Refused = Box<Response>;

fn from_this_page(app: &App, headers: &HeaderMap) -> Result<(), Refused> {
    if app.auth.origin_ok(headers, Via::Cookie) {
        Ok(())
    } else {
        Err(Box::new(error_response(
            StatusCode::FORBIDDEN,
            "a request that changes something must come from this page",
        )))
    }
}

fn site_for<'a>(app: &'a App, headers: &HeaderMap) -> Result<&'a PasskeySite, Refused> {
    from_this_page(app, headers)?;
    app.passkeys.as_ref().ok_or_else(|| Box::new(no_passkeys()))
}

fn read<T: for<'de> Deserialize<'de>>(
    body: Result<Bytes, BytesRejection>,
    shape: &str,
) -> Result<T, Refused> {
    let body = body.map_err(|rejection| Box::new(body_error(&rejection)))?;
    serde_json::from_slice(&body).map_err(|_| {
        Box::new(error_response(
            StatusCode::BAD_REQUEST,
            &format!("the body must be {shape}"),
        ))
    })
}

fn failed(error: &passkey::PasskeyError) -> Response {
    tracing::info!(%error, "a passkey ceremony failed");
    error_response(StatusCode::BAD_REQUEST, &error.to_string())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EnrollStart {
    secret: String,
}

/// `POST /passkeys/enroll/start`: the options to create a passkey for the person the
/// secret names.
pub(crate) async fn enroll_start(
    State(app): State<App>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let site = match site_for(&app, &headers) {
        Ok(site) => site,
        Err(response) => return *response,
    };
    let EnrollStart { secret } = match read(body, "{\"secret\": \"...\"}") {
        Ok(body) => body,
        Err(response) => return *response,
    };
    let person = match site.store.enrollment_person(&secret, passkey::now()) {
        Ok(Some(person)) => person,
        Ok(None) => return error_response(StatusCode::FORBIDDEN, ENROLL_LINK_SPENT),
        Err(error) => return failed(&error.into()),
    };
    match passkey::start_enrollment(&site.rp, &site.store, &person) {
        Ok((ceremony, options)) => {
            Json(json!({ "ceremony": ceremony, "person": person, "options": options }))
                .into_response()
        }
        Err(error) => failed(&error),
    }
}

/// What the enrollment page says of a secret that is not (or no longer) good.
pub(crate) const ENROLL_LINK_SPENT: &str =
    "this enrollment link was used, has expired or is not this tau's: ask for a new one";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EnrollFinish {
    secret: String,
    ceremony: String,
    credential: RegisterPublicKeyCredential,
}

/// `POST /passkeys/enroll/finish`: keeps the passkey; the secret is used up.
pub(crate) async fn enroll_finish(
    State(app): State<App>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let site = match site_for(&app, &headers) {
        Ok(site) => site,
        Err(response) => return *response,
    };
    let EnrollFinish {
        secret,
        ceremony,
        credential,
    } = match read(
        body,
        "{\"secret\": \"...\", \"ceremony\": \"...\", \"credential\": {...}}",
    ) {
        Ok(body) => body,
        Err(response) => return *response,
    };
    match passkey::finish_enrollment(&site.rp, &site.store, &secret, &ceremony, &credential) {
        Ok(Some(person)) => {
            tracing::info!(person = %person, "a passkey was enrolled");
            (StatusCode::CREATED, Json(json!({ "person": person }))).into_response()
        }
        Ok(None) => error_response(StatusCode::FORBIDDEN, ENROLL_LINK_SPENT),
        Err(error) => failed(&error),
    }
}

/// `POST /passkeys/signin/start`: the options to sign in with any enrolled passkey.
pub(crate) async fn sign_in_start(State(app): State<App>, headers: HeaderMap) -> Response {
    let site = match site_for(&app, &headers) {
        Ok(site) => site,
        Err(response) => return *response,
    };
    match passkey::start_sign_in(&site.rp, &site.store) {
        Ok((ceremony, options)) => {
            Json(json!({ "ceremony": ceremony, "options": options })).into_response()
        }
        Err(error) => failed(&error),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SignInFinish {
    ceremony: String,
    credential: PublicKeyCredential,
}

/// `POST /passkeys/signin/finish`: 204 with the session cookie when the passkey checked
/// out; 403 otherwise.
pub(crate) async fn sign_in_finish(
    State(app): State<App>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let site = match site_for(&app, &headers) {
        Ok(site) => site,
        Err(response) => return *response,
    };
    let SignInFinish {
        ceremony,
        credential,
    } = match read(body, "{\"ceremony\": \"...\", \"credential\": {...}}") {
        Ok(body) => body,
        Err(response) => return *response,
    };
    let Ok(Some(asserted)) = passkey::finish_sign_in(&site.rp, &site.store, &ceremony, &credential)
    else {
        return error_response(StatusCode::FORBIDDEN, SIGN_IN_REFUSED);
    };
    let id = match passkey::random_hex() {
        Ok(id) => id,
        Err(error) => return failed(&error),
    };
    let now = passkey::now();
    if let Err(error) = site
        .store
        .add_session(&id, &asserted.person, now, now + SESSION_SECONDS)
    {
        return failed(&error.into());
    }
    tracing::info!(person = %asserted.person, "signed in with a passkey");
    let secure = headers
        .get(header::ORIGIN)
        .and_then(|o| o.to_str().ok())
        .is_some_and(|o| o.starts_with("https://"));
    let mut response = StatusCode::NO_CONTENT.into_response();
    response
        .headers_mut()
        .insert(header::SET_COOKIE, session_cookie(&id, secure));
    response
}

/// The 403 of a sign-in that did not check out.
pub(crate) const SIGN_IN_REFUSED: &str =
    "the passkey did not sign you in: try again, or use the token";

/// `GET /api/passkeys`: the passkeys of the person the request speaks for.
pub(crate) async fn list(
    State(app): State<App>,
    person: Option<axum::Extension<Person>>,
) -> Response {
    let Some(site) = app.passkeys.as_ref() else {
        return Json(json!([])).into_response();
    };
    let person = person.map_or_else(|| IMPLICIT_PERSON.to_owned(), |p| p.0.0);
    match site.store.list(Some(&person)) {
        Ok(list) => Json(Value::Array(
            list.into_iter()
                .map(|key| {
                    json!({
                        "id": key.id,
                        "person": key.person,
                        "created_at": key.created_at,
                        "last_used_at": key.last_used_at,
                    })
                })
                .collect(),
        ))
        .into_response(),
        Err(error) => failed(&error.into()),
    }
}

/// `DELETE /api/passkeys/{id}`: removes one of the person's own passkeys.
pub(crate) async fn remove(
    State(app): State<App>,
    person: Option<axum::Extension<Person>>,
    Path(id): Path<String>,
) -> Response {
    let Some(site) = app.passkeys.as_ref() else {
        return no_passkeys();
    };
    let person = person.map_or_else(|| IMPLICIT_PERSON.to_owned(), |p| p.0.0);
    match site.store.remove(&person, &id) {
        Ok(true) => StatusCode::NO_CONTENT.into_response(),
        Ok(false) => error_response(StatusCode::NOT_FOUND, "no such passkey"),
        Err(error) => failed(&error.into()),
    }
}

/// Whether approving `row` on TauBar takes a passkey: a question with a second step (a
/// lock-class device) or of a tool marked `step_up = "passkey"`, while anyone has enrolled
/// one.
pub(crate) fn needs_step_up(app: &App, row: &ApprovalRow) -> bool {
    app.passkeys.as_ref().is_some_and(|site| {
        (row.card.confirm.is_some() || site.step_up_tools.contains(&row.tool)) && site.any()
    })
}

/// The `step_up` object a question that takes a passkey carries in the API.
pub(crate) fn step_up_offer(app: &App, row: &ApprovalRow) -> Option<Value> {
    (row.state == ApprovalState::Pending && needs_step_up(app, row)).then(|| {
        json!({
            "kind": "passkey",
            "challenge": format!("/api/approvals/{}/step_up", row.id),
        })
    })
}

/// `POST /api/approvals/{id}/step_up`: a challenge bound to this question, its arguments
/// and its card, to sign with a passkey; single use, expiring with the question.
pub(crate) async fn step_up(State(app): State<App>, Path(id): Path<String>) -> Response {
    let Ok(id) = ApprovalId::parse(&id) else {
        return error_response(StatusCode::NOT_FOUND, "no such approval");
    };
    let row = match app.hub.question(&id) {
        Ok(Some(row)) if row.channel == app.hub.channel() => row,
        Ok(_) => return error_response(StatusCode::NOT_FOUND, "no such approval"),
        Err(error) => return crate::api::hub_error(&error),
    };
    let Some(site) = app.passkeys.as_ref().filter(|_| needs_step_up(&app, &row)) else {
        return error_response(StatusCode::CONFLICT, "this question takes no passkey");
    };
    if row.state != ApprovalState::Pending {
        return error_response(StatusCode::CONFLICT, "the question is no longer open");
    }
    let card = current_card_sha256(&app, &row);
    let binding = Binding {
        approval_id: row.id.as_str(),
        arguments_sha256: &row.arguments_sha256,
        card_sha256: &card,
    };
    match step_up::start_step_up(&site.rp, &site.store, binding, row.deadline.as_second()) {
        Ok((ceremony, options)) => {
            Json(json!({ "ceremony": ceremony, "options": options })).into_response()
        }
        Err(error) => failed(&error),
    }
}

/// The passkey check of a yes to `row`, where it takes one: `Ok(Some(person))` when the
/// assertion checked out, `Ok(None)` when the question takes none, and the refusal's
/// response (recorded as `answer_refused`) otherwise.
pub(crate) fn checked_step_up(
    app: &App,
    row: &ApprovalRow,
    answer: Option<&StepUpAnswer>,
    speaker: &str,
) -> Result<Option<String>, Refused> {
    let Some(site) = app.passkeys.as_ref().filter(|_| needs_step_up(app, row)) else {
        return Ok(None);
    };
    let card = current_card_sha256(app, row);
    let binding = Binding {
        approval_id: row.id.as_str(),
        arguments_sha256: &row.arguments_sha256,
        card_sha256: &card,
    };
    let checked = match answer {
        None => Err(StepUpRefusal::Missing),
        Some(answer) => step_up::finish_step_up(&site.rp, &site.store, binding, answer),
    };
    match checked {
        Ok(asserted) => Ok(Some(asserted.person)),
        Err(refusal) => {
            tracing::info!(approval_id = %row.id, reason = refusal.reason(), "a yes that did not count");
            app.hub.refused_answer(RefusedAnswer {
                approval_id: Some(row.id.to_string()),
                user: None,
                place: None,
                reason: refusal.reason().to_owned(),
                count: None,
                person: app.hub.household().is_named().then(|| speaker.to_owned()),
            });
            Err(Box::new(
                (
                    StatusCode::UNPROCESSABLE_ENTITY,
                    Json(json!({ "error": refusal.text(), "refused": refusal.code() })),
                )
                    .into_response(),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn the_session_cookie_is_httponly_strict_and_secure_over_https() {
        assert_eq!(
            session_cookie("abc", false),
            "tau_session=abc; HttpOnly; SameSite=Strict; Path=/; Max-Age=43200"
        );
        assert_eq!(
            session_cookie("abc", true),
            "tau_session=abc; HttpOnly; SameSite=Strict; Path=/; Max-Age=43200; Secure"
        );
    }

    #[test]
    fn the_texts_a_person_reads_are_pinned() {
        assert_eq!(
            [ENROLL_LINK_SPENT, SIGN_IN_REFUSED],
            [
                "this enrollment link was used, has expired or is not this tau's: ask for a new one",
                "the passkey did not sign you in: try again, or use the token",
            ]
        );
    }
}
