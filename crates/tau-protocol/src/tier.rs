//! Tiers: how much a tool call can change the world.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// 0 reads, 1 writes something digital, 2 acts on the physical world or runs code the agent
/// wrote. Only tier 2 asks the person.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Tier {
    Read = 0,
    Write = 1,
    Physical = 2,
}

/// A tier value that is not 0, 1 or 2.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("tier for tool '{tool}' must be 0, 1 or 2, got {got}")]
pub struct TierError {
    pub tool: String,
    pub got: String,
}

impl Tier {
    pub fn number(self) -> u8 {
        self as u8
    }

    pub fn from_number(tool: &str, number: i64) -> Result<Self, TierError> {
        match number {
            0 => Ok(Self::Read),
            1 => Ok(Self::Write),
            2 => Ok(Self::Physical),
            other => Err(TierError {
                tool: tool.to_owned(),
                got: other.to_string(),
            }),
        }
    }

    /// Parses a tier from config, a manifest or an annotation. Only the integers 0, 1 and 2
    /// are tiers: `true`, `1.0`, `"2"` and `null` are refused, naming the tool.
    pub fn from_json(tool: &str, value: &Value) -> Result<Self, TierError> {
        match value.as_i64() {
            Some(number) if value.is_i64() || value.is_u64() => Self::from_number(tool, number),
            _ => Err(TierError {
                tool: tool.to_owned(),
                got: value.to_string(),
            }),
        }
    }
}

impl fmt::Display for Tier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.number())
    }
}

impl Serialize for Tier {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u8(self.number())
    }
}

impl<'de> Deserialize<'de> for Tier {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Self::from_json("?", &value)
            .map_err(|e| serde::de::Error::custom(format!("must be 0, 1 or 2, got {}", e.got)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_the_integers_zero_to_two_are_tiers() {
        assert_eq!(Tier::from_json("t", &json!(0)), Ok(Tier::Read));
        assert_eq!(Tier::from_json("t", &json!(1)), Ok(Tier::Write));
        assert_eq!(Tier::from_json("t", &json!(2)), Ok(Tier::Physical));
        for (bad, shown) in [
            (json!(true), "true"),
            (json!(false), "false"),
            (json!(3), "3"),
            (json!(-1), "-1"),
            (json!(1.0), "1.0"),
            (json!("2"), "\"2\""),
            (json!(null), "null"),
            (json!(u64::MAX), "18446744073709551615"),
        ] {
            let error = Tier::from_json("lights", &bad).unwrap_err();
            assert_eq!(
                error.to_string(),
                format!("tier for tool 'lights' must be 0, 1 or 2, got {shown}")
            );
        }
    }

    #[test]
    fn tiers_serialize_as_numbers() {
        assert_eq!(serde_json::to_string(&Tier::Physical).unwrap(), "2");
        assert_eq!(serde_json::from_str::<Tier>("1").unwrap(), Tier::Write);
        assert!(serde_json::from_str::<Tier>("true").is_err());
    }
}
