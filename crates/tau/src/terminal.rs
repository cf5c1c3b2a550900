//! Who sits at the terminal (`tau chat`, `tau tui`) and what their answers there can do:
//! their conversations are theirs, their answers and grants name them, and a yes that
//! takes a passkey approves nothing there (the terminal cannot ask for one).

use std::sync::Arc;

use tau_core::{AuditEvent, EventBus};
use tau_protocol::{ApprovalQuestion, PersonName, SessionId};
use tau_state::StateDb;
use tau_terminal::PasskeyQuestions;

use crate::context::Context;
use crate::errors::usage;

/// The person at this terminal as answers and grants name them: `--person`, else the
/// person whose `unix_user` this account is, else the only person; none in a home that
/// names nobody (its lines read as before). A `--person` nobody is called exits 2.
pub(crate) fn terminal_person(
    ctx: &Context,
    flag: Option<&str>,
) -> anyhow::Result<Option<PersonName>> {
    let person = crate::people::at_terminal(ctx, flag)?;
    Ok(ctx.loaded.config.household().is_named().then_some(person))
}

/// Makes the conversation `session` the terminal person's: a new one is claimed for them;
/// one another person holds is not theirs to open (a conversation never changes hands).
/// A stored one nobody claimed stays as it was (the first person's, as the hub reads it).
pub(crate) fn claim(
    state: &StateDb,
    session: &SessionId,
    person: Option<&PersonName>,
    stored: u64,
) -> anyhow::Result<()> {
    let Some(person) = person else {
        return Ok(());
    };
    let people = state.people();
    let owner = match people.conversation_person(session)? {
        Some(owner) => owner,
        None if stored == 0 => people.claim_conversation(session, person)?,
        None => return Ok(()),
    };
    if owner != *person {
        return Err(usage(format!(
            "session {session} is {owner}'s conversation, not {person}'s; a conversation stays its person's"
        )));
    }
    Ok(())
}

/// Which of this terminal's questions take a passkey: once anyone has enrolled one, a
/// lock-class question (one with a second step) and a `[tools.step_up]` tool. A store
/// that cannot say whether anyone has one counts as one that does. A yes typed to such a
/// question is audited as `answer_refused` on `events`, given on `channel`.
pub(crate) fn passkey_questions(
    ctx: &Context,
    state: &StateDb,
    events: EventBus,
    person: Option<&PersonName>,
    channel: &'static str,
) -> PasskeyQuestions {
    let tools = ctx.loaded.config.tools.passkey_tools();
    let passkeys = state.passkeys();
    let approvers = crate::people::Approvers::from_config(&ctx.loaded.config);
    let named = ctx.loaded.config.household().is_named();
    let at_terminal = person.cloned();
    let person = person.map(PersonName::to_string);
    PasskeyQuestions {
        takes_passkey: Arc::new(move |question: &ApprovalQuestion| {
            takes_passkey(question, &tools, || passkeys.any())
        }),
        not_yours: Arc::new(move |question: &ApprovalQuestion| {
            let only = approvers.of(&question.tool, &question.arguments);
            not_yours(named, only, at_terminal.as_ref())
        }),
        refused: Arc::new(move |question: &ApprovalQuestion, reason: Option<&str>| {
            events.emit(&AuditEvent::AnswerRefused {
                channel: channel.to_owned(),
                approval_id: Some(question.approval_id.to_string()),
                user: None,
                person: person.clone(),
                place: None,
                reason: reason
                    .unwrap_or(tau_hub::PASSKEY_ELSEWHERE_REASON)
                    .to_owned(),
                count: None,
            });
        }),
    }
}

/// Why a question whose `approvers` are `only` is not `person`'s to answer, in the hub's
/// words; `None` when it is, or the home names nobody. A terminal without a person (which
/// a home naming people does not start) answers none of them.
fn not_yours(
    named: bool,
    only: Option<Vec<PersonName>>,
    person: Option<&PersonName>,
) -> Option<String> {
    let only = only.filter(|only| named && !only.is_empty())?;
    match person {
        Some(person) if only.contains(person) => None,
        _ => Some(tau_hub::only_approvers(&only)),
    }
}

/// Whether `question` takes a passkey: it is lock-class (it has a second step) or its tool
/// is one of `tools`, and `anyone` says someone has a passkey, or cannot say.
fn takes_passkey<E: std::fmt::Display>(
    question: &ApprovalQuestion,
    tools: &[String],
    anyone: impl FnOnce() -> Result<bool, E>,
) -> bool {
    (question.card.confirm.is_some() || tools.contains(&question.tool))
        && anyone().unwrap_or_else(|error| {
            tracing::error!(%error, "passkeys could not be read; the question takes one");
            true
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn question(tool: &str, second_step: bool) -> ApprovalQuestion {
        ApprovalQuestion {
            approval_id: tau_protocol::ApprovalId::parse("ap_1").unwrap(),
            tool: tool.into(),
            tier: tau_protocol::Tier::Physical,
            effect: "acts".into(),
            arguments: json!({}),
            call_id: "t1".into(),
            channel: tau_terminal::TERMINAL_CHANNEL.into(),
            deadline: None,
            card: tau_protocol::CallCard {
                confirm: second_step.then(|| tau_protocol::ConfirmStep {
                    word: "garage-door".into(),
                    code: "47".into(),
                }),
                ..Default::default()
            },
            grant: None,
        }
    }

    #[test]
    fn only_the_approvers_answer_a_question_that_names_them() {
        let names = |list: &[&str]| {
            list.iter()
                .map(|name| PersonName::parse(name).unwrap())
                .collect::<Vec<_>>()
        };
        let ana = PersonName::parse("ana").unwrap();
        let bob = PersonName::parse("bob").unwrap();
        let refused = Some("not yours: only ana may answer it".to_owned());
        assert_eq!(not_yours(true, Some(names(&["ana"])), Some(&bob)), refused);
        assert_eq!(not_yours(true, Some(names(&["ana"])), Some(&ana)), None);
        assert_eq!(
            not_yours(true, Some(names(&["ana", "bob"])), Some(&bob)),
            None
        );
        // No person at the terminal: nobody there may answer it.
        assert_eq!(not_yours(true, Some(names(&["ana"])), None), refused);
        // A question naming nobody is the person's; a home naming nobody is as before.
        assert_eq!(not_yours(true, None, Some(&bob)), None);
        assert_eq!(not_yours(true, Some(Vec::new()), Some(&bob)), None);
        assert_eq!(not_yours(false, Some(names(&["ana"])), None), None);
    }

    #[test]
    fn a_lock_class_or_step_up_question_takes_a_passkey_once_anyone_may_have_one() {
        let tools = vec!["run_command".to_owned()];
        let has = |answer: Result<bool, &'static str>| move || answer;
        for (asked, anyone, takes) in [
            (question("device_set", true), has(Ok(true)), true),
            (question("run_command", false), has(Ok(true)), true),
            (question("write_file", false), has(Ok(true)), false),
            (question("device_set", true), has(Ok(false)), false),
            // A store that cannot say counts as one where someone has a passkey.
            (question("device_set", true), has(Err("store closed")), true),
            (
                question("run_command", false),
                has(Err("store closed")),
                true,
            ),
            (
                question("write_file", false),
                has(Err("store closed")),
                false,
            ),
        ] {
            assert_eq!(takes_passkey(&asked, &tools, anyone), takes, "{asked:?}");
        }
    }
}
