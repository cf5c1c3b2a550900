//! [`PersonName`]: who a conversation, a grant and an answer belong to, as `[[people]]`
//! names them. With no `[[people]]` tau knows one person, [`PersonName::implicit`].

use std::fmt;

use serde::{Deserialize, Serialize};

/// A person's name: 3 to 32 of `a-z 0-9 -`, safe in a URL, a file name and a command line.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct PersonName(String);

/// A person's name that is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("person name {name:?} is invalid: use 3 to 32 of a-z, 0-9 and '-'")]
pub struct InvalidPersonName {
    pub name: String,
}

impl PersonName {
    /// The one person of a home without `[[people]]`.
    pub const IMPLICIT: &'static str = "owner";

    pub fn parse(text: &str) -> Result<Self, InvalidPersonName> {
        let valid = (3..=32).contains(&text.len())
            && text
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        if valid {
            Ok(Self(text.to_owned()))
        } else {
            Err(InvalidPersonName {
                name: text.to_owned(),
            })
        }
    }

    /// [`Self::IMPLICIT`], the person of a home that names nobody.
    pub fn implicit() -> Self {
        Self(Self::IMPLICIT.to_owned())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for PersonName {
    type Error = InvalidPersonName;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        Self::parse(&value)
    }
}

impl From<PersonName> for String {
    fn from(name: PersonName) -> Self {
        name.0
    }
}

impl fmt::Display for PersonName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_three_to_thirty_two_of_lowercase_digits_and_dashes() {
        for good in ["ana", "bo-2", "owner", &"a".repeat(32)] {
            assert_eq!(PersonName::parse(good).unwrap().as_str(), good);
        }
        for bad in [
            "",
            "al",
            "Ana",
            "ana ",
            "an_a",
            "ana.b",
            "änne",
            &"a".repeat(33),
        ] {
            assert!(PersonName::parse(bad).is_err(), "{bad:?}");
        }
        assert!(serde_json::from_str::<PersonName>("\"A\"").is_err());
        assert_eq!(PersonName::implicit().as_str(), "owner");
    }
}
