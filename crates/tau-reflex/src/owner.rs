//! Whose a routine is. With no `[[people]]` a routine has no owner: tau's one person answers
//! everything, as before people could be named. With people, a routine is one person's:
//! its conversation, its questions and its pushes are theirs. `owner` names them; with one
//! person it may be left out. With several, a routine from `tau.toml` must name one: a
//! routine that may open a door is not given to whoever happens to be listed first.

use tau_core::Household;
use tau_protocol::PersonName;

use crate::def::{FieldError, RoutineDef};
use crate::validate::{AskChannel, Origin};

/// The owner of the routine `def` describes, checked against `people`.
pub(crate) fn owner_of(
    def: &RoutineDef,
    origin: &Origin,
    people: &Household,
    ask: Option<AskChannel>,
) -> Result<Option<PersonName>, FieldError> {
    if !people.is_named() {
        return match &def.owner {
            None => Ok(None),
            Some(name) => Err(FieldError::new(
                "owner",
                format!(
                    "names '{name}', but tau.toml names no [[people]]; add them (`tau people add {name}`) or leave owner out"
                ),
            )),
        };
    }
    let owner = match (&def.owner, people.people(), origin) {
        (Some(name), _, _) => people.get(name).map(|p| p.name.clone()).ok_or_else(|| {
            FieldError::new(
                "owner",
                format!("no person is called '{name}' in [[people]]; `tau people list` names them"),
            )
        })?,
        (None, [only], _) => only.name.clone(),
        // Made in a conversation before routines had owners: the first person's, as a
        // conversation from before people were named is.
        (None, _, Origin::Conversation { .. }) => people.first(),
        (None, _, Origin::Config) => {
            return Err(FieldError::new(
                "owner",
                "is missing: tau.toml names several people, so say whose routine this is (owner = \"NAME\"); its questions are theirs to answer",
            ));
        }
    };
    if ask == Some(AskChannel::Telegram)
        && people
            .get(owner.as_str())
            .and_then(|p| p.telegram)
            .is_none()
    {
        return Err(FieldError::new(
            "ask",
            format!(
                "\"telegram\" asks the routine's owner '{owner}' in their own chat, and they have no telegram id in [[people]]"
            ),
        ));
    }
    Ok(Some(owner))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use tau_core::PersonDef;

    fn household(people: &[(&str, Option<i64>)]) -> Household {
        let defs: Vec<PersonDef> = people
            .iter()
            .map(|(name, telegram)| PersonDef {
                name: (*name).into(),
                telegram: *telegram,
                unix_user: None,
                language: None,
            })
            .collect();
        Household::from_config(&defs).unwrap()
    }

    fn def(owner: Option<&str>) -> RoutineDef {
        RoutineDef {
            name: "porch".into(),
            owner: owner.map(str::to_owned),
            ..RoutineDef::default()
        }
    }

    fn owner(
        owner: Option<&str>,
        origin: &Origin,
        people: &Household,
        ask: Option<AskChannel>,
    ) -> Result<Option<String>, String> {
        owner_of(&def(owner), origin, people, ask)
            .map(|o| o.map(|p| p.to_string()))
            .map_err(|e| e.in_routine("porch").to_string())
    }

    #[test]
    fn without_people_a_routine_has_no_owner_and_naming_one_is_an_error() {
        let nobody = Household::default();
        assert_eq!(owner(None, &Origin::Config, &nobody, None), Ok(None));
        assert_eq!(
            owner(Some("ana"), &Origin::Config, &nobody, None),
            Err("routines.porch.owner: names 'ana', but tau.toml names no [[people]]; add them (`tau people add ana`) or leave owner out".into())
        );
    }

    #[test]
    fn one_person_owns_a_routine_that_names_nobody_and_several_must_be_named() {
        let alone = household(&[("bob", None)]);
        assert_eq!(
            owner(None, &Origin::Config, &alone, None),
            Ok(Some("bob".into()))
        );
        let two = household(&[("ana", None), ("bob", None)]);
        assert_eq!(
            owner(Some("bob"), &Origin::Config, &two, None),
            Ok(Some("bob".into()))
        );
        assert_eq!(
            owner(None, &Origin::Config, &two, None),
            Err("routines.porch.owner: is missing: tau.toml names several people, so say whose routine this is (owner = \"NAME\"); its questions are theirs to answer".into())
        );
        assert_eq!(
            owner(Some("cyd"), &Origin::Config, &two, None),
            Err("routines.porch.owner: no person is called 'cyd' in [[people]]; `tau people list` names them".into())
        );
        // Made in a conversation before routines had owners: the first person's.
        let made = Origin::Conversation {
            approved_hash: String::new(),
        };
        assert_eq!(owner(None, &made, &two, None), Ok(Some("ana".into())));
    }

    #[test]
    fn asking_on_telegram_takes_an_owner_with_a_telegram_id() {
        let two = household(&[("ana", Some(11)), ("bob", None)]);
        let telegram = Some(AskChannel::Telegram);
        assert_eq!(
            owner(Some("ana"), &Origin::Config, &two, telegram),
            Ok(Some("ana".into()))
        );
        assert_eq!(
            owner(Some("bob"), &Origin::Config, &two, telegram),
            Err("routines.porch.ask: \"telegram\" asks the routine's owner 'bob' in their own chat, and they have no telegram id in [[people]]".into())
        );
        assert_eq!(
            owner(Some("bob"), &Origin::Config, &two, Some(AskChannel::Web)),
            Ok(Some("bob".into()))
        );
    }
}
