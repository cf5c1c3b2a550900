//! `POST /api/approvals/{id}`: a person's answer to a question asked on the page.
//!
//! A yes counts only for the whole card the person was shown: every approving answer
//! (approve, with a second step, "allow again", "allow in all chats") carries the
//! `card_sha256` the question was listed with, and it must be the hash of the card as it
//! reads now. A yes without it, or with another, decides nothing: 422 and an
//! `answer_refused` line. A no needs no hash: refusing is always possible.

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Extension, Path, State};
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use serde::Deserialize;
use serde_json::json;
use tau_hub::{HubError, RefusedAnswer, Reply};
use tau_protocol::{ApprovalId, GrantRequest};
use tau_state::{Answered, ApprovalRow, ApprovalState};

use crate::App;
use crate::api::{body_error, current_card_sha256, error_response, hub_error, row_json};

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum Decision {
    Approve,
    Reject,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Answer {
    decision: Decision,
    /// What the person typed for the question's second step: the device's name or the
    /// number on its card.
    #[serde(default)]
    confirm: Option<String>,
    /// "Yes, and allow this again": the grant's scope, hours and uses, with an approve
    /// of a question that offered one.
    #[serde(default)]
    grant: Option<GrantRequest>,
    /// The `card_sha256` of the card the person approves, as the question was listed
    /// with it. Needed by every approving answer; a reject may leave it out.
    #[serde(default)]
    card_sha256: Option<String>,
    /// The passkey assertion a lock-class question takes on TauBar once anyone has a
    /// passkey: it stands in for the typed second step.
    #[serde(default)]
    step_up: Option<crate::step_up::StepUpAnswer>,
}

/// The 409's `error` for an answer nothing waited for.
pub(crate) const NOT_USED_TEXT: &str = "nothing waits for this answer any more (no paused turn is left to run the call), so it was not used and nothing ran; the question is closed";

/// The 400 of a grant asked with a passkey's yes.
pub(crate) const NO_GRANT_WITH_PASSKEY: &str =
    "a question that takes a passkey is asked every time: it takes no grant";

/// The 403 of a passkey's yes given by someone signed in as another person.
pub(crate) const PASSKEY_NOT_THE_SPEAKERS: &str =
    "that passkey is another person's: a yes takes a passkey of the person who gives it";

/// Longer than any device name or number: not an answer to a second step.
const MAX_CONFIRM_CHARS: usize = 64;

/// Why a yes did not count before anything was decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CardRefusal {
    /// The answer carried no `card_sha256`.
    Missing,
    /// It carried one that is not the card's as it reads now: another card, or this one
    /// before it changed.
    Stale,
}

impl CardRefusal {
    /// `refused` in the 422's body: what a script can act on.
    pub(crate) fn code(self) -> &'static str {
        match self {
            Self::Missing => "card_sha256_missing",
            Self::Stale => "card_sha256_stale",
        }
    }

    /// The 422's `error`.
    pub(crate) fn text(self) -> &'static str {
        match self {
            Self::Missing => {
                "an approving answer must carry \"card_sha256\", the hash of the card it approves: read the question first (GET /api/approvals); nothing was decided"
            }
            Self::Stale => {
                "\"card_sha256\" is not the hash of this question's card as it reads now: read the question again (GET /api/approvals); nothing was decided"
            }
        }
    }

    /// The `answer_refused` line's `reason`.
    pub(crate) fn reason(self) -> &'static str {
        match self {
            Self::Missing => "a yes without the card's hash",
            Self::Stale => "a yes to a card that is not the current one",
        }
    }
}

/// 1. no hash -> refused; 2. another hash -> refused; 3. the card's own -> counts.
pub(crate) fn card_refusal(current: &str, sent: Option<&str>) -> Option<CardRefusal> {
    match sent {
        None => Some(CardRefusal::Missing),
        Some(sent) if sent == current => None,
        Some(_) => Some(CardRefusal::Stale),
    }
}

/// `POST /api/approvals/{id}`: 200 with the row when this answer decided it, 409 with
/// the row when it was decided before or nothing waited for the answer (then closed, the
/// answer not used); 422 for a yes that does not name the current card.
pub(crate) async fn answer(
    State(app): State<App>,
    Extension(speaker): Extension<crate::auth::Speaker>,
    Path(id): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let body = match body {
        Ok(body) => body,
        Err(rejection) => return body_error(&rejection),
    };
    let Ok(Answer {
        decision,
        confirm,
        grant,
        card_sha256,
        step_up,
    }) = serde_json::from_slice::<Answer>(&body)
    else {
        return error_response(
            StatusCode::BAD_REQUEST,
            "the body must be {\"decision\": \"approve\", \"card_sha256\": \"...\"} or {\"decision\": \"reject\"}, with \"confirm\" for a question's second step or \"grant\" ({\"scope\": \"conversation\" or \"channel\", \"hours\", \"max_uses\"}) to allow the same call again",
        );
    };
    if confirm
        .as_ref()
        .is_some_and(|typed| typed.chars().count() > MAX_CONFIRM_CHARS)
    {
        return error_response(StatusCode::BAD_REQUEST, "confirm is too long");
    }
    let Ok(id) = ApprovalId::parse(&id) else {
        return error_response(StatusCode::NOT_FOUND, "no such approval");
    };
    let mut reply = match (decision, confirm, grant) {
        (Decision::Approve, Some(_), Some(_)) => {
            return error_response(
                StatusCode::BAD_REQUEST,
                "a question with a second step is asked every time: it takes no grant",
            );
        }
        (Decision::Reject, _, Some(_)) => {
            return error_response(
                StatusCode::BAD_REQUEST,
                "a grant comes only with \"decision\": \"approve\"",
            );
        }
        (Decision::Approve, Some(typed), None) => Reply::Confirm(typed),
        (Decision::Approve, None, Some(wanted)) => Reply::ApproveWithGrant(wanted),
        (Decision::Approve, None, None) => Reply::Approve,
        (Decision::Reject, _, None) => Reply::Reject,
    };
    let approving = match &reply {
        Reply::Approve | Reply::Confirm(_) | Reply::ApproveWithGrant(_) | Reply::Passkey => true,
        Reply::Reject => false,
    };
    // A question that is not this person's to answer is refused as such (403, audited
    // with who tried), whatever card it names.
    let theirs = match app.hub.question(&id) {
        Ok(Some(row)) => app.hub.waits_for(&row, &speaker.0),
        Ok(None) | Err(_) => true,
    };
    if approving
        && theirs
        && let Some(refused) = refused_card(&app, &speaker, &id, card_sha256.as_deref())
    {
        return refused;
    }
    let mut user = None;
    if approving && let Ok(Some(row)) = answerable(&app, &id) {
        match crate::signin::checked_step_up(&app, &row, step_up.as_ref(), speaker.0.as_str()) {
            Err(refused) => return *refused,
            // The passkey stands in for the typed second step; it is asked every time, so
            // it makes no grant.
            Ok(Some(person)) => {
                // The passkey proves who says yes: the person speaking, no one else.
                if person != speaker.0.as_str() {
                    return error_response(StatusCode::FORBIDDEN, PASSKEY_NOT_THE_SPEAKERS);
                }
                if let Reply::ApproveWithGrant(_) = reply {
                    return error_response(StatusCode::BAD_REQUEST, NO_GRANT_WITH_PASSKEY);
                }
                reply = Reply::Passkey;
                user = Some(person);
            }
            Ok(None) => {}
        }
    }
    match app.hub.answer_as(&speaker.0, user, &id, reply).await {
        Ok(Answered::Decided(row)) => Json(row_json(&app, &row, false)).into_response(),
        Ok(Answered::AlreadyDecided(row)) => (
            StatusCode::CONFLICT,
            Json(json!({
                "error": format!("the question was already {}", row.state.as_str()),
                "approval": row_json(&app, &row, false),
            })),
        )
            .into_response(),
        // A yes without the second step (or with a wrong one) decides nothing.
        Ok(Answered::StepMissing(row)) => (
            StatusCode::UNPROCESSABLE_ENTITY,
            Json(json!({
                "error": "this question takes a second step: send \"confirm\" with the device's name or the number on its card; the question stays open",
                "approval": row_json(&app, &row, false),
            })),
        )
            .into_response(),
        Ok(Answered::NotFound) => error_response(StatusCode::NOT_FOUND, "no such approval"),
        // Nothing waited for it any more: not used, the question closed.
        Ok(Answered::NotUsed(row)) => (
            StatusCode::CONFLICT,
            Json(json!({
                "error": NOT_USED_TEXT,
                "refused": "not_awaited",
                "approval": row_json(&app, &row, false),
            })),
        )
            .into_response(),
        Err(error) => hub_error(&error),
    }
}

/// The answer to a yes that does not name the card of question `id` as it reads now (a
/// 422, recorded as an `answer_refused` line; a decided question's too, so a yes never
/// counts without its hash), or a 404 for a question this page does not have or has not
/// shown; `None` when the yes may go on to be decided. The 422 does not say the current
/// hash: whoever answers reads the question first.
fn refused_card(
    app: &App,
    speaker: &crate::auth::Speaker,
    id: &ApprovalId,
    sent: Option<&str>,
) -> Option<Response> {
    let row = match answerable(app, id) {
        Ok(Some(row)) => row,
        Ok(None) => return Some(error_response(StatusCode::NOT_FOUND, "no such approval")),
        Err(error) => return Some(hub_error(&error)),
    };
    let refusal = card_refusal(&current_card_sha256(app, &row), sent)?;
    tracing::info!(approval_id = %id, reason = refusal.reason(), "a yes that did not count");
    app.hub.refused_answer(RefusedAnswer {
        approval_id: Some(id.to_string()),
        user: None,
        // Named only in a home that names people: a one-person home's line is as before.
        person: app
            .hub
            .household()
            .is_named()
            .then(|| speaker.0.to_string()),
        place: None,
        reason: refusal.reason().to_owned(),
        count: None,
    });
    Some(
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            Json(json!({ "error": refusal.text(), "refused": refusal.code() })),
        )
            .into_response(),
    )
}

/// Question `id` as this page may answer it: its own channel's, and shown (a question
/// stored and not shown yet is nobody's to answer, and is not named here either).
fn answerable(app: &App, id: &ApprovalId) -> Result<Option<ApprovalRow>, HubError> {
    let Some(row) = app.hub.question(id)? else {
        return Ok(None);
    };
    if row.channel != app.hub.channel() {
        return Ok(None);
    }
    if row.state == ApprovalState::Pending {
        let shown = app.hub.approvals(Some(ApprovalState::Pending))?;
        if !shown.iter().any(|waiting| waiting.id == row.id) {
            // Decided between the two reads (another answer, on this hub or another
            // sharing the store): the question as it is now, so the answer hears that it
            // was already decided rather than that there is no such question.
            return Ok(app
                .hub
                .question(id)?
                .filter(|now| now.state != ApprovalState::Pending));
        }
    }
    Ok(Some(row))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn a_yes_counts_only_with_the_current_cards_hash() {
        let current = "ab".repeat(32);
        let table = [
            (None, Some(CardRefusal::Missing)),
            (Some(String::new()), Some(CardRefusal::Stale)),
            (Some("AB".repeat(32)), Some(CardRefusal::Stale)),
            (Some(format!("{current} ")), Some(CardRefusal::Stale)),
            (Some("cd".repeat(32)), Some(CardRefusal::Stale)),
            (Some(current.clone()), None),
        ];
        for (sent, expected) in table {
            assert_eq!(
                card_refusal(&current, sent.as_deref()),
                expected,
                "{sent:?}"
            );
        }
    }

    #[test]
    fn a_refusal_says_what_to_do_and_is_recorded_in_few_words() {
        assert_eq!(
            [CardRefusal::Missing, CardRefusal::Stale].map(|r| (r.code(), r.reason())),
            [
                ("card_sha256_missing", "a yes without the card's hash"),
                (
                    "card_sha256_stale",
                    "a yes to a card that is not the current one"
                ),
            ]
        );
        for refusal in [CardRefusal::Missing, CardRefusal::Stale] {
            assert!(refusal.text().contains("GET /api/approvals"));
            assert!(refusal.text().ends_with("nothing was decided"));
        }
    }
}
