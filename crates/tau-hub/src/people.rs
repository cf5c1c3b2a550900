//! Whose each conversation is, and who may answer its questions. A conversation is the
//! person's who started it; its questions are theirs to answer, unless the tool, device
//! or MCP server asked for names `approvers`: then only those people may, wherever the
//! question was asked. With no `[[people]]` there is one person and every answer is
//! theirs, as before.

use std::sync::Arc;

use tau_core::{AuditEvent, Household};
use tau_protocol::{PersonName, SessionId};
use tau_state::ApprovalRow;

use crate::HubError;
use crate::hub::Hub;

/// Who alone may answer a question (the `approvers` its device, tool or server names);
/// `None` when it names nobody and the conversation's person answers.
pub type ApproversOf = dyn Fn(&ApprovalRow) -> Option<Vec<PersonName>> + Send + Sync;

/// The household as the hub needs it.
#[derive(Clone)]
pub struct HubPeople {
    pub household: Household,
    pub approvers: Arc<ApproversOf>,
}

impl Default for HubPeople {
    fn default() -> Self {
        Self {
            household: Household::default(),
            approvers: Arc::new(|_| None),
        }
    }
}

impl std::fmt::Debug for HubPeople {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HubPeople")
            .field("household", &self.household)
            .finish_non_exhaustive()
    }
}

/// Why an answer by anyone but `approvers` is not theirs to give, as the audit line and
/// every channel say it.
pub fn only_approvers(approvers: &[PersonName]) -> String {
    let names: Vec<&str> = approvers.iter().map(PersonName::as_str).collect();
    format!("not yours: only {} may answer it", names.join(", "))
}

/// Why an answer was not the answerer's to give, as the audit line says it.
pub(crate) fn not_theirs(
    people: &HubPeople,
    conversation_person: &PersonName,
    row: &ApprovalRow,
    person: Option<&PersonName>,
) -> Option<String> {
    if !people.household.is_named() {
        return None;
    }
    let Some(person) = person else {
        return Some("not yours: the channel did not say who answered".to_owned());
    };
    match (people.approvers)(row) {
        Some(approvers) if !approvers.is_empty() => {
            (!approvers.contains(person)).then(|| only_approvers(&approvers))
        }
        _ => (person != conversation_person)
            .then(|| format!("not yours: the conversation is {conversation_person}'s")),
    }
}

impl Hub {
    pub fn household(&self) -> &Household {
        &self.inner.options.people.household
    }

    /// Whose conversation `session` is: as recorded when it started, else (a conversation
    /// from before people were named) the first person's.
    pub fn person_of(&self, session: &SessionId) -> Result<PersonName, HubError> {
        Ok(self
            .inner
            .state
            .people()
            .conversation_person(session)?
            .unwrap_or_else(|| self.household().first()))
    }

    /// Records `person` as whose conversation `session` is, when nobody was yet; the
    /// person it belongs to. A home without `[[people]]` records nothing: its one person
    /// is the first person of the household it may name later, who so keeps them.
    pub fn claim_conversation(
        &self,
        session: &SessionId,
        person: &PersonName,
    ) -> Result<PersonName, HubError> {
        if !self.household().is_named() {
            return self.person_of(session);
        }
        Ok(self
            .inner
            .state
            .people()
            .claim_conversation(session, person)?)
    }

    /// Why `person` may not answer `row`; `None` when they may.
    pub fn answer_refusal(
        &self,
        row: &ApprovalRow,
        person: Option<&PersonName>,
    ) -> Result<Option<String>, HubError> {
        if !self.household().is_named() {
            return Ok(None);
        }
        let owner = self.person_of(&row.session)?;
        Ok(not_theirs(&self.inner.options.people, &owner, row, person))
    }

    /// Whether `row` waits for `person`: a question they may answer.
    pub fn waits_for(&self, row: &ApprovalRow, person: &PersonName) -> bool {
        matches!(self.answer_refusal(row, Some(person)), Ok(None))
    }

    /// Records an answer refused because it was not the answerer's.
    pub(crate) fn audit_not_theirs(
        &self,
        channel: &str,
        row: &ApprovalRow,
        user: Option<String>,
        person: Option<&PersonName>,
        reason: String,
    ) {
        self.bus(&row.session).emit(&AuditEvent::AnswerRefused {
            channel: channel.to_owned(),
            approval_id: Some(row.id.to_string()),
            user,
            person: person.map(ToString::to_string),
            place: None,
            reason,
            count: None,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;
    use tau_core::PersonDef;
    use tau_protocol::{ApprovalId, CallCard, Tier};
    use tau_state::NewApproval;

    fn name(text: &str) -> PersonName {
        PersonName::parse(text).unwrap()
    }

    fn row(tool: &str) -> ApprovalRow {
        NewApproval {
            id: ApprovalId::parse("ap_1").unwrap(),
            session: SessionId::parse("web-1").unwrap(),
            call_id: "t1".into(),
            tool: tool.into(),
            tier: Tier::Physical,
            effect: "opens the door".into(),
            arguments: json!({}),
            channel: "web".into(),
            created_at: "2026-12-06T00:00:00Z".parse().unwrap(),
            deadline: "2026-12-06T00:30:00Z".parse().unwrap(),
            card: CallCard::default(),
        }
        .into_row()
    }

    fn household(names: &[&str]) -> Household {
        let defs: Vec<PersonDef> = names
            .iter()
            .map(|n| PersonDef {
                name: (*n).into(),
                telegram: None,
                unix_user: None,
                language: None,
            })
            .collect();
        Household::from_config(&defs).unwrap()
    }

    #[test]
    fn the_conversations_person_answers_unless_approvers_are_named() {
        let people = HubPeople {
            household: household(&["ana", "bob", "cyd"]),
            approvers: Arc::new(|row| {
                (row.tool == "front_door").then(|| vec![PersonName::parse("cyd").unwrap()])
            }),
        };
        let ana = name("ana");
        let lamp = row("lamp");
        assert_eq!(not_theirs(&people, &ana, &lamp, Some(&ana)), None);
        assert_eq!(
            not_theirs(&people, &ana, &lamp, Some(&name("bob"))).as_deref(),
            Some("not yours: the conversation is ana's")
        );
        assert_eq!(
            not_theirs(&people, &ana, &lamp, None).as_deref(),
            Some("not yours: the channel did not say who answered")
        );
        let door = row("front_door");
        assert_eq!(
            not_theirs(&people, &ana, &door, Some(&ana)).as_deref(),
            Some("not yours: only cyd may answer it")
        );
        assert_eq!(not_theirs(&people, &ana, &door, Some(&name("cyd"))), None);
    }

    #[test]
    fn without_people_every_answer_is_the_one_persons() {
        let people = HubPeople::default();
        let owner = PersonName::implicit();
        assert_eq!(not_theirs(&people, &owner, &row("lamp"), None), None);
    }
}
