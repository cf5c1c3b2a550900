//! The history of decisions: `GET /api/decisions`, what was decided about each tier-2 call
//! of the last [`DECISION_HISTORY_DAYS`](tau_protocol::DECISION_HISTORY_DAYS) days (who decided, on which channel, when) and what ran.
//! The host reads them from its audit log through [`Decisions`]; this crate knows no file.
//! Each comes with the lookalike warnings its question's card would have had.

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use serde::Deserialize;
use serde_json::Value;
use tau_core::{CardWriter, LookalikeWriter};
use tau_protocol::{CallCard, DecisionOutcome, DecisionRow};

use crate::App;
use crate::api::{View, error, view};

/// Items a request gets unless it asks for another count.
const DEFAULT_LIMIT: usize = 200;
/// The most items one request may ask for.
const MAX_LIMIT: usize = 1000;

/// The history could not be read.
#[derive(Debug, thiserror::Error)]
pub enum DecisionsError {
    /// The audit log the history is read from could not be read.
    #[error("the decisions could not be read: {0}")]
    Read(#[source] std::io::Error),
}

/// What the host offers about past decisions.
pub trait Decisions: Send + Sync {
    /// Every decision of the last [`DECISION_HISTORY_DAYS`](tau_protocol::DECISION_HISTORY_DAYS) days, newest first.
    fn recent(&self) -> Result<Vec<DecisionRow>, DecisionsError>;
}

/// The parameters of `GET /api/decisions`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Wanted {
    #[serde(default)]
    tool: Option<String>,
    #[serde(default)]
    outcome: Option<String>,
    #[serde(default)]
    limit: Option<String>,
    #[serde(default)]
    display: Option<String>,
}

/// The parameters, checked: `Err` is the text of a 400.
fn checked(
    wanted: Wanted,
) -> Result<(Option<String>, Option<DecisionOutcome>, usize, View), String> {
    let limit = match wanted.limit.as_deref() {
        None => DEFAULT_LIMIT,
        Some(text) => match text.parse::<usize>() {
            Ok(n) if (1..=MAX_LIMIT).contains(&n) => n,
            _ => return Err(format!("limit must be a number from 1 to {MAX_LIMIT}")),
        },
    };
    let display = match wanted.display.as_deref() {
        None | Some("false") => false,
        Some("true") => true,
        Some(_) => return Err("display must be true or false".to_owned()),
    };
    let outcome = match wanted.outcome.as_deref() {
        None => None,
        Some(text) => match DecisionOutcome::parse(text) {
            Some(outcome) => Some(outcome),
            None => {
                let words: Vec<_> = DecisionOutcome::ALL.map(DecisionOutcome::as_str).into();
                return Err(format!("outcome must be one of {}", words.join(", ")));
            }
        },
    };
    if wanted.tool.as_deref().is_some_and(str::is_empty) {
        return Err("tool must name a tool".to_owned());
    }
    Ok((wanted.tool, outcome, limit, View { display }))
}

/// `GET /api/decisions`: the decisions of the last 30 days, newest first; `tool=NAME` and
/// `outcome=WORD` keep those matching, `limit=N` the first N; with `display=true` every
/// string as the display function shows it (the arguments are the model's).
pub(crate) async fn list(
    State(app): State<App>,
    query: Result<Query<Wanted>, QueryRejection>,
) -> Response {
    let bad = |text: &str| error(StatusCode::BAD_REQUEST, text).into_response();
    let Ok(Query(wanted)) = query else {
        return bad("the parameters are tool, outcome, limit and display");
    };
    let (tool, outcome, limit, wanted) = match checked(wanted) {
        Ok(parsed) => parsed,
        Err(text) => return bad(&text),
    };
    let Some(source) = app.decisions.clone() else {
        return Json(Value::Array(Vec::new())).into_response();
    };
    let read = tokio::task::spawn_blocking(move || source.recent()).await;
    let records = match read {
        Ok(Ok(records)) => records,
        Ok(Err(failure)) => {
            tracing::error!(%failure, "web request failed");
            return error(StatusCode::INTERNAL_SERVER_ERROR, &failure.to_string()).into_response();
        }
        Err(failure) => {
            tracing::error!(%failure, "web request failed");
            return error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the decisions could not be read",
            )
            .into_response();
        }
    };
    let kept: Vec<Value> = records
        .into_iter()
        .filter(|r| tool.as_deref().is_none_or(|t| r.tool == t))
        .filter(|r| outcome.is_none_or(|o| r.outcome == o))
        .take(limit)
        .map(|record| flagged(&record))
        .collect();
    Json(view(Value::Array(kept), &wanted)).into_response()
}

/// A decision as the API lists it: the record, `lookalikes`, the warnings a card writes
/// about its arguments' words that a reader could take for others (tau-core's
/// [`LookalikeWriter`], the same notes as on the question's card; none for plain text),
/// and `sources`, the notes its card had about where its values came from (none when the
/// conversation read nothing from outside).
fn flagged(record: &DecisionRow) -> Value {
    let mut card = CallCard::default();
    LookalikeWriter.write(&record.tool, &record.arguments, &mut card);
    let sources = record
        .provenance
        .as_ref()
        .map(tau_core::provenance::card_notes)
        .unwrap_or_default();
    let mut value = serde_json::to_value(record).unwrap_or(Value::Null);
    if let Value::Object(fields) = &mut value {
        let notes = serde_json::to_value(card.notes).unwrap_or_default();
        fields.insert("lookalikes".into(), notes);
        let sources = serde_json::to_value(sources).unwrap_or_default();
        fields.insert("sources".into(), sources);
    }
    value
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::collections::BTreeMap;

    use super::*;

    fn wanted(pairs: &[(&str, &str)]) -> Result<Wanted, serde_json::Error> {
        let map: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        serde_json::from_value(serde_json::to_value(map).unwrap())
    }

    #[test]
    fn the_parameters_are_checked_before_anything_is_read() {
        let ok = checked(wanted(&[("tool", "run_command"), ("limit", "5")]).unwrap()).unwrap();
        assert_eq!((ok.0.as_deref(), ok.2), (Some("run_command"), 5));
        assert_eq!(checked(Wanted::default()).unwrap().2, DEFAULT_LIMIT);
        for bad in [
            [("limit", "0")],
            [("limit", "1001")],
            [("limit", "-1")],
            [("outcome", "maybe")],
            [("display", "yes")],
            [("tool", "")],
        ] {
            assert!(checked(wanted(&bad).unwrap()).is_err(), "{bad:?}");
        }
        assert!(wanted(&[("since", "1")]).is_err());
    }

    fn record(arguments: Value) -> DecisionRow {
        DecisionRow {
            at: "2026-12-01T10:00:00Z".into(),
            tool: "run_command".into(),
            arguments,
            decision: tau_protocol::Decision::Approved,
            outcome: DecisionOutcome::Approved,
            decided_by: tau_protocol::DecidedBy::person("web"),
            channel: Some("web".into()),
            session: "web-1".into(),
            tool_use_id: "t1".into(),
            approval_id: None,
            ran: None,
            provenance: None,
        }
    }

    #[test]
    fn a_lookalike_is_flagged_as_its_card_flags_it_and_plain_text_is_not() {
        let odd = flagged(&record(serde_json::json!({"command": "sh setup.\u{455}h"})));
        assert_eq!(
            odd["lookalikes"],
            serde_json::json!([{"level": "warning", "label": "lookalike",
                "text": "command: \"setup.\u{455}h\" mixes Latin and Cyrillic: U+0455 Cyrillic, looks like \"s\""}])
        );
        assert_eq!(odd["tool"], "run_command");
        let plain = flagged(&record(
            serde_json::json!({"command": "echo привет >> заметки"}),
        ));
        assert_eq!(plain["lookalikes"], serde_json::json!([]));
    }

    #[test]
    fn a_history_that_does_not_read_says_so_and_keeps_why() {
        use std::error::Error as _;
        let error = DecisionsError::Read(std::io::Error::other("disk gone"));
        assert_eq!(
            error.to_string(),
            "the decisions could not be read: disk gone"
        );
        assert_eq!(
            error.source().map(ToString::to_string).as_deref(),
            Some("disk gone")
        );
    }
}
