//! `[[people]]`: the household, and who is speaking on each channel. With no `[[people]]`
//! tau knows one person, `owner`: whoever holds TauBar's token, Telegram's `owners`,
//! whoever sits at the terminal, exactly as before people could be named.

use serde::{Deserialize, Serialize};
use tau_protocol::PersonName;

use crate::config::ConfigError;
use crate::i18n::Language;

/// One `[[people]]` entry, as written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PersonDef {
    /// 3 to 32 of `a-z 0-9 -`.
    pub name: String,
    /// Their Telegram user id: they own the bot, and what they say there is theirs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub telegram: Option<i64>,
    /// The unix account whose terminal is theirs (`tau chat`, `tau tui`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unix_user: Option<String>,
    /// `en` or `tr`: the language tau speaks to them (else `[ui] language`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
}

/// A person of the household, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Person {
    pub name: PersonName,
    pub telegram: Option<i64>,
    pub unix_user: Option<String>,
    pub language: Option<Language>,
}

/// The household: the people `[[people]]` names, or the one implicit person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Household {
    people: Vec<Person>,
    /// False when `[[people]]` named nobody and [`PersonName::implicit`] stands alone.
    named: bool,
}

impl Default for Household {
    fn default() -> Self {
        Self {
            people: vec![Person {
                name: PersonName::implicit(),
                telegram: None,
                unix_user: None,
                language: None,
            }],
            named: false,
        }
    }
}

/// Why the terminal cannot say whose it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WhoError {
    #[error("no person is called '{0}' in [[people]]; `tau people list` names them")]
    Unknown(String),
    #[error(
        "tau.toml names several people and none has unix_user = \"{user}\"; say who you are with --person NAME"
    )]
    Ambiguous { user: String },
}

impl Household {
    /// Checks `[[people]]`: valid names, no name twice, no Telegram id or unix user on two
    /// people, a language tau speaks. Empty: the one implicit person.
    pub fn from_config(defs: &[PersonDef]) -> Result<Self, ConfigError> {
        if defs.is_empty() {
            return Ok(Self::default());
        }
        let mut people: Vec<Person> = Vec::with_capacity(defs.len());
        for (index, def) in defs.iter().enumerate() {
            let key = |field: &str| format!("people[{index}].{field}");
            let name = PersonName::parse(&def.name)
                .map_err(|e| ConfigError::new(key("name"), e.to_string()))?;
            if people.iter().any(|p| p.name == name) {
                return Err(ConfigError::new(
                    key("name"),
                    format!("'{name}' is named twice; each person once"),
                ));
            }
            if let Some(id) = def.telegram
                && let Some(other) = people.iter().find(|p| p.telegram == Some(id))
            {
                return Err(ConfigError::new(
                    key("telegram"),
                    format!(
                        "Telegram user {id} is already '{}'; one person each",
                        other.name
                    ),
                ));
            }
            if let Some(user) = &def.unix_user {
                if user.trim().is_empty() {
                    return Err(ConfigError::new(key("unix_user"), "must not be empty"));
                }
                if let Some(other) = people.iter().find(|p| p.unix_user.as_deref() == Some(user)) {
                    return Err(ConfigError::new(
                        key("unix_user"),
                        format!(
                            "unix user '{user}' is already '{}'; one person each",
                            other.name
                        ),
                    ));
                }
            }
            let language = match &def.language {
                None => None,
                Some(code) => Some(Language::parse(code).ok_or_else(|| {
                    ConfigError::new(
                        key("language"),
                        format!("tau speaks en and tr, got {code:?}"),
                    )
                })?),
            };
            people.push(Person {
                name,
                telegram: def.telegram,
                unix_user: def.unix_user.clone(),
                language,
            });
        }
        Ok(Self {
            people,
            named: true,
        })
    }

    /// Whether `[[people]]` names anyone (else tau is one implicit person, as before).
    pub fn is_named(&self) -> bool {
        self.named
    }

    pub fn people(&self) -> &[Person] {
        &self.people
    }

    pub fn get(&self, name: &str) -> Option<&Person> {
        self.people.iter().find(|p| p.name.as_str() == name)
    }

    /// Whose TauBar token file (`web-token`) is: the first person listed. A home that
    /// names people keeps the browser it had, as that person's.
    pub fn first(&self) -> PersonName {
        self.people
            .first()
            .map_or_else(PersonName::implicit, |p| p.name.clone())
    }

    /// The person with Telegram user id `id`; nobody for a stranger.
    pub fn by_telegram(&self, id: i64) -> Option<&PersonName> {
        self.people
            .iter()
            .find(|p| p.telegram == Some(id))
            .map(|p| &p.name)
    }

    /// The Telegram ids that own the bot: every person's with one.
    pub fn telegram_ids(&self) -> Vec<i64> {
        self.people.iter().filter_map(|p| p.telegram).collect()
    }

    /// Who sits at this terminal: `--person NAME` when given, else the person whose
    /// `unix_user` is `unix_user`, else the only person; several and none matching is
    /// refused, naming the flag.
    pub fn at_terminal(
        &self,
        flag: Option<&str>,
        unix_user: Option<&str>,
    ) -> Result<PersonName, WhoError> {
        if let Some(name) = flag {
            return self
                .get(name)
                .map(|p| p.name.clone())
                .ok_or_else(|| WhoError::Unknown(name.to_owned()));
        }
        if let Some(user) = unix_user
            && let Some(person) = self
                .people
                .iter()
                .find(|p| p.unix_user.as_deref() == Some(user))
        {
            return Ok(person.name.clone());
        }
        match self.people.as_slice() {
            [only] => Ok(only.name.clone()),
            _ => Err(WhoError::Ambiguous {
                user: unix_user.unwrap_or("?").to_owned(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn def(name: &str) -> PersonDef {
        PersonDef {
            name: name.into(),
            telegram: None,
            unix_user: None,
            language: None,
        }
    }

    fn error(defs: &[PersonDef]) -> String {
        Household::from_config(defs).unwrap_err().to_string()
    }

    #[test]
    fn no_people_is_the_one_implicit_person() {
        let home = Household::from_config(&[]).unwrap();
        assert!(!home.is_named());
        assert_eq!(home.first().as_str(), "owner");
        assert_eq!(
            home.at_terminal(None, Some("root")).unwrap().as_str(),
            "owner"
        );
        assert_eq!(home.by_telegram(42), None);
    }

    #[test]
    fn each_mistake_is_one_line_naming_its_key() {
        assert_eq!(
            error(&[def("Ana")]),
            "people[0].name: person name \"Ana\" is invalid: use 3 to 32 of a-z, 0-9 and '-'"
        );
        assert_eq!(
            error(&[def("ana"), def("ana")]),
            "people[1].name: 'ana' is named twice; each person once"
        );
        let mut bo = def("bo-2");
        bo.telegram = Some(7);
        let mut cy = def("cyd");
        cy.telegram = Some(7);
        assert_eq!(
            error(&[def("ana"), bo, cy]),
            "people[2].telegram: Telegram user 7 is already 'bo-2'; one person each"
        );
        let mut ana = def("ana");
        ana.unix_user = Some("ana".into());
        let mut bob = def("bob");
        bob.unix_user = Some("ana".into());
        assert_eq!(
            error(&[ana, bob]),
            "people[1].unix_user: unix user 'ana' is already 'ana'; one person each"
        );
        let mut fr = def("ana");
        fr.language = Some("fr".into());
        assert_eq!(
            error(&[fr]),
            "people[0].language: tau speaks en and tr, got \"fr\""
        );
    }

    #[test]
    fn the_terminal_is_the_unix_users_person_or_the_only_one() {
        let mut ana = def("ana");
        ana.unix_user = Some("ana".into());
        ana.telegram = Some(11);
        let home = Household::from_config(&[ana, def("bob")]).unwrap();
        assert_eq!(home.at_terminal(None, Some("ana")).unwrap().as_str(), "ana");
        assert_eq!(
            home.at_terminal(Some("bob"), Some("ana")).unwrap().as_str(),
            "bob"
        );
        assert_eq!(
            home.at_terminal(None, Some("root"))
                .unwrap_err()
                .to_string(),
            "tau.toml names several people and none has unix_user = \"root\"; say who you are with --person NAME"
        );
        assert_eq!(
            home.at_terminal(Some("cyd"), None).unwrap_err().to_string(),
            "no person is called 'cyd' in [[people]]; `tau people list` names them"
        );
        assert_eq!(home.by_telegram(11).map(PersonName::as_str), Some("ana"));
        assert_eq!(home.telegram_ids(), vec![11]);
        let alone = Household::from_config(&[def("bob")]).unwrap();
        assert_eq!(
            alone.at_terminal(None, Some("root")).unwrap().as_str(),
            "bob"
        );
    }
}
